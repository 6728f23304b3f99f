//! A count of the catalog invalidations this backend has processed, so that what a rekey batch
//! derives from the system catalogs (its statements, the problems that stop it, the foreign-key
//! checks its rewrite may leave out) is derived again only when a catalog may have changed, not
//! once per batch: on a 1,000-key batch that work cost about as much as the rewrite of 400 keys.
//!
//! PostgreSQL keeps its own caches of the catalogs (the relation cache, the catalog caches, the
//! plan cache) correct the same way: a change to a catalog row queues an invalidation that every
//! backend processes before it next relies on what it cached (at the start of each
//! transaction, when it takes a lock on a relation it did not hold, and in the changing
//! transaction itself at each command, or at its abort), and `inval.c` calls the callbacks
//! registered here as it does. A relation-cache invalidation is queued for any change to a
//! table's definition, including its triggers, policies, rules, constraints, indexes, privileges,
//! partitions and owner (relcache.c rebuilds those from it); the catalog caches counted below cover
//! what a derivation reads beyond the table itself: schemas (a rename changes what a qualified
//! name in a statement refers to), roles and their memberships, functions, types, operators,
//! operator classes and access methods. A reset of the whole queue (`InvalidateSystemCaches`)
//! calls every callback. Every invalidation counts, whatever it names: the count can only say
//! "maybe changed", which costs one derivation more, never one less.
//!
//! Not every catalog change queues one a callback sees: comments, dependencies, security labels
//! and per-role settings only invalidate catalog snapshots (`RelationInvalidatesSnapshotsOnly` in
//! syscache.c). What a batch reads of those is read for every batch, not kept: the mapping table's
//! comment, which says which table it maps, is checked by `rekey_state_of` each time.

use pgrx::pg_sys;

/// inval.h's registration functions and their callbacks' types, which pgrx binds from 14 on only
/// (its bindings for 13 do not include inval.h): declared here as inval.h declares them, the same
/// in 13 to 18.
#[cfg(feature = "pg13")]
mod inval {
    use pgrx::pg_sys::{Datum, Oid};
    use std::ffi::c_int;

    pub type SyscacheCallbackFunction = Option<unsafe extern "C-unwind" fn(Datum, c_int, u32)>;
    pub type RelcacheCallbackFunction = Option<unsafe extern "C-unwind" fn(Datum, Oid)>;

    unsafe extern "C-unwind" {
        pub fn CacheRegisterSyscacheCallback(
            cacheid: c_int,
            func: SyscacheCallbackFunction,
            arg: Datum,
        );
        pub fn CacheRegisterRelcacheCallback(func: RelcacheCallbackFunction, arg: Datum);
    }
}
#[cfg(not(feature = "pg13"))]
use pgrx::pg_sys as inval;

/// Backend-local; read and counted up only by this backend's own thread.
static mut EPOCH: u64 = 0;

/// The catalog caches whose invalidations a derivation depends on besides the relation cache's:
/// changes that no relation-cache invalidation announces. (Indexes, rules, statistics objects,
/// partition keys, triggers and policies of a table are announced with one on it.) Nine of the 64
/// slots PostgreSQL keeps for such callbacks (inval.c), of which it uses about 25 itself.
const CACHES: [pg_sys::SysCacheIdentifier::Type; 9] = [
    pg_sys::SysCacheIdentifier::NAMESPACEOID,
    pg_sys::SysCacheIdentifier::AUTHOID,
    // Both membership caches index the same rows: a change to one is sent to both.
    pg_sys::SysCacheIdentifier::AUTHMEMROLEMEM,
    pg_sys::SysCacheIdentifier::PROCOID,
    pg_sys::SysCacheIdentifier::TYPEOID,
    pg_sys::SysCacheIdentifier::OPEROID,
    pg_sys::SysCacheIdentifier::CLAOID,
    pg_sys::SysCacheIdentifier::AMOID,
    // A domain's constraints, which are no table's.
    pg_sys::SysCacheIdentifier::CONSTROID,
];

unsafe extern "C-unwind" fn relation_changed(_arg: pg_sys::Datum, _relid: pg_sys::Oid) {
    // SAFETY: backend-local; a callback must not fail, and this cannot.
    unsafe { EPOCH = EPOCH.wrapping_add(1) };
}

unsafe extern "C-unwind" fn catalog_changed(_arg: pg_sys::Datum, _cache: i32, _hash: u32) {
    // SAFETY: as relation_changed.
    unsafe { EPOCH = EPOCH.wrapping_add(1) };
}

/// Registers the callbacks, once per backend (from `_PG_init`).
pub(super) fn init() {
    // SAFETY: the documented registration, at library load; the callbacks stay valid as long as
    // the library, which PostgreSQL never unloads.
    // (Out of slots, registering ends the backend with FATAL, which unwinds nothing.)
    unsafe {
        pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| {
            inval::CacheRegisterRelcacheCallback(Some(relation_changed), pg_sys::Datum::from(0));
            for cache in CACHES {
                inval::CacheRegisterSyscacheCallback(
                    cache as i32,
                    Some(catalog_changed),
                    pg_sys::Datum::from(0),
                );
            }
        })
    }
}

/// An answer read from the catalogs, with what it was read for and when.
pub(super) struct Kept<K, V> {
    epoch: u64,
    user: pg_sys::Oid,
    context: std::ffi::c_int,
    key: K,
    value: V,
}

/// A backend's one kept answer of a kind.
pub(super) type Slot<K, V> = std::thread::LocalKey<std::cell::RefCell<Option<Kept<K, V>>>>;

/// `read()`'s answer for `key`: the one kept in `slot`, when it was read for the same key, user
/// and security context and no invalidation has been processed since; otherwise read now and kept.
/// The count is taken before reading, so an invalidation processed while reading makes the next
/// call read again; nothing older stays kept should the read fail. `read` must see every change
/// committed before it is called (a snapshot of its own), and its answer must depend on nothing
/// but the catalogs, `key`, the user and the security context.
pub(super) fn kept<K: PartialEq, V: Clone>(
    slot: &'static Slot<K, V>,
    key: K,
    read: impl FnOnce() -> V,
) -> V {
    // SAFETY: backend-local.
    let epoch = unsafe { EPOCH };
    let (mut user, mut context) = (pg_sys::InvalidOid, 0);
    // SAFETY: reads backend-local state.
    unsafe { pg_sys::GetUserIdAndSecContext(&mut user, &mut context) };
    let known = slot.with(|k| {
        k.borrow()
            .as_ref()
            .filter(|k| k.epoch == epoch && k.user == user && k.context == context && k.key == key)
            .map(|k| k.value.clone())
    });
    if let Some(value) = known {
        return value;
    }
    slot.with(|k| k.borrow_mut().take());
    let value = read();
    slot.with(|k| {
        *k.borrow_mut() = Some(Kept {
            epoch,
            user,
            context,
            key,
            value: value.clone(),
        })
    });
    value
}
