//! `gen_objectid()`, `gen_objectid_subsecond()`, `gen_objectid_at()` and
//! `objectid_generator_mode()`.
//!
//! Server mode: one generator for the whole server, in shared memory, so that ids from every
//! session ascend together and inserts land at the right edge of btree indexes. It lives in the
//! main shared memory segment when the library is in `shared_preload_libraries` (any version),
//! else in the dynamic shared memory registry (PostgreSQL 17 and later).
//!
//! Backend mode, where neither is available: one generator per process, made on first use and
//! remade whenever the process id or the fork generation changes (see `crate::kernel::fork`).
//!
//! Uniqueness and order are the core generator's (`crate::kernel::generator`): by construction
//! within one generator; when it has no id left it refuses, here with SQLSTATE 2200H.

use core::ptr;
use std::cell::RefCell;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::kernel::clock;
use crate::kernel::generator::{Exhausted, Generator, PerProcess};
use crate::kernel::objectid::ObjectId;
use crate::kernel::time::{self, OutOfRange};

use super::time::out_of_range_error;

/// Every name the generator's segment has had, with the `Generator::LAYOUT` it named; the last is
/// the current one. The name is the segment's key in the main shared memory index and in the DSM
/// registry, which outlives a library upgrade without a restart: a new layout must take a new
/// name rather than meet a segment of the old layout while older backends still use it. The build
/// fails below until a changed `Generator` has its own entry here. Entries are history: append,
/// never edit.
const SHMEM_NAMES: &[(&[u8], &[usize])] = &[
    (b"pg_objectid generator v2\0", &[24, 8, 0, 8, 16]),
    (b"pg_objectid generator v3\0", &[32, 8, 0, 8, 16, 24]),
];

const SHMEM_NAME: &core::ffi::CStr = {
    let (name, layout) = SHMEM_NAMES[SHMEM_NAMES.len() - 1];
    assert!(
        same(layout, Generator::LAYOUT),
        "Generator's layout changed: append a new name and its layout to SHMEM_NAMES"
    );
    let mut i = 0;
    while i + 1 < SHMEM_NAMES.len() {
        assert!(
            !same_bytes(SHMEM_NAMES[i].0, name),
            "a new layout needs a name SHMEM_NAMES has not used"
        );
        i += 1;
    }
    match core::ffi::CStr::from_bytes_with_nul(name) {
        Ok(name) => name,
        Err(_) => panic!("a name in SHMEM_NAMES lacks its final NUL or has one inside"),
    }
};

const fn same(a: &[usize], b: &[usize]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

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
        #[cfg(any(feature = "pg17", feature = "pg18", feature = "pg19"))]
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
/// then the generator's random value (`crate::kernel::generator`, `next_subsecond`).
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

#[cfg(any(feature = "pg17", feature = "pg18", feature = "pg19"))]
unsafe fn attach_dsm_registry() -> *const Generator {
    let mut found = false;
    // SAFETY: the registry creates (once, under its lock, calling `init`) or finds the segment
    // and keeps it mapped in this process from now on.
    unsafe {
        #[cfg(any(feature = "pg17", feature = "pg18"))]
        let segment = {
            #[pg_guard]
            unsafe extern "C-unwind" fn init(ptr: *mut core::ffi::c_void) {
                unsafe { ptr.cast::<Generator>().write(make_generator()) };
            }
            pg_sys::GetNamedDSMSegment(
                SHMEM_NAME.as_ptr(),
                core::mem::size_of::<Generator>(),
                Some(init),
                &mut found,
            )
        };
        // 19 passes the callback an argument of the caller's (none here).
        #[cfg(feature = "pg19")]
        let segment = {
            #[pg_guard]
            unsafe extern "C-unwind" fn init(
                ptr: *mut core::ffi::c_void,
                _arg: *mut core::ffi::c_void,
            ) {
                unsafe { ptr.cast::<Generator>().write(make_generator()) };
            }
            pg_sys::GetNamedDSMSegment(
                SHMEM_NAME.as_ptr(),
                core::mem::size_of::<Generator>(),
                Some(init),
                &mut found,
                core::ptr::null_mut(),
            )
        };
        segment.cast::<Generator>()
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
        // AddinShmemInitLock, which C reaches through a macro over the main LWLock array: number
        // 21 in lwlocknames.txt on every version 13-18, as pgrx's own PgAtomic and PgLwLock take it.
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
