//! Creation time: `objectid_timestamp`, `objectid_from_time`, the never-failing bounds for
//! hand-written ranges, and the exact bounds the planner replaces time conditions with (see
//! `crate::planner`).

use pgrx::prelude::*;

use crate::kernel::objectid::ObjectId;
use crate::kernel::time::{self, OutOfRange};

#[pg_extern(sql = false)]
fn objectid_timestamp(id: &ObjectId) -> TimestampWithTimeZone {
    TimestampWithTimeZone::try_from(time::pg_from_seconds(id.timestamp()))
        .expect("every 32-bit second is a valid timestamp")
}

#[pg_extern(sql = false)]
fn objectid_from_time(at: TimestampWithTimeZone) -> ObjectId {
    time::first_of_second(at.into()).unwrap_or_else(|e| out_of_range_error(at, e))
}

#[pg_extern(sql = false)]
fn objectid_lower_bound(at: TimestampWithTimeZone) -> ObjectId {
    time::lower_bound(at.into())
}

#[pg_extern(sql = false)]
fn objectid_upper_bound(at: TimestampWithTimeZone) -> ObjectId {
    time::upper_bound(at.into())
}

#[pg_extern(sql = false)]
fn objectid_upper_bound_before(at: TimestampWithTimeZone) -> ObjectId {
    time::upper_bound_before(at.into())
}

#[pg_extern(sql = false)]
fn objectid_first_at_or_after(at: TimestampWithTimeZone) -> Option<ObjectId> {
    time::first_at_or_after(at.into())
}

#[pg_extern(sql = false)]
fn objectid_first_after(at: TimestampWithTimeZone) -> Option<ObjectId> {
    time::first_after(at.into())
}

#[pg_extern(sql = false)]
fn objectid_last_at_or_before(at: TimestampWithTimeZone) -> Option<ObjectId> {
    time::last_at_or_before(at.into())
}

#[pg_extern(sql = false)]
fn objectid_last_before(at: TimestampWithTimeZone) -> Option<ObjectId> {
    time::last_before(at.into())
}

pub(crate) fn out_of_range_error(at: TimestampWithTimeZone, e: OutOfRange) -> ! {
    let shown = match e {
        OutOfRange::Infinity => "infinity".to_string(),
        OutOfRange::NegativeInfinity => "-infinity".to_string(),
        OutOfRange::BeforeEpoch | OutOfRange::After2106 => at.to_string(),
    };
    ereport!(
        ERROR,
        // 22008, datetime_field_overflow, which PostgreSQL raises for "timestamp out of range".
        PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
        format!("timestamp out of range for type objectid: \"{shown}\""),
        "An objectid carries times from 1970-01-01 00:00:00+00 to 2106-02-07 06:28:15+00."
    );
}
