//! What a table owner's code could leave in the caller's session that outlives PostgreSQL's
//! security-restricted operation (objects in the temporary schema, advisory locks, cursors,
//! large-object descriptors), read before and after each operation of as_owner.rs, and the
//! cursors and large objects that must not be open while the owner's code runs.

use std::cell::OnceCell;
use std::ffi::{CStr, CString};
use std::mem::ManuallyDrop;

use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;

/// What SessionState reads with SQL, in one statement: the session's temporary schema (0 when it
/// has none yet) and which objects are in it, by their dependencies on it (every object in a
/// schema records one), as a digest of their identities: not their count, which the owner's code
/// could keep while it drops one of the caller's (a temporary view over a function of its own,
/// by DROP ... CASCADE of that function) and creates one of its own (a domain named `uuid`); and
/// the names of the session's open cursors, as the bytes of the
/// database's encoding (in hex: pgrx reads text as UTF-8, which a name in another encoding is
/// not).
const SESSION_QUERY: &str = "SELECT pg_catalog.pg_my_temp_schema() AS nsp,
        (SELECT pg_catalog.md5(coalesce(pg_catalog.string_agg(
                    pg_catalog.concat_ws(' ', d.classid, d.objid, d.objsubid, d.deptype),
                    ',' ORDER BY d.classid, d.objid, d.objsubid, d.deptype), ''))
           FROM pg_catalog.pg_depend d
          WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass
            AND d.refobjid OPERATOR(pg_catalog.=) pg_catalog.pg_my_temp_schema()) AS n,
        (SELECT coalesce(pg_catalog.array_agg(pg_catalog.encode(pg_catalog.convert_to(c.name,
                                                                pg_catalog.getdatabaseencoding()), 'hex')
                                              ORDER BY c.name), '{}')
           FROM pg_catalog.pg_cursors c) AS cursors";

thread_local! {
    /// SESSION_QUERY's plan, kept for the session (SPI_keepplan) rather than parsed and planned
    /// twice for every operation: the plan cache revalidates it when a catalog it read changes.
    /// Never freed (no SPI_freeplan from a thread-local destructor while the backend exits), as
    /// PL/pgSQL keeps its statements' plans.
    static SESSION_PLAN: OnceCell<ManuallyDrop<OwnedPreparedStatement>> = const { OnceCell::new() };
}

/// SESSION_QUERY's answer: the temporary schema and the digest of its objects, and the cursors'
/// names.
fn temporary_objects_and_cursors() -> ((pg_sys::Oid, String), Vec<Vec<u8>>) {
    let (temporary, cursors) = SESSION_PLAN
        .with(|plan| {
            Spi::connect(|client| {
                let plan = match plan.get() {
                    Some(plan) => plan,
                    None => {
                        let kept = ManuallyDrop::new(client.prepare(SESSION_QUERY, &[])?.keep());
                        let _ = plan.set(kept);
                        plan.get().expect("just set")
                    }
                };
                let row = client.select(&**plan, Some(1), &[])?.first();
                Ok::<_, pgrx::spi::Error>((
                    (
                        row.get::<pg_sys::Oid>(1)?.unwrap_or(pg_sys::InvalidOid),
                        row.get::<String>(2)?.unwrap_or_default(),
                    ),
                    row.get::<Vec<String>>(3)?.unwrap_or_default(),
                ))
            })
        })
        .unwrap_or_else(|e| error!("cannot read the temporary schema and the cursors: {e}"));
    let cursors = cursors
        .into_iter()
        .map(|name| {
            hex::decode(name).unwrap_or_else(|e| error!("cannot read a cursor's name: {e}"))
        })
        .collect();
    (temporary, cursors)
}

/// One mode in which the session holds an advisory lock: the lock's tag (database, then the key
/// as pg_locks shows it: classid, objid, objsubid), the mode, and how many times the session holds
/// it at session level (the count pg_locks does not show: a second hold of a lock the session
/// already holds, or a session-level hold swapped for a transaction-level one, leaves pg_locks as
/// it was).
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy, Debug)]
struct AdvisoryHold {
    tag: (u32, u32, u32, u16),
    mode: pg_sys::LOCKMODE,
    session: u64,
}

impl AdvisoryHold {
    fn locktag(&self) -> pg_sys::LOCKTAG {
        // SET_LOCKTAG_ADVISORY in lock.h.
        pg_sys::LOCKTAG {
            locktag_field1: self.tag.0,
            locktag_field2: self.tag.1,
            locktag_field3: self.tag.2,
            locktag_field4: self.tag.3,
            locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
            locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
        }
    }
}

/// Runs `f` with no message below ERROR sent to the client or the log: LockRelease warns ("you
/// don't own a lock") when it finds no hold of the kind asked for, which is how the holds are
/// counted here. errstart reads these two variables to decide; they are put back on any way out.
fn quietly<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(std::ffi::c_int, std::ffi::c_int);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: backend-local variables, put back as they were.
            unsafe {
                *log_min_messages() = self.0;
                pg_sys::client_min_messages = self.1;
            }
        }
    }
    // SAFETY: backend-local variables; nothing reads them as settings in between.
    let _restore = unsafe {
        let restore = Restore(*log_min_messages(), pg_sys::client_min_messages);
        *log_min_messages() = pg_sys::PGERROR as std::ffi::c_int;
        pg_sys::client_min_messages = pg_sys::PGERROR as std::ffi::c_int;
        restore
    };
    f()
}

/// The `log_min_messages` errstart compares with: one variable up to 18; from 19, which sets it
/// per process type, this process type's entry (elog.c reads `log_min_messages[MyBackendType]`).
unsafe fn log_min_messages() -> *mut std::ffi::c_int {
    #[cfg(not(feature = "pg19"))]
    {
        &raw mut pg_sys::log_min_messages
    }
    #[cfg(feature = "pg19")]
    // SAFETY: an array of BACKEND_NUM_TYPES entries, indexed by the process's own type.
    unsafe {
        (&raw mut pg_sys::log_min_messages)
            .cast::<std::ffi::c_int>()
            .add(pg_sys::MyBackendType as usize)
    }
}

/// How many times the session holds the lock `tag` in `mode` at session level, found by releasing
/// those holds one by one and taking them again. While it counts, a transaction-level hold of its
/// own keeps the lock this session's, so that no other session can take it in between and every
/// release and retake only changes a count in this backend's own lock table.
unsafe fn session_holds(tag: &pg_sys::LOCKTAG, mode: pg_sys::LOCKMODE) -> u64 {
    // SAFETY: the caller's tag is one this session holds in `mode`; each call below changes this
    // backend's count of its holds only, as pg_advisory_lock and pg_advisory_unlock do.
    unsafe {
        if pg_sys::LockAcquire(tag, mode, false, true)
            == pg_sys::LockAcquireResult::LOCKACQUIRE_NOT_AVAIL
        {
            error!("cannot count the holds of an advisory lock of this session");
        }
        let mut n: u64 = 0;
        quietly(|| {
            while pg_sys::LockRelease(tag, mode, true) {
                n += 1;
            }
        });
        for _ in 0..n {
            pg_sys::LockAcquire(tag, mode, true, true);
        }
        pg_sys::LockRelease(tag, mode, false);
        n
    }
}

/// The modes in which this session holds advisory locks, read from the lock manager as pg_locks
/// reads it (GetLockStatusData), each with its count of session-level holds, in order.
fn advisory_locks() -> Vec<AdvisoryHold> {
    let mut held = Vec::new();
    // SAFETY: GetLockStatusData copies the lock table into memory of the current context, read
    // here and freed at once.
    unsafe {
        let data = pg_sys::GetLockStatusData();
        for i in 0..(*data).nelements as usize {
            let lock = &*(*data).locks.add(i);
            if lock.pid != pg_sys::MyProcPid
                || lock.locktag.locktag_type != pg_sys::LockTagType::LOCKTAG_ADVISORY as u8
            {
                continue;
            }
            let t = &lock.locktag;
            for mode in 1..=pg_sys::MaxLockMode as pg_sys::LOCKMODE {
                if lock.holdMask & (1 << mode) != 0 {
                    held.push(AdvisoryHold {
                        tag: (
                            t.locktag_field1,
                            t.locktag_field2,
                            t.locktag_field3,
                            t.locktag_field4,
                        ),
                        mode,
                        session: 0,
                    });
                }
            }
        }
        if !(*data).locks.is_null() {
            pg_sys::pfree((*data).locks.cast());
        }
        pg_sys::pfree(data.cast());
        for hold in held.iter_mut() {
            hold.session = session_holds(&hold.locktag(), hold.mode);
        }
    }
    held.sort();
    held
}

/// Whether the current resource owner (the guarded operation's subtransaction, into which the
/// subtransactions of the owner's code pass their locks as they end) holds any of `locks` at
/// transaction level: a hold the owner's code took of a lock the session already held shows in no
/// other way. Counted by releasing them and taking them again, under a session-level hold of its
/// own, so that the lock never leaves this session in between; the refusal's rollback releases
/// them.
fn taken_in_operation(locks: &[AdvisoryHold]) -> bool {
    let mut taken = false;
    for lock in locks {
        let tag = lock.locktag();
        // SAFETY: changes this backend's counts of a lock it holds, and puts them back; LockRelease
        // warns, quietened, and returns false when this resource owner has no hold left.
        unsafe {
            pg_sys::LockAcquire(&tag, lock.mode, true, true);
            let mut n: u64 = 0;
            quietly(|| {
                while pg_sys::LockRelease(&tag, lock.mode, false) {
                    n += 1;
                }
            });
            for _ in 0..n {
                pg_sys::LockAcquire(&tag, lock.mode, false, true);
            }
            pg_sys::LockRelease(&tag, lock.mode, true);
            taken |= n > 0;
        }
    }
    taken
}

/// Whether this transaction has opened a large object. be-fsstubs.c keeps the descriptors in a
/// static array with no accessor, allocated in a memory context named "Filesystem" that it creates
/// under TopMemoryContext for the first one (newLOfd) and
/// deletes only at the transaction's end (AtEOXact_LargeObject): its presence means "may have a
/// descriptor open", which errs on the side of refusing.
fn large_objects_opened() -> bool {
    // SAFETY: walks the children of TopMemoryContext, which exists in every backend, reading each
    // one's name (a C string that lives as long as the context) at once.
    unsafe {
        let mut child = (*pg_sys::TopMemoryContext).firstchild;
        while !child.is_null() {
            if !(*child).name.is_null() && CStr::from_ptr((*child).name) == c"Filesystem" {
                return true;
            }
            child = (*child).nextchild;
        }
    }
    false
}

/// Whether dblink is loaded in this backend. Its connections, named and the unnamed one, serve
/// whoever calls `dblink_exec` on them with the rights they were opened with (its functions are
/// PUBLIC), so the owner's code could run statements as the caller through one; dblink keeps
/// them in its own statics, which nothing outside it can list (dblink_get_connections leaves the
/// unnamed one out). PostgreSQL loads libraries with RTLD_GLOBAL (dfmgr.c), so a symbol of
/// dblink's is found exactly when it is loaded.
fn dblink_loaded() -> bool {
    // SAFETY: a lookup in the process's global symbol table; the pointer is only compared.
    unsafe { !libc::dlsym(libc::RTLD_DEFAULT, c"dblink_connect".as_ptr()).is_null() }
}

/// What the owner's code could leave in the caller's session that outlives PostgreSQL's
/// security-restricted operation, compared before and after each one here; any change is an error
/// (42501), which rolls it back with the rest:
/// - objects in the caller's temporary schema: PostgreSQL refuses temporary tables there
///   (DefineRelation) but not every other kind, and that schema comes first when the session later
///   looks up a type name (a domain named `uuid`, with a CHECK of the owner's, would run as the
///   caller);
/// - the session's advisory locks, with the number of session-level holds of each, and any
///   transaction-level hold taken inside: a session-level one outlives the transaction, and one
///   taken again or swapped for a transaction-level one changes what the caller's own unlocks do;
///   after the error, guarded puts them back as they were (restore_advisory_locks);
/// - the session's cursors: one declared inside runs its query as whoever fetches from it later.
/// - large-object descriptors: whoever holds one may read and write through it, whatever their
///   rights (PostgreSQL checks them when it is opened), until the transaction ends.
#[derive(PartialEq)]
pub(super) struct SessionState {
    temporary: (pg_sys::Oid, String),
    locks: Vec<AdvisoryHold>,
    cursors: Vec<Vec<u8>>,
    large_objects: bool,
}

impl SessionState {
    pub(super) fn now() -> Self {
        let (temporary, cursors) = temporary_objects_and_cursors();
        SessionState {
            temporary,
            locks: advisory_locks(),
            cursors,
            large_objects: large_objects_opened(),
        }
    }

    /// Takes a transaction-level hold of each advisory lock `self` found, in the current resource
    /// owner (the caller's, before guarded's subtransaction begins): while the owner's code runs,
    /// its `pg_advisory_unlock` or `pg_advisory_unlock_all` of the caller's holds then only lowers
    /// this backend's counts, and the lock itself stays this session's, so that no other session
    /// can take it before the refusal puts the holds back. Neither session_holds nor
    /// taken_in_operation counts these holds (they belong to neither the session nor the
    /// subtransaction).
    pub(super) fn pin_advisory_locks(&self) {
        for lock in &self.locks {
            // SAFETY: a lock this session holds: taken again at once, without waiting.
            unsafe { pg_sys::LockAcquire(&lock.locktag(), lock.mode, false, true) };
        }
    }

    /// Releases the holds pin_advisory_locks took, in the same resource owner.
    pub(super) fn unpin_advisory_locks(&self) {
        for lock in &self.locks {
            // SAFETY: releases one transaction-level hold this resource owner took.
            unsafe { pg_sys::LockRelease(&lock.locktag(), lock.mode, false) };
        }
    }

    /// Puts the session's advisory locks back as `self` found them, after an error: the
    /// subtransaction's abort undid the temporary objects, the cursors and the transaction-level
    /// holds taken inside, but session-level holds outlive it. Holds taken are released; holds
    /// released are taken again, which never waits: pin_advisory_locks kept each lock this
    /// session's.
    pub(super) fn restore_advisory_locks(&self) {
        let now = advisory_locks();
        let count = |locks: &[AdvisoryHold], of: &AdvisoryHold| {
            locks
                .iter()
                .find(|l| l.tag == of.tag && l.mode == of.mode)
                .map_or(0, |l| l.session)
        };
        for hold in &now {
            let tag = hold.locktag();
            for _ in count(&self.locks, hold)..hold.session {
                // SAFETY: releases one of this session's own session-level holds.
                unsafe { pg_sys::LockRelease(&tag, hold.mode, true) };
            }
        }
        for hold in &self.locks {
            let tag = hold.locktag();
            for _ in count(&now, hold)..hold.session {
                // SAFETY: takes a session-level hold without waiting, as pg_try_advisory_lock.
                let got = unsafe { pg_sys::LockAcquire(&tag, hold.mode, true, true) };
                if got == pg_sys::LockAcquireResult::LOCKACQUIRE_NOT_AVAIL {
                    // Never, with the pin; if it were, not an error rekey_run would retry.
                    ereport!(
                        ERROR,
                        PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                        "a table owner's code released an advisory lock of your session that could not be taken back"
                    );
                }
            }
        }
    }

    /// Refuses, naming `whose` code ran, when the session is no longer as `self` found it. Called
    /// inside guarded's subtransaction, whose abort (and restore_advisory_locks) then undoes it.
    pub(super) fn must_be_unchanged(&self, whose: &str) {
        let now = SessionState::now();
        let taken = taken_in_operation(&now.locks);
        if now == *self && !taken {
            return;
        }
        let what = if taken || now.locks != self.locks {
            "took or released advisory locks of your session"
        } else if now.cursors != self.cursors {
            "opened or closed cursors of your session"
        } else if now.large_objects != self.large_objects {
            "opened large objects in your transaction"
        } else {
            "created or dropped objects in your session's temporary schema"
        };
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("the code of {whose} {what}"),
            "Advisory locks, cursors, large-object descriptors and temporary objects outlive the \
             operation that ran the code; the rekey toolkit runs none of a table owner's code that \
             leaves any."
        );
    }

    /// Refuses while dblink is loaded in the session (dblink_loaded): the owner's code could run
    /// statements through the caller's connections. The same holds for PostgreSQL's own
    /// maintenance commands (a materialized view's query can call dblink_exec while the caller
    /// refreshes it), which is why it is refused here rather than left to the caller.
    pub(super) fn no_dblink() {
        if dblink_loaded() {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                "cannot run a table owner's code in a session that has loaded dblink",
                "The owner's code could run statements through your dblink connections. Run the rekey toolkit in a new session that does not use dblink."
            );
        }
    }

    /// Refuses while the transaction has opened a large object: the owner's code could read or
    /// write it through the descriptor (`loread(0, ...)`) without any right on it, or close it
    /// and open one of its own under the same number for the caller to write to next.
    pub(super) fn no_large_objects(&self) {
        if self.large_objects {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                "cannot run a table owner's code in a transaction that has opened a large object",
                "The owner's code could read or write it through its descriptor. Run the rekey toolkit in a transaction of its own."
            );
        }
    }

    /// Refuses while the session had an open cursor that is not running when `self` was read: the
    /// owner's code could FETCH from it (reading rows its query read with the caller's rights) or
    /// move, close and reopen it under the same name with a query of its own that the caller
    /// would then run. The cursors that are running (the statement that called the toolkit)
    /// refuse FETCH and CLOSE themselves. The toolkit's own loops never hold a cursor while they
    /// call the owner's code.
    pub(super) fn no_idle_cursors(&self) {
        for name in &self.cursors {
            let Ok(c_name) = CString::new(name.clone()) else {
                continue;
            };
            // SAFETY: looks a portal up by name in the session's portal table; the pointer is only
            // read, at once.
            let idle = unsafe {
                let portal = pg_sys::GetPortalByName(c_name.as_ptr());
                !portal.is_null() && (*portal).status != pg_sys::PortalStatus::PORTAL_ACTIVE
            };
            if idle {
                ereport!(
                    ERROR,
                    PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                    format!(
                        "cannot run a table owner's code while cursor \"{}\" is open",
                        super::as_owner::shown(name)
                    ),
                    "The owner's code could read or replace it. Close your cursors (or leave the loop over one) first."
                );
            }
        }
    }
}
