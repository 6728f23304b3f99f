//! `uuid_extract_timestamp()`, `uuid_extract_version()` and `uuidv7_from_time()`.

use pgrx::datum::Uuid;
use pgrx::prelude::*;

use crate::kernel::uuidv7;

/// v7 (milliseconds) and v1 (100 ns since 1582-10-15); NULL for other versions and variants.
#[pg_extern(sql = false)]
fn uuid_extract_timestamp(u: Uuid) -> Option<TimestampWithTimeZone> {
    uuidv7::timestamp_pg_micros(&u).and_then(|micros| TimestampWithTimeZone::try_from(micros).ok())
}

/// The version nibble; NULL for a UUID not of the RFC 9562 variant.
#[pg_extern(sql = false)]
fn uuid_extract_version(u: Uuid) -> Option<i16> {
    uuidv7::version(&u).map(i16::from)
}

/// The smallest v7 of the millisecond `at` falls in, for range bounds.
#[pg_extern(sql = false)]
fn uuidv7_from_time(at: TimestampWithTimeZone) -> Uuid {
    let (ms, _) =
        uuidv7::ms_from_pg(at.into(), 0).unwrap_or_else(|| super::timestamp_out_of_range());
    Uuid::from_bytes(uuidv7::v7_first_of_millisecond(ms))
}

/// The first and last possible v7 of the millisecond `at` falls in, never an error (times out of
/// range clamp): the planner's index bounds for `uuid_extract_timestamp(id) <op> t`.
#[pg_extern(sql = false)]
fn uuidv7_lower_bound(at: TimestampWithTimeZone) -> Uuid {
    Uuid::from_bytes(uuidv7::lower_bound(at.into()))
}

#[pg_extern(sql = false)]
fn uuidv7_upper_bound(at: TimestampWithTimeZone) -> Uuid {
    Uuid::from_bytes(uuidv7::upper_bound(at.into()))
}

#[pg_extern(sql = false)]
fn uuidv7_upper_bound_before(at: TimestampWithTimeZone) -> Uuid {
    Uuid::from_bytes(uuidv7::upper_bound_before(at.into()))
}
