//! UUID version 7 as PostgreSQL 18 makes it (RFC 9562), plus version 4 and the extraction of
//! versions and timestamps.
//!
//! Layout of a v7: bytes 0–5 Unix milliseconds (48 bits, big-endian); the high nibble of byte 6
//! is the version (7); the next 12 bits hold the sub-millisecond fraction of the same clock
//! reading, scaled to 1/4096 ms (RFC 9562 method 3: the clock itself serves as the counter); the
//! top two bits of byte 8 are the variant (10); the remaining 62 bits are random.

/// Nanoseconds in a millisecond.
pub const NS_PER_MS: i64 = 1_000_000;
const SUBMS_BITS: u32 = 12;
/// The smallest clock step that is sure to raise the 12-bit fraction: 1 ms / 4096, rounded up.
pub const SUBMS_MINIMAL_STEP_NS: i64 = NS_PER_MS / (1 << SUBMS_BITS) + 1;
/// Milliseconds a v7 can carry: 48 bits.
pub const MAX_UNIX_MS: i64 = (1 << 48) - 1;

pub type Uuid = [u8; 16];

/// The clock of one backend, made to ascend: a reading that is not at least one minimal step past
/// the previous one (same tick, or the clock went back) becomes the previous one plus a step. So
/// successive v7 values of a backend always increase, and values of different backends are
/// ordered by the clock to within its resolution.
#[derive(Default, Debug, Clone, Copy)]
pub struct AscendingClock {
    previous_ns: i64,
}

impl AscendingClock {
    /// Nanoseconds in an i64 end in 2262 (as in PostgreSQL 18, whose clock is the same): a clock
    /// read past that saturates there instead of overflowing.
    pub fn next(&mut self, now_ns: i64) -> i64 {
        let step = self.previous_ns.saturating_add(SUBMS_MINIMAL_STEP_NS);
        let ns = if step >= now_ns { step } else { now_ns };
        self.previous_ns = ns;
        ns
    }
}

fn set_version(uuid: &mut Uuid, version: u8) {
    uuid[6] = (uuid[6] & 0x0f) | (version << 4);
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
}

/// A v7 for `ns` nanoseconds since the Unix epoch (ns ≥ 0), its last 8 bytes from `random` (the
/// variant bits then overwrite two of them).
pub fn v7(ns: i64, random: [u8; 8]) -> Uuid {
    v7_parts(ns / NS_PER_MS, ns % NS_PER_MS, random)
}

/// A v7 for Unix millisecond `ms` (0 ≤ ms ≤ MAX_UNIX_MS) and `sub_ms_ns` nanoseconds into it.
/// Times are kept apart like this because 64-bit nanoseconds end in 2262, long before the 48-bit
/// milliseconds do (year 10889), and a shifted uuidv7 may go that far.
pub fn v7_parts(ms: i64, sub_ms_ns: i64, random: [u8; 8]) -> Uuid {
    debug_assert!((0..=MAX_UNIX_MS).contains(&ms) && (0..NS_PER_MS).contains(&sub_ms_ns));
    let fraction = (sub_ms_ns * (1 << SUBMS_BITS)) / NS_PER_MS;
    let mut u = [0u8; 16];
    u[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    u[6] = (fraction >> 8) as u8;
    u[7] = fraction as u8;
    u[8..].copy_from_slice(&random);
    set_version(&mut u, 7);
    u
}

/// The smallest v7 of millisecond `ms`: the time, version and variant, everything else zero.
/// Works for every millisecond a v7 can carry, also past 2262, where nanoseconds no longer fit an
/// i64 (so it must not go through `v7`).
pub fn v7_first_of_millisecond(ms: i64) -> Uuid {
    v7_parts(ms, 0, [0; 8])
}

/// A random (version 4) UUID from 16 random bytes.
pub fn v4(random: [u8; 16]) -> Uuid {
    let mut u = random;
    set_version(&mut u, 4);
    u
}

fn is_rfc_variant(u: &Uuid) -> bool {
    u[8] & 0xc0 == 0x80
}

/// The version nibble, or None for a UUID that is not of the RFC 9562 variant.
pub fn version(u: &Uuid) -> Option<u8> {
    is_rfc_variant(u).then_some(u[6] >> 4)
}

/// Seconds from 1970-01-01 to PostgreSQL's epoch, 2000-01-01.
const PG_EPOCH_UNIX_SECONDS: i64 = 946_684_800;
/// 100 ns intervals (v1's unit) from 1582-10-15 to 1970-01-01.
const GREGORIAN_TO_UNIX_100NS: u64 = 122_192_928_000_000_000;

/// The creation time as PostgreSQL microseconds: milliseconds for v7, 100 ns intervals since
/// 1582-10-15 for v1; None for other versions and other variants.
pub fn timestamp_pg_micros(u: &Uuid) -> Option<i64> {
    match version(u)? {
        7 => {
            let ms = u64::from_be_bytes([0, 0, u[0], u[1], u[2], u[3], u[4], u[5]]) as i64;
            Some((ms - PG_EPOCH_UNIX_SECONDS * 1000) * 1000)
        }
        1 => {
            let ticks = u64::from(u[0]) << 24
                | u64::from(u[1]) << 16
                | u64::from(u[2]) << 8
                | u64::from(u[3])
                | u64::from(u[4]) << 40
                | u64::from(u[5]) << 32
                | u64::from(u[6] & 0x0f) << 56
                | u64::from(u[7]) << 48;
            // As PostgreSQL does: to microseconds first, then to its epoch.
            let unix_micros = (ticks / 10) as i64 - (GREGORIAN_TO_UNIX_100NS / 10) as i64;
            Some(unix_micros - PG_EPOCH_UNIX_SECONDS * 1_000_000)
        }
        _ => None,
    }
}

/// The Unix millisecond and the nanoseconds into it of a PostgreSQL timestamp, with the
/// sub-microsecond part `sub_us_ns` of an earlier clock reading carried over; None if a v7
/// cannot carry the time: before 1970, past the 48-bit milliseconds (year 10889), or ±infinity.
pub fn ms_from_pg(micros: i64, sub_us_ns: i64) -> Option<(i64, i64)> {
    if micros == i64::MIN || micros == i64::MAX {
        return None;
    }
    let unix_micros = micros.checked_add(PG_EPOCH_UNIX_SECONDS * 1_000_000)?;
    let ms = unix_micros.div_euclid(1000);
    if !(0..=MAX_UNIX_MS).contains(&ms) {
        return None;
    }
    Some((ms, unix_micros.rem_euclid(1000) * 1000 + sub_us_ns))
}

/// `ms_from_pg` with the upper bound of PostgreSQL 18.6's `uuidv7(interval)` (upstream commit
/// c31b0fca059c, "Reject infinite and out-of-range interval shifts in uuidv7()"): it compares the
/// shifted time in microseconds with the largest 48-bit millisecond, so that of the last
/// millisecond only its first microsecond is accepted. Ours must refuse what it refuses.
pub fn ms_from_pg_shifted(micros: i64, sub_us_ns: i64) -> Option<(i64, i64)> {
    let unix_micros = micros.checked_add(PG_EPOCH_UNIX_SECONDS * 1_000_000)?;
    if unix_micros > MAX_UNIX_MS * 1000 {
        return None;
    }
    ms_from_pg(micros, sub_us_ns)
}

/// PostgreSQL microseconds of Unix nanoseconds (dropping the nanoseconds).
pub fn pg_micros_from_unix_ns(ns: i64) -> i64 {
    ns.div_euclid(1000) - PG_EPOCH_UNIX_SECONDS * 1_000_000
}

/// Bounds for index conditions on `uuid_extract_timestamp(u) <op> t`, which never fail: every
/// v7 whose timestamp is at or after t is at least `lower_bound(t)`; every one at or before t is
/// at most `upper_bound(t)`. Out-of-range times clamp to the smallest or largest UUID.
pub fn lower_bound(micros: i64) -> Uuid {
    match ms_of_pg(micros) {
        Clamp::Below => [0; 16],
        Clamp::Above => [0xff; 16],
        Clamp::In(ms) => v7_first_of_millisecond(ms),
    }
}

pub fn upper_bound(micros: i64) -> Uuid {
    match ms_of_pg(micros) {
        Clamp::Below => [0; 16],
        Clamp::Above => [0xff; 16],
        Clamp::In(ms) => {
            let mut u = [0xff; 16];
            u[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
            u
        }
    }
}

/// Every v7 whose timestamp is before t is at most `upper_bound_before(t)`: the last possible v7
/// of the millisecond one microsecond earlier, so that `< t` on a whole millisecond stops before it.
pub fn upper_bound_before(micros: i64) -> Uuid {
    upper_bound(micros.saturating_sub(1))
}

enum Clamp {
    Below,
    In(i64),
    Above,
}

fn ms_of_pg(micros: i64) -> Clamp {
    if micros == i64::MIN {
        return Clamp::Below;
    }
    if micros == i64::MAX {
        return Clamp::Above;
    }
    let unix_ms = (micros.div_euclid(1000)).saturating_add(PG_EPOCH_UNIX_SECONDS * 1000);
    if unix_ms < 0 {
        Clamp::Below
    } else if unix_ms > MAX_UNIX_MS {
        Clamp::Above
    } else {
        Clamp::In(unix_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(u: &Uuid) -> String {
        hex::encode(u)
    }

    #[test]
    fn layout_bit_by_bit() {
        // 2024-01-01 00:00:00.000500 UTC: 1704067200000 ms, half a millisecond in.
        let ns = 1_704_067_200_000 * NS_PER_MS + 500_000;
        let u = v7(ns, [0xff; 8]);
        assert_eq!(&u[..6], &1_704_067_200_000u64.to_be_bytes()[2..]);
        assert_eq!(u[6] >> 4, 7, "version");
        // 0.5 ms is 2048/4096.
        assert_eq!(u16::from_be_bytes([u[6] & 0x0f, u[7]]), 2048);
        assert_eq!(u[8] >> 6, 0b10, "variant");
        assert_eq!(u[8] & 0x3f, 0x3f);
        assert_eq!(&u[9..], &[0xff; 7]);
        let z = v7(ns, [0; 8]);
        assert_eq!(hex(&z), "018cc251f4007800800000000000000".to_string() + "0");
    }

    #[test]
    fn fraction_uses_all_twelve_bits() {
        let base = 1_000 * NS_PER_MS;
        let f = |ns: i64| {
            let u = v7(base + ns, [0; 8]);
            u16::from_be_bytes([u[6] & 0x0f, u[7]])
        };
        assert_eq!(f(0), 0);
        assert_eq!(f(244), 0);
        assert_eq!(f(245), 1);
        assert_eq!(f(999_999), 4095);
    }

    #[test]
    fn clock_stalls_and_steps_back() {
        let mut c = AscendingClock::default();
        let t0 = 1_700_000_000_000_000_000;
        let a = c.next(t0);
        let b = c.next(t0);
        let d = c.next(t0 - 5_000_000_000);
        let e = c.next(t0 + 10 * NS_PER_MS);
        assert_eq!(a, t0);
        assert_eq!(b, t0 + SUBMS_MINIMAL_STEP_NS);
        assert_eq!(d, t0 + 2 * SUBMS_MINIMAL_STEP_NS);
        assert_eq!(e, t0 + 10 * NS_PER_MS);
        // Each step moves the 12-bit fraction, so the UUIDs ascend even with equal random bits.
        let ids: Vec<Uuid> = [a, b, d, e].iter().map(|&ns| v7(ns, [0xff; 8])).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_stalled_clock_still_gives_ascending_uuids() {
        let mut c = AscendingClock::default();
        let t = 1_700_000_000_000_000_000;
        let mut prev = v7(c.next(t), [0xff; 8]);
        for _ in 0..20_000 {
            let u = v7(c.next(t), [0; 8]);
            assert!(u > prev);
            prev = u;
        }
    }

    #[test]
    fn version_4() {
        let u = v4([0xff; 16]);
        assert_eq!(version(&u), Some(4));
        assert_eq!(u[6], 0x4f);
        assert_eq!(u[8], 0xbf);
        assert_eq!(v4([0; 16])[8], 0x80);
    }

    #[test]
    fn versions_and_variants() {
        let mut u = v7(0, [0; 8]);
        assert_eq!(version(&u), Some(7));
        u[8] = 0xc0; // Microsoft's variant
        assert_eq!(version(&u), None);
        assert_eq!(timestamp_pg_micros(&u), None);
        u[8] = 0x00; // NCS variant
        assert_eq!(version(&u), None);
        assert_eq!(timestamp_pg_micros(&v4([7; 16])), None, "v4 has no time");
    }

    #[test]
    fn extracts_known_timestamps() {
        // v7 of 2024-01-01 00:00:00.123 UTC.
        let u = v7_first_of_millisecond(1_704_067_200_123);
        let pg = timestamp_pg_micros(&u).unwrap();
        assert_eq!(pg, (1_704_067_200_123 - 946_684_800_000) * 1000);
        // RFC 9562's v1 example: C232AB00-9414-11EC-B3C8-9F6BDECED846 is
        // 2022-02-22 19:22:22.000000 UTC (ticks 0x1EC9414C232AB00).
        let v1: Uuid = hex::decode("c232ab00941411ecb3c89f6bdeced846")
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!(version(&v1), Some(1));
        let unix_micros = timestamp_pg_micros(&v1).unwrap() + 946_684_800_000_000;
        assert_eq!(unix_micros, 1_645_557_742_000_000);
        // RFC 9562's v7 example: 017F22E2-79B0-7CC3-98C4-DC0C0C07398F is 2022-02-22 19:22:22 UTC.
        let v7e: Uuid = hex::decode("017f22e279b07cc398c4dc0c0c07398f")
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!(
            timestamp_pg_micros(&v7e).unwrap() + 946_684_800_000_000,
            1_645_557_742_000_000
        );
    }

    #[test]
    fn ranges() {
        assert_eq!(ms_from_pg(i64::MAX, 0), None);
        assert_eq!(ms_from_pg(i64::MIN, 0), None);
        assert_eq!(ms_from_pg(-946_684_800_000_001, 0), None, "1969");
        assert_eq!(
            ms_from_pg(-946_684_800_000_000, 7),
            Some((0, 7)),
            "the epoch"
        );
        assert_eq!(ms_from_pg(-946_684_799_998_500, 250), Some((1, 500_250)));
        // The last microsecond of the 48-bit milliseconds, in the year 10889.
        let max_pg = MAX_UNIX_MS * 1000 + 999 - 946_684_800_000_000;
        assert_eq!(ms_from_pg(max_pg, 0), Some((MAX_UNIX_MS, 999_000)));
        assert_eq!(ms_from_pg(max_pg + 1, 0), None, "past 48 bits");
        // 18.6's uuidv7(interval) takes only the first microsecond of the last millisecond.
        let last_ms_pg = MAX_UNIX_MS * 1000 - 946_684_800_000_000;
        assert_eq!(
            ms_from_pg_shifted(last_ms_pg, 999),
            Some((MAX_UNIX_MS, 999))
        );
        assert_eq!(ms_from_pg_shifted(last_ms_pg + 1, 0), None);
        assert_eq!(ms_from_pg_shifted(max_pg, 0), None);
        assert_eq!(ms_from_pg_shifted(-946_684_800_000_000, 7), Some((0, 7)));
        assert_eq!(ms_from_pg_shifted(-946_684_800_000_001, 0), None);
        assert_eq!(ms_from_pg_shifted(i64::MAX, 0), None);
        assert_eq!(ms_from_pg_shifted(i64::MIN, 0), None);
        assert_eq!(pg_micros_from_unix_ns(1_500), 1 - 946_684_800_000_000);
        // Past 2262, where 64-bit nanoseconds end, v7 values still form.
        let far = v7_parts(MAX_UNIX_MS, 999_999, [0; 8]);
        assert_eq!(&far[..6], &[0xff; 6]);
    }

    #[test]
    fn bounds() {
        let t = (1_704_067_200_123 - 946_684_800_000) * 1000 + 456;
        assert_eq!(hex(&lower_bound(t)), "018cc251f47b70008000000000000000");
        assert_eq!(hex(&upper_bound(t)), "018cc251f47bffffffffffffffffffff");
        assert_eq!(lower_bound(i64::MIN), [0; 16]);
        assert_eq!(upper_bound(i64::MAX), [0xff; 16]);
        assert_eq!(upper_bound(-946_684_800_000_001), [0; 16]);
        assert_eq!(lower_bound(i64::MAX - 1), [0xff; 16]);
        let whole_ms = (1_704_067_200_123 - 946_684_800_000) * 1000;
        assert_eq!(
            hex(&upper_bound_before(whole_ms)),
            "018cc251f47affffffffffffffffffff"
        );
        assert_eq!(
            hex(&upper_bound_before(whole_ms + 1)),
            "018cc251f47bffffffffffffffffffff"
        );
        assert_eq!(upper_bound_before(i64::MIN), [0; 16]);
        assert_eq!(upper_bound_before(i64::MAX), [0xff; 16]);
    }

    /// Bounds and first-of-millisecond past 2262 (nanoseconds overflow i64 there) and at the
    /// last millisecond a v7 can carry: once an overflow (a panic, or in release builds a wrong
    /// bound).
    #[test]
    fn bounds_after_2262_and_at_the_end_of_the_range() {
        // 4000-01-01 00:00:00 UTC in PostgreSQL microseconds.
        let year_4000 = (64_060_588_800 - 946_684_800) * 1_000_000;
        let u = lower_bound(year_4000);
        assert_eq!(hex(&u), "3a4344a3b80070008000000000000000");
        assert_eq!(timestamp_pg_micros(&u), Some(year_4000));
        assert!(lower_bound(year_4000) <= upper_bound(year_4000));
        let last = v7_first_of_millisecond(MAX_UNIX_MS);
        assert_eq!(&last[..6], &[0xff; 6]);
        assert_eq!(version(&last), Some(7));
    }

    /// A clock at or past the end of 64-bit nanoseconds (2262) stays there instead of
    /// overflowing (once an internal error, in release builds a wrapped, garbage time).
    #[test]
    fn a_clock_past_2262_saturates() {
        let mut c = AscendingClock::default();
        assert_eq!(c.next(i64::MAX), i64::MAX);
        assert_eq!(c.next(i64::MAX), i64::MAX);
        let u = v7(c.next(i64::MAX), [0; 8]);
        assert_eq!(version(&u), Some(7));
    }
}
