//! The model: what docs/reference.md says each function gives.

use super::generators::{NEG_INF, POS_INF, UNIX_EPOCH};

pub(super) const OID_MIN: [u8; 12] = [0; 12];
pub(super) const OID_MAX: [u8; 12] = [0xff; 12];

pub(super) fn oid(sec: i128, fill: u8) -> [u8; 12] {
    let mut id = [fill; 12];
    id[..4].copy_from_slice(&u32::try_from(sec).expect("a 32-bit second").to_be_bytes());
    id
}

/// Microseconds since 1970 of a finite time.
pub(super) fn unix_us(t: i64) -> i128 {
    i128::from(t) - i128::from(UNIX_EPOCH)
}

fn sec_floor(t: i64) -> i128 {
    unix_us(t).div_euclid(1_000_000)
}

fn sec_ceil(t: i64) -> i128 {
    -(-unix_us(t)).div_euclid(1_000_000)
}

/// The PostgreSQL time of an objectid's second.
pub(super) fn oid_time(id: &[u8]) -> i64 {
    let s = u32::from_be_bytes(id[..4].try_into().unwrap());
    UNIX_EPOCH + i64::from(s) * 1_000_000
}

const U32_MAX: i128 = u32::MAX as i128;

/// objectid_from_time and gen_objectid_at: the second, or an error outside 1970 .. 2106-02-07 06:28:15.
pub(super) fn m_from_time(t: i64) -> Option<[u8; 12]> {
    if t == NEG_INF || t == POS_INF {
        return None;
    }
    let s = sec_floor(t);
    (0..=U32_MAX).contains(&s).then(|| oid(s, 0))
}

pub(super) fn m_bound(t: i64, fill: u8) -> [u8; 12] {
    if t == NEG_INF {
        return OID_MIN;
    }
    if t == POS_INF {
        return OID_MAX;
    }
    match sec_floor(t) {
        s if s < 0 => OID_MIN,
        s if s > U32_MAX => OID_MAX,
        s => oid(s, fill),
    }
}

/// objectid_upper_bound(t - 1 µs); infinities stay infinite.
pub(super) fn m_upper_before(t: i64) -> [u8; 12] {
    if t == NEG_INF || t == POS_INF {
        m_bound(t, 0xff)
    } else {
        m_bound(t - 1, 0xff)
    }
}

/// The smallest id whose second is at least `s`, none past 2106.
fn first_from(s: i128) -> Option<[u8; 12]> {
    (s <= U32_MAX).then(|| oid(s.max(0), 0))
}

/// The largest id whose second is at most `s`, none before 1970.
fn last_until(s: i128) -> Option<[u8; 12]> {
    (s >= 0).then(|| oid(s.min(U32_MAX), 0xff))
}

/// objectid_first_at_or_after: the smallest id with objectid_timestamp(id) >= t, or NULL.
pub(super) fn m_first_at_or_after(t: i64) -> Option<[u8; 12]> {
    match t {
        NEG_INF => Some(OID_MIN),
        POS_INF => None,
        _ => first_from(sec_ceil(t)),
    }
}

/// objectid_first_after: the smallest id with objectid_timestamp(id) > t, or NULL.
pub(super) fn m_first_after(t: i64) -> Option<[u8; 12]> {
    match t {
        NEG_INF => Some(OID_MIN),
        POS_INF => None,
        _ => first_from(sec_floor(t) + 1),
    }
}

/// objectid_last_at_or_before: the largest id with objectid_timestamp(id) <= t, or NULL.
pub(super) fn m_last_at_or_before(t: i64) -> Option<[u8; 12]> {
    match t {
        NEG_INF => None,
        POS_INF => Some(OID_MAX),
        _ => last_until(sec_floor(t)),
    }
}

/// objectid_last_before: the largest id with objectid_timestamp(id) < t, or NULL.
pub(super) fn m_last_before(t: i64) -> Option<[u8; 12]> {
    match t {
        NEG_INF => None,
        POS_INF => Some(OID_MAX),
        _ => last_until(sec_ceil(t) - 1),
    }
}

pub(super) fn step(id: &[u8; 12], up: bool) -> [u8; 12] {
    let n = u128::from_be_bytes({
        let mut b = [0u8; 16];
        b[4..].copy_from_slice(id);
        b
    });
    let n = if up { n + 1 } else { n - 1 };
    n.to_be_bytes()[4..].try_into().unwrap()
}

pub(super) const V7_MAX_MS: i128 = (1 << 48) - 1;

pub(super) fn ms_floor(t: i64) -> i128 {
    unix_us(t).div_euclid(1_000)
}

fn v7_first_of_ms(ms: i128) -> [u8; 16] {
    let mut u = [0u8; 16];
    u[..6].copy_from_slice(&(ms as u64).to_be_bytes()[2..]);
    u[6] = 0x70;
    u[8] = 0x80;
    u
}

fn v7_last_of_ms(ms: i128) -> [u8; 16] {
    let mut u = [0xff; 16];
    u[..6].copy_from_slice(&(ms as u64).to_be_bytes()[2..]);
    u
}

/// uuidv7_from_time: the smallest v7 of the millisecond, or an error before 1970 or past 2^48 ms.
pub(super) fn m_v7_from_time(t: i64) -> Option<[u8; 16]> {
    if t == NEG_INF || t == POS_INF {
        return None;
    }
    let ms = ms_floor(t);
    (0..=V7_MAX_MS).contains(&ms).then(|| v7_first_of_ms(ms))
}

pub(super) fn m_v7_bound(t: i64, upper: bool) -> [u8; 16] {
    let ms = match t {
        NEG_INF => return [0; 16],
        POS_INF => return [0xff; 16],
        _ => ms_floor(t),
    };
    if ms < 0 {
        [0; 16]
    } else if ms > V7_MAX_MS {
        [0xff; 16]
    } else if upper {
        v7_last_of_ms(ms)
    } else {
        v7_first_of_ms(ms)
    }
}

pub(super) fn m_v7_upper_before(t: i64) -> [u8; 16] {
    if t == NEG_INF || t == POS_INF {
        m_v7_bound(t, true)
    } else {
        m_v7_bound(t - 1, true)
    }
}

/// The Unix milliseconds of a v7's first 48 bits.
pub(super) fn v7_ms(u: &[u8]) -> i128 {
    let mut b = [0u8; 8];
    b[2..].copy_from_slice(&u[..6]);
    i128::from(u64::from_be_bytes(b))
}

/// What uuid_extract_timestamp documents for a value: the millisecond of a v7 of the RFC variant;
/// NULL for other versions and variants (no v1 comes out of these functions).
pub(super) fn extracted(u: &[u8]) -> Option<i64> {
    (u[8] & 0xc0 == 0x80 && u[6] >> 4 == 7)
        .then(|| (v7_ms(u) * 1_000 + i128::from(UNIX_EPOCH)) as i64)
}

pub(super) fn parse_uuid(s: &str) -> Option<Vec<u8>> {
    hex::decode(s.replace('-', ""))
        .ok()
        .filter(|b| b.len() == 16)
}

pub(super) fn show_time(t: i64) -> String {
    match t {
        NEG_INF => "-infinity".into(),
        POS_INF => "infinity".into(),
        _ => {
            let us = unix_us(t);
            format!(
                "{t} µs (Unix {}.{:06} s)",
                us.div_euclid(1_000_000),
                us.rem_euclid(1_000_000)
            )
        }
    }
}
