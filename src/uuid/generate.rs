//! `uuidv7()`, `uuidv7(interval)`, `uuidv4()` and `uuidv7_at()`.

use std::cell::{Cell, RefCell};

use pgrx::datum::Uuid;
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::kernel::clock;
use crate::kernel::random::ProcessRng;
use crate::kernel::uuidv7::{self, AscendingClock};

extern "C-unwind" {
    // The server's timestamptz + interval, as a plain fmgr function for DirectFunctionCall
    // (pgrx's binding wraps it into a Rust function, which fmgr cannot call).
    fn timestamptz_pl_interval(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
}

thread_local! {
    // PostgreSQL's own is a static in the backend, so it is per process here too.
    static CLOCK: Cell<AscendingClock> = Cell::new(AscendingClock::default());
    static RNG: RefCell<ProcessRng> = RefCell::new(ProcessRng::default());
}

fn ascending_now_ns() -> i64 {
    CLOCK.with(|c| {
        let mut clock = c.get();
        let ns = clock.next(clock::unix_nanos());
        c.set(clock);
        ns
    })
}

fn random<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    // SAFETY: reading the process id PostgreSQL keeps for this process.
    let pid = unsafe { pg_sys::MyProcPid } as u32;
    RNG.with(|r| r.borrow_mut().fill(pid, &mut buf))
        .unwrap_or_else(|e| {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                format!("could not generate random values: {e}")
            );
        });
    buf
}

#[pg_extern(sql = false)]
fn uuidv7() -> Uuid {
    Uuid::from_bytes(uuidv7::v7(ascending_now_ns(), random()))
}

/// The clock reading shifted by `shift` with PostgreSQL's own timestamptz + interval (calendar
/// months and days in the session's time zone), keeping the reading's nanoseconds.
#[pg_extern(sql = false)]
fn uuidv7_interval(shift: Interval) -> Uuid {
    let ns = ascending_now_ns();
    // Before 17 these field values are a finite interval, and the sum below says what that
    // version's timestamptz + interval says of it.
    #[cfg(any(feature = "pg17", feature = "pg18", feature = "pg19"))]
    if is_infinite(&shift) {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
            "interval out of range for UUID version 7",
            "UUID version 7 does not support infinite intervals."
        );
    }
    let now = uuidv7::pg_micros_from_unix_ns(ns);
    // SAFETY: timestamptz_pl_interval takes a timestamptz and an interval Datum and returns a
    // timestamptz (by value), raising its own error if the sum leaves the timestamp range.
    let shifted = unsafe {
        pg_sys::DirectFunctionCall2Coll(
            Some(timestamptz_pl_interval),
            pg_sys::InvalidOid,
            pg_sys::Datum::from(now),
            shift.into_datum().expect("an interval is never NULL"),
        )
    }
    .value() as i64;
    let (ms, sub_ms) = uuidv7::ms_from_pg_shifted(shifted, ns.rem_euclid(1000))
        .unwrap_or_else(|| super::timestamp_out_of_range());
    Uuid::from_bytes(uuidv7::v7_parts(ms, sub_ms, random()))
}

/// PostgreSQL 17 added infinite intervals: all three fields at their extreme.
#[cfg(any(feature = "pg17", feature = "pg18", feature = "pg19"))]
fn is_infinite(i: &Interval) -> bool {
    (i.months() == i32::MAX && i.days() == i32::MAX && i.micros() == i64::MAX)
        || (i.months() == i32::MIN && i.days() == i32::MIN && i.micros() == i64::MIN)
}

#[pg_extern(sql = false)]
fn uuidv4() -> Uuid {
    Uuid::from_bytes(uuidv7::v4(random()))
}

/// A fresh random v7 carrying the given time (to the microsecond) instead of the clock, for
/// keys of rows made in the past.
#[pg_extern(sql = false)]
fn uuidv7_at(at: TimestampWithTimeZone) -> Uuid {
    let (ms, sub_ms) =
        uuidv7::ms_from_pg(at.into(), 0).unwrap_or_else(|| super::timestamp_out_of_range());
    Uuid::from_bytes(uuidv7::v7_parts(ms, sub_ms, random()))
}
