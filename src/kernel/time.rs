//! Between ObjectId's Unix seconds and PostgreSQL's timestamps (microseconds since
//! 2000-01-01 00:00:00 UTC, with i64::MIN and i64::MAX standing for -infinity and infinity).

use crate::kernel::objectid::ObjectId;

const MICROS_PER_SECOND: i64 = 1_000_000;
/// Seconds from 1970-01-01 to 2000-01-01.
const PG_EPOCH_UNIX_SECONDS: i64 = 946_684_800;

/// A time an ObjectId cannot carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutOfRange {
    BeforeEpoch,
    After2106,
    NegativeInfinity,
    Infinity,
}

/// The whole Unix second a PostgreSQL timestamp falls in (fractions are dropped, towards the
/// past), if an ObjectId can carry it: 1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC.
pub fn seconds_from_pg(micros: i64) -> Result<u32, OutOfRange> {
    match micros {
        i64::MIN => return Err(OutOfRange::NegativeInfinity),
        i64::MAX => return Err(OutOfRange::Infinity),
        _ => {}
    }
    let unix = micros.div_euclid(MICROS_PER_SECOND) + PG_EPOCH_UNIX_SECONDS;
    if unix < 0 {
        Err(OutOfRange::BeforeEpoch)
    } else {
        u32::try_from(unix).map_err(|_| OutOfRange::After2106)
    }
}

/// The PostgreSQL timestamp of a Unix second.
pub fn pg_from_seconds(seconds: u32) -> i64 {
    (i64::from(seconds) - PG_EPOCH_UNIX_SECONDS) * MICROS_PER_SECOND
}

/// The smallest ObjectId of the second `micros` falls in: the other 8 bytes zero.
pub fn first_of_second(micros: i64) -> Result<ObjectId, OutOfRange> {
    seconds_from_pg(micros).map(|s| ObjectId::from_parts(s, [0; 5], 0))
}

/// Index bounds for `objectid_timestamp(id) <op> t`, which never fail. Every id whose
/// timestamp is at or after `t` (or after it) is at least `lower_bound(t)`; every id whose
/// timestamp is at or before `t` (or before it) is at most `upper_bound(t)`. Times outside the
/// ObjectId range clamp to the smallest or largest id, which keeps both statements true.
pub fn lower_bound(micros: i64) -> ObjectId {
    match seconds_from_pg(micros) {
        Ok(s) => ObjectId::from_parts(s, [0; 5], 0),
        Err(OutOfRange::BeforeEpoch | OutOfRange::NegativeInfinity) => ObjectId::MIN,
        Err(OutOfRange::After2106 | OutOfRange::Infinity) => ObjectId::MAX,
    }
}

pub fn upper_bound(micros: i64) -> ObjectId {
    match seconds_from_pg(micros) {
        Ok(s) => ObjectId::from_parts(s, [0xff; 5], 0x00ff_ffff),
        Err(OutOfRange::BeforeEpoch | OutOfRange::NegativeInfinity) => ObjectId::MIN,
        Err(OutOfRange::After2106 | OutOfRange::Infinity) => ObjectId::MAX,
    }
}

/// Every id whose timestamp is before `t` is at most `upper_bound_before(t)`: the last id of the
/// second one microsecond earlier. For a `t` on a whole second that is the previous second, so a
/// `< t` condition does not scan the ids of second `t` itself, as `upper_bound(t)` would.
pub fn upper_bound_before(micros: i64) -> ObjectId {
    upper_bound(micros.saturating_sub(1))
}

/// Exact bounds: for every id and every time `t`,
/// `objectid_timestamp(id) >= t` ⟺ `id >= first_at_or_after(t)`,
/// `objectid_timestamp(id) > t` ⟺ `id >= first_after(t)`,
/// `objectid_timestamp(id) <= t` ⟺ `id <= last_at_or_before(t)`,
/// `objectid_timestamp(id) < t` ⟺ `id <= last_before(t)`,
/// where `None` stands for "no id at all" (the condition is false for every id). The planner
/// replaces a time condition by the comparison on the right, so these must be exact, not merely
/// bounding like `lower_bound`: a clamped bound would let ids of 1970-01-01 00:00:00 or of
/// 2106-02-07 06:28:15 through a condition they fail.
pub fn first_at_or_after(micros: i64) -> Option<ObjectId> {
    first_from(unix_seconds_ceil(micros))
}

pub fn first_after(micros: i64) -> Option<ObjectId> {
    // Seconds are whole, so "after t" is "at or after the second following t's own".
    first_from(unix_seconds_floor(micros).saturating_add(1))
}

pub fn last_at_or_before(micros: i64) -> Option<ObjectId> {
    last_until(unix_seconds_floor(micros))
}

pub fn last_before(micros: i64) -> Option<ObjectId> {
    last_until(unix_seconds_ceil(micros).saturating_sub(1))
}

/// Unix seconds, rounded down, of a PostgreSQL time; the infinities map to i64's extremes.
fn unix_seconds_floor(micros: i64) -> i64 {
    match micros {
        i64::MIN | i64::MAX => micros,
        _ => micros.div_euclid(MICROS_PER_SECOND) + PG_EPOCH_UNIX_SECONDS,
    }
}

fn unix_seconds_ceil(micros: i64) -> i64 {
    let floor = unix_seconds_floor(micros);
    match micros {
        i64::MIN | i64::MAX => floor,
        _ if micros.rem_euclid(MICROS_PER_SECOND) == 0 => floor,
        _ => floor + 1,
    }
}

/// The smallest id of the first second at or after `second` an id can carry.
fn first_from(second: i64) -> Option<ObjectId> {
    let s = u32::try_from(second.max(0)).ok()?;
    Some(ObjectId::from_parts(s, [0; 5], 0))
}

/// The largest id of the last second at or before `second` an id can carry.
fn last_until(second: i64) -> Option<ObjectId> {
    if second < 0 {
        return None;
    }
    let s = u32::try_from(second).unwrap_or(u32::MAX);
    Some(ObjectId::from_parts(s, [0xff; 5], 0x00ff_ffff))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL microseconds of a Unix time.
    fn pg(unix_seconds: i64, micros: i64) -> i64 {
        (unix_seconds - PG_EPOCH_UNIX_SECONDS) * MICROS_PER_SECOND + micros
    }

    #[test]
    fn the_four_documented_timestamps() {
        // 1970-01-01 00:00:00, 2038-01-19 03:14:07, 2038-01-19 03:14:08, 2106-02-07 06:28:15
        for (secs, unix) in [
            (0u32, 0i64),
            (0x7fff_ffff, 2_147_483_647),
            (0x8000_0000, 2_147_483_648),
            (0xffff_ffff, 4_294_967_295),
        ] {
            assert_eq!(pg_from_seconds(secs), pg(unix, 0));
            assert_eq!(seconds_from_pg(pg(unix, 0)), Ok(secs));
        }
        assert_eq!(
            pg_from_seconds(946_684_800),
            0,
            "2000-01-01 is PostgreSQL's zero"
        );
    }

    #[test]
    fn fractions_are_dropped() {
        assert_eq!(seconds_from_pg(pg(100, 999_999)), Ok(100));
        // Before 2000 PostgreSQL's value is negative: still towards the past.
        assert_eq!(seconds_from_pg(pg(946_684_799, 500_000)), Ok(946_684_799));
        assert_eq!(seconds_from_pg(pg(0, 1)), Ok(0));
    }

    #[test]
    fn out_of_range() {
        assert_eq!(
            seconds_from_pg(pg(-1, 999_999)),
            Err(OutOfRange::BeforeEpoch)
        );
        assert_eq!(
            seconds_from_pg(pg(4_294_967_296, 0)),
            Err(OutOfRange::After2106)
        );
        assert_eq!(seconds_from_pg(pg(4_294_967_295, 999_999)), Ok(u32::MAX));
        assert_eq!(seconds_from_pg(i64::MIN), Err(OutOfRange::NegativeInfinity));
        assert_eq!(seconds_from_pg(i64::MAX), Err(OutOfRange::Infinity));
        // The extremes of the finite timestamp range do not overflow.
        assert_eq!(seconds_from_pg(i64::MIN + 1), Err(OutOfRange::BeforeEpoch));
        assert_eq!(seconds_from_pg(i64::MAX - 1), Err(OutOfRange::After2106));
    }

    #[test]
    fn first_of_second_zeroes_the_rest() {
        let id = first_of_second(pg(1_350_508_407, 123)).unwrap();
        assert_eq!(id.to_string(), "507f1f770000000000000000");
    }

    #[test]
    fn bounds_bracket_every_id_of_the_second() {
        let t = pg(1_350_508_407, 250_000);
        assert_eq!(lower_bound(t).to_string(), "507f1f770000000000000000");
        assert_eq!(upper_bound(t).to_string(), "507f1f77ffffffffffffffff");
        assert_eq!(lower_bound(i64::MIN), ObjectId::MIN);
        assert_eq!(upper_bound(i64::MIN), ObjectId::MIN);
        assert_eq!(lower_bound(pg(-5, 0)), ObjectId::MIN);
        assert_eq!(lower_bound(i64::MAX), ObjectId::MAX);
        assert_eq!(upper_bound(pg(5_000_000_000, 0)), ObjectId::MAX);
    }

    #[test]
    fn bound_before_a_whole_second_ends_the_second_before() {
        let whole = pg(1_350_508_407, 0);
        assert_eq!(
            upper_bound_before(whole).to_string(),
            "507f1f76ffffffffffffffff"
        );
        let fraction = pg(1_350_508_407, 1);
        assert_eq!(
            upper_bound_before(fraction).to_string(),
            "507f1f77ffffffffffffffff"
        );
        assert_eq!(upper_bound_before(i64::MIN), ObjectId::MIN);
        assert_eq!(upper_bound_before(pg(0, 0)), ObjectId::MIN);
        assert_eq!(upper_bound_before(i64::MAX), ObjectId::MAX);
    }

    /// The exact bounds against the conditions they stand for, over ids at the edges of every
    /// second involved and times on, just before and just after whole seconds and at the ends.
    #[test]
    fn exact_bounds_agree_with_the_conditions() {
        let seconds: Vec<u32> = vec![
            0,
            1,
            2,
            1_350_508_406,
            1_350_508_407,
            1_350_508_408,
            u32::MAX - 1,
            u32::MAX,
        ];
        let ids: Vec<ObjectId> = seconds
            .iter()
            .flat_map(|&s| {
                [
                    ObjectId::from_parts(s, [0; 5], 0),
                    ObjectId::from_parts(s, [0x12; 5], 0x34),
                    ObjectId::from_parts(s, [0xff; 5], 0x00ff_ffff),
                ]
            })
            .collect();
        let mut times = vec![i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1];
        for unix in [
            -2i64,
            -1,
            0,
            1,
            2,
            1_350_508_407,
            4_294_967_294,
            4_294_967_295,
            4_294_967_296,
        ] {
            for micros in [-1i64, 0, 1, 500_000, 999_999] {
                times.push(pg(unix, micros));
            }
        }
        for &t in &times {
            for id in &ids {
                // objectid_timestamp(id) as PostgreSQL compares it: microseconds.
                let ts = pg_from_seconds(id.timestamp());
                let holds = |bound: Option<ObjectId>, at_least: bool| match bound {
                    None => false,
                    Some(b) if at_least => *id >= b,
                    Some(b) => *id <= b,
                };
                assert_eq!(
                    ts >= t,
                    holds(first_at_or_after(t), true),
                    ">= {t} for {id}"
                );
                assert_eq!(ts > t, holds(first_after(t), true), "> {t} for {id}");
                assert_eq!(
                    ts <= t,
                    holds(last_at_or_before(t), false),
                    "<= {t} for {id}"
                );
                assert_eq!(ts < t, holds(last_before(t), false), "< {t} for {id}");
            }
        }
    }
}
