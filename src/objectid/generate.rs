//! `gen_objectid()`, `gen_objectid_subsecond()`, `gen_objectid_at()` and
//! `objectid_generator_mode()`.
//!
//! Server mode: one generator for the whole server, in shared memory, so that ids from every
//! session ascend together and inserts land at the right edge of btree indexes. It lives in the
//! main shared memory segment when the library is in `shared_preload_libraries` (any version),
//! else in the dynamic shared memory registry (PostgreSQL 17 and later).
//!
//! Backend mode, where neither is available: one generator per process, made on first use and
//! remade whenever the process id or the fork generation changes (see `crate::core::fork`).
//!
//! Uniqueness and order are the core generator's (`crate::core::generator`): by construction
//! within one generator; when it has no id left it refuses, here with SQLSTATE 2200H.

use core::ptr;
use std::cell::RefCell;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::core::clock;
use crate::core::generator::{Exhausted, Generator, PerProcess};
use crate::core::objectid::ObjectId;
use crate::core::time::{self, OutOfRange};

use super::time::out_of_range_error;

/// The generator's name in the main shared memory index and in the DSM registry. It names the
/// layout of `Generator`, whose size both reservations take from `size_of`: the registry outlives
/// a library upgrade without a restart, so a new layout takes a new name rather than meeting a
/// segment of the old size (an error) while older backends still use the old one.
const SHMEM_NAME: &core::ffi::CStr = c"pg_objectid generator v3";

/// The server-wide generator once this process has found it. Set in the postmaster when
/// preloaded (children inherit it with the mapping), or on first use from the DSM registry.
static mut SERVER: *const Generator = ptr::null();

thread_local! {
    static BACKEND: RefCell<PerProcess> = RefCell::new(PerProcess::default());
}

fn make_generator() -> Generator {
    Generator::from_os_random().unwrap_or_else(|e| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            format!("could not obtain random bytes for the objectid generator: {e}")
        );
    })
}

/// The server-wide generator, if this server offers one.
fn server_generator() -> Option<&'static Generator> {
    // SAFETY: backends are single-threaded; SERVER is either null or points at an initialized
    // Generator in shared memory that stays mapped for the life of the process.
    unsafe {
        #[cfg(any(feature = "pg17", feature = "pg18"))]
        if SERVER.is_null() {
            SERVER = attach_dsm_registry();
        }
        SERVER.as_ref()
    }
}

fn with_generator<R>(f: impl FnOnce(&Generator) -> R) -> R {
    if let Some(g) = server_generator() {
        return f(g);
    }
    // SAFETY: reading the process id PostgreSQL keeps for this process.
    let pid = unsafe { pg_sys::MyProcPid } as u32;
    BACKEND.with(|slot| {
        let mut slot = slot.borrow_mut();
        let g = slot
            .get(pid, || Ok::<_, core::convert::Infallible>(make_generator()))
            .unwrap_or_else(|never| match never {});
        f(g)
    })
}

#[pg_extern(sql = false)]
fn gen_objectid() -> ObjectId {
    with_generator(next_id)
}

/// Ids for tables written by several servers at once: seconds, then the fraction of the second,
/// then the generator's random value (`crate::core::generator`, `next_subsecond`).
#[pg_extern(sql = false)]
fn gen_objectid_subsecond() -> ObjectId {
    let (seconds, nanos) = clock::unix_seconds_and_nanos();
    with_generator(|g| next_id_subsecond(g, seconds, nanos))
}

#[pg_extern(sql = false)]
fn gen_objectid_at(at: TimestampWithTimeZone) -> ObjectId {
    let seconds =
        time::seconds_from_pg(at.into()).unwrap_or_else(|e: OutOfRange| out_of_range_error(at, e));
    with_generator(|g| next_id_at(g, seconds))
}

/// `gen_objectid()` on a given generator: the next id for the clock, or the limit's error.
pub(crate) fn next_id(g: &Generator) -> ObjectId {
    g.next(clock::unix_seconds())
        .unwrap_or_else(|e| exhausted_error(e))
}

/// `gen_objectid_subsecond()` on a given generator and clock reading.
pub(crate) fn next_id_subsecond(g: &Generator, seconds: u32, nanos: u32) -> ObjectId {
    g.next_subsecond(seconds, nanos)
        .unwrap_or_else(|e| exhausted_error(e))
}

/// `gen_objectid_at()` on a given generator, for a second already checked.
pub(crate) fn next_id_at(g: &Generator, seconds: u32) -> ObjectId {
    g.next_at(seconds).unwrap_or_else(|e| exhausted_error(e))
}

/// A generator that has no id left refuses rather than wrap. SQLSTATE 2200H,
/// sequence_generator_limit_exceeded, which PostgreSQL raises when `nextval()` passes a
/// sequence's limit without CYCLE: the same situation (a generator of unique values has used
/// them all), and not 22008, which would blame a datetime the caller passed in (gen_objectid()
/// takes none, and gen_objectid_at()'s argument is in range).
fn exhausted_error(e: Exhausted) -> ! {
    let (message, detail) = match e {
        Exhausted::LastSecond => (
            "objectid generator reached its limit",
            "Its ids have used every counter value up to second 2106-02-07 06:28:15+00, the last \
             an objectid can carry; the generator never wraps.",
        ),
        Exhausted::LastTick => (
            "gen_objectid_subsecond() reached the limit of its generator",
            "Its ids have used every tick up to the last one of second 2106-02-07 06:28:15+00, \
             the last an objectid can carry; the generator never wraps.",
        ),
        Exhausted::Backfill => (
            "gen_objectid_at() reached the limit of its generator",
            "The generator's backfill counter has used every value; it never wraps.",
        ),
    };
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
        message,
        detail
    );
}

#[pg_extern(sql = false)]
fn objectid_generator_mode() -> &'static str {
    if server_generator().is_some() {
        "server"
    } else {
        "backend"
    }
}

#[cfg(any(feature = "pg17", feature = "pg18"))]
unsafe fn attach_dsm_registry() -> *const Generator {
    #[pg_guard]
    unsafe extern "C-unwind" fn init(ptr: *mut core::ffi::c_void) {
        unsafe { ptr.cast::<Generator>().write(make_generator()) };
    }
    let mut found = false;
    // SAFETY: the registry creates (once, under its lock, calling `init`) or finds the segment
    // and keeps it mapped in this process from now on.
    unsafe {
        pg_sys::GetNamedDSMSegment(
            SHMEM_NAME.as_ptr(),
            core::mem::size_of::<Generator>(),
            Some(init),
            &mut found,
        )
        .cast::<Generator>()
    }
}

static mut PREV_SHMEM_STARTUP_HOOK: pg_sys::shmem_startup_hook_type = None;
#[cfg(not(any(feature = "pg13", feature = "pg14")))]
static mut PREV_SHMEM_REQUEST_HOOK: pg_sys::shmem_request_hook_type = None;

/// Called from `_PG_init`: when loaded through `shared_preload_libraries`, reserve and set up
/// the generator in the main shared memory segment.
pub(crate) fn init() {
    // SAFETY: _PG_init runs single-threaded in the postmaster; chaining hooks is how PostgreSQL
    // expects libraries to install them.
    unsafe {
        if !pg_sys::process_shared_preload_libraries_in_progress {
            return;
        }
        #[cfg(any(feature = "pg13", feature = "pg14"))]
        pg_sys::RequestAddinShmemSpace(core::mem::size_of::<Generator>());
        #[cfg(not(any(feature = "pg13", feature = "pg14")))]
        {
            PREV_SHMEM_REQUEST_HOOK = pg_sys::shmem_request_hook;
            pg_sys::shmem_request_hook = Some(shmem_request);
        }
        PREV_SHMEM_STARTUP_HOOK = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(shmem_startup);
    }
}

#[cfg(not(any(feature = "pg13", feature = "pg14")))]
#[pg_guard]
unsafe extern "C-unwind" fn shmem_request() {
    unsafe {
        if let Some(prev) = PREV_SHMEM_REQUEST_HOOK {
            pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| prev());
        }
        pg_sys::RequestAddinShmemSpace(core::mem::size_of::<Generator>());
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_startup() {
    unsafe {
        if let Some(prev) = PREV_SHMEM_STARTUP_HOOK {
            pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| prev());
        }
        // AddinShmemInitLock, which C reaches through a macro.
        let lock = &raw mut (*pg_sys::MainLWLockArray.add(21)).lock;
        pg_sys::LWLockAcquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let mut found = false;
        let ptr = pg_sys::ShmemInitStruct(
            SHMEM_NAME.as_ptr(),
            core::mem::size_of::<Generator>(),
            &mut found,
        )
        .cast::<Generator>();
        if !found {
            ptr.write(make_generator());
        }
        pg_sys::LWLockRelease(lock);
        SERVER = ptr;
    }
}
