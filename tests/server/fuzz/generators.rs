//! Generators: ids, text inputs and their mutations, binary inputs, times and intervals.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, RngCore};

use super::wire::{Iv, IV_INFINITY, IV_NEG_INFINITY};

const HEX_DIGITS: &[u8] = b"0123456789abcdefABCDEF";

/// An id's 12 bytes: mostly random, sometimes the extremes.
pub(super) fn random_id(rng: &mut StdRng) -> [u8; 12] {
    match rng.random_range(0..20) {
        0 => [0; 12],
        1 => [0xff; 12],
        2 => {
            let mut id = [0u8; 12];
            id[rng.random_range(0..12)] = rng.random();
            id
        }
        _ => {
            let mut id = [0u8; 12];
            rng.fill_bytes(&mut id);
            id
        }
    }
}

/// The hex of an id in lower, upper or mixed case.
fn hex_text(rng: &mut StdRng, id: &[u8]) -> Vec<u8> {
    let lower = hex::encode(id).into_bytes();
    match rng.random_range(0..4) {
        0 | 1 => lower,
        2 => lower.to_ascii_uppercase(),
        _ => lower
            .iter()
            .map(|b| {
                if rng.random_bool(0.5) {
                    b.to_ascii_uppercase()
                } else {
                    *b
                }
            })
            .collect(),
    }
}

/// Characters around the edges of "a hexadecimal digit": look-alikes, case-mapping surprises,
/// invisible characters, combining marks, other scripts' digits, astral planes.
const UNICODE: &[&str] = &[
    "é",
    "ß",
    "ı",
    "İ",
    "\u{212a}",
    "ａ",
    "Ａ",
    "ｆ",
    "０",
    "９",
    "٣",
    "۴",
    "߀",
    "१",
    "𝟎",
    "𝟗",
    "Ⅰ",
    "\u{200b}",
    "\u{200d}",
    "\u{feff}",
    "\u{0301}",
    "\u{00a0}",
    "\u{2028}",
    "\u{3000}",
    "😀",
    "\u{10ffff}",
    "\u{fffd}",
    "Ω",
    "中",
];

const WHITESPACE: &[&str] = &[" ", "\t", "\n", "\r", "\u{0b}", "\u{0c}", "  ", "\r\n"];

const WRAPPERS: &[(&str, &str)] = &[
    ("0x", ""),
    ("0X", ""),
    ("\\x", ""),
    ("ObjectId(\"", "\")"),
    ("{", "}"),
    ("\"", "\""),
    ("'", "'"),
    ("-", ""),
    ("+", ""),
    ("", "\\0"),
    ("", "::objectid"),
];

const NOT_HEX_ASCII: &[u8] = b"gGhHzZxXoOlL-_+.:;'\"\\{}[]()/ ,!?@#$%^&*=~`|<>";

fn random_char(rng: &mut StdRng) -> Vec<u8> {
    match rng.random_range(0..4) {
        0 | 1 => vec![*HEX_DIGITS.choose(rng).unwrap()],
        2 => vec![*NOT_HEX_ASCII.choose(rng).unwrap()],
        _ => UNICODE.choose(rng).unwrap().as_bytes().to_vec(),
    }
}

fn insert_at(rng: &mut StdRng, s: &mut Vec<u8>, piece: &[u8]) {
    let at = match rng.random_range(0..3) {
        0 => 0,
        1 => s.len(),
        _ => rng.random_range(0..=s.len()),
    };
    s.splice(at..at, piece.iter().copied());
}

/// One mutation of a text input. Never makes a NUL byte (a cstring ends there).
fn mutate_text(rng: &mut StdRng, s: &mut Vec<u8>) {
    match rng.random_range(0..14) {
        // Bit flips.
        0 if !s.is_empty() => {
            for _ in 0..rng.random_range(1..=3) {
                let at = rng.random_range(0..s.len());
                let bit = rng.random_range(0..8);
                s[at] ^= 1 << bit;
                if s[at] == 0 {
                    s[at] ^= 1 << ((bit + 1) % 8);
                }
            }
        }
        // Truncation.
        1 if !s.is_empty() => s.truncate(rng.random_range(0..s.len())),
        // Extension.
        2 => {
            for _ in 0..rng.random_range(1..=8) {
                let c = random_char(rng);
                s.extend_from_slice(&c);
            }
        }
        // Case changes.
        3 => {
            for b in s.iter_mut() {
                if rng.random_bool(0.3) {
                    *b = if b.is_ascii_lowercase() {
                        b.to_ascii_uppercase()
                    } else {
                        b.to_ascii_lowercase()
                    };
                }
            }
        }
        // Whitespace.
        4 => {
            let w = WHITESPACE.choose(rng).unwrap().as_bytes().to_vec();
            insert_at(rng, s, &w);
        }
        // Unicode inserted or replacing a character.
        5 => {
            let u = UNICODE.choose(rng).unwrap().as_bytes().to_vec();
            if !s.is_empty() && rng.random_bool(0.5) {
                let at = rng.random_range(0..s.len());
                s.splice(at..at + 1, u);
            } else {
                insert_at(rng, s, &u);
            }
        }
        // One character not a hex digit.
        6 if !s.is_empty() => {
            let at = rng.random_range(0..s.len());
            s[at] = *NOT_HEX_ASCII.choose(rng).unwrap();
        }
        // A byte with the high bit set (not UTF-8 on its own).
        7 if !s.is_empty() => {
            let at = rng.random_range(0..s.len());
            s[at] = rng.random_range(0x80..=0xff);
        }
        // Delete, duplicate or swap characters.
        8 if s.len() >= 2 => {
            let at = rng.random_range(0..s.len() - 1);
            match rng.random_range(0..3) {
                0 => {
                    s.remove(at);
                }
                1 => s.insert(at, s[at]),
                _ => s.swap(at, at + 1),
            }
        }
        // Wrapped as other languages write ids.
        9 => {
            let (before, after) = WRAPPERS.choose(rng).unwrap();
            s.splice(0..0, before.bytes());
            s.extend_from_slice(after.as_bytes());
        }
        // Repeated to a long input.
        10 if !s.is_empty() => {
            let target = rng.random_range(25..=20_000);
            let piece = s.clone();
            while s.len() < target {
                s.extend_from_slice(&piece);
            }
            s.truncate(target);
        }
        // A few random NUL-free bytes replacing a stretch.
        11 if !s.is_empty() => {
            let at = rng.random_range(0..s.len());
            let end = (at + rng.random_range(1..=4)).min(s.len());
            let len = rng.random_range(0..=4);
            let fill: Vec<u8> = (0..len).map(|_| rng.random_range(1..=255)).collect();
            s.splice(at..end, fill);
        }
        // Hex digits added or removed at one end: one digit off.
        12 => {
            if rng.random_bool(0.5) && !s.is_empty() {
                if rng.random_bool(0.5) {
                    s.pop();
                } else {
                    s.remove(0);
                }
            } else {
                let digit = *HEX_DIGITS.choose(rng).unwrap();
                insert_at(rng, s, &[digit]);
            }
        }
        _ => {
            let c = random_char(rng);
            insert_at(rng, s, &c);
        }
    }
}

/// A text input: valid ids, valid ids after mutations, and inputs made from scratch.
pub(super) fn random_text(rng: &mut StdRng) -> Vec<u8> {
    let id = random_id(rng);
    let mut s = hex_text(rng, &id);
    match rng.random_range(0..100) {
        0..=24 => {}
        25..=84 => {
            for _ in 0..rng.random_range(1..=3) {
                mutate_text(rng, &mut s);
            }
        }
        85..=87 => s.clear(),
        88..=91 => {
            s = (0..rng.random_range(0..=48))
                .map(|_| rng.random_range(1..=255u8))
                .collect();
        }
        92..=94 => {
            // 24 printable ASCII characters, mostly hex digits.
            s = (0..24)
                .map(|_| {
                    if rng.random_bool(0.9) {
                        *HEX_DIGITS.choose(rng).unwrap()
                    } else {
                        rng.random_range(0x20..0x7f)
                    }
                })
                .collect();
        }
        95..=97 => {
            // Hex digits of any length but 24.
            let mut n = rng.random_range(0..=64);
            if n == 24 {
                n = 25;
            }
            s = (0..n).map(|_| *HEX_DIGITS.choose(rng).unwrap()).collect();
        }
        _ => {
            s = (0..rng.random_range(1_000..=30_000))
                .map(|_| rng.random_range(1..=255u8))
                .collect();
        }
    }
    debug_assert!(!s.contains(&0));
    s
}

/// Bytes for the binary receive function and the bytea cast.
pub(super) fn binary_input(rng: &mut StdRng) -> Vec<u8> {
    let id = random_id(rng).to_vec();
    match rng.random_range(0..100) {
        0..=39 => id,
        40..=47 => {
            // Bits flipped: still 12 bytes, still valid.
            let mut b = id;
            for _ in 0..rng.random_range(1..=4) {
                let at = rng.random_range(0..12);
                b[at] ^= 1 << rng.random_range(0..8);
            }
            b
        }
        48..=59 => id[..rng.random_range(0..12)].to_vec(),
        60..=71 => {
            let mut b = id;
            for _ in 0..rng.random_range(1..=20) {
                b.push(rng.random());
            }
            b
        }
        72..=77 => hex::encode(&id).into_bytes(), // the text form sent as binary: 24 bytes
        78..=81 => {
            let mut b = vec![0u8; 16]; // a uuid's size
            rng.fill_bytes(&mut b);
            b
        }
        82..=97 => {
            let mut b = vec![0u8; rng.random_range(0..=64)];
            rng.fill_bytes(&mut b);
            b
        }
        _ => {
            let mut b = vec![0u8; rng.random_range(100..=70_000)];
            rng.fill_bytes(&mut b);
            b
        }
    }
}

// Times, in PostgreSQL microseconds.
pub(super) const NEG_INF: i64 = i64::MIN;
pub(super) const POS_INF: i64 = i64::MAX;
/// The first and one past the last finite timestamp: 4714-11-24 00:00:00 BC and 294277-01-01.
const PG_MIN_TS: i64 = -211_813_488_000_000_000;
const PG_END_TS: i64 = 9_223_371_331_200_000_000;
/// 1970-01-01 00:00:00 UTC.
pub(super) const UNIX_EPOCH: i64 = -946_684_800_000_000;
/// Unix second 2^31 (2038-01-19 03:14:08) and 2^32 (2106-02-07 06:28:16: no objectid).
const Y2038: i64 = UNIX_EPOCH + (1i64 << 31) * 1_000_000;
const OID_END: i64 = UNIX_EPOCH + (1i64 << 32) * 1_000_000;
/// Unix millisecond 2^48 (about the year 10889: no v7).
const V7_END: i64 = UNIX_EPOCH + (1i64 << 48) * 1_000;
/// Roughly now, to keep the run reproducible.
const NOWISH: i64 = 820_000_000_000_000;

fn near(rng: &mut StdRng) -> i64 {
    match rng.random_range(0..4) {
        0 => *[
            0, 1, -1, 999, -999, 1_000, -1_000, 999_999, -999_999, 1_000_000, -1_000_000,
        ]
        .choose(rng)
        .unwrap(),
        1 => rng.random_range(-10_000_000..=10_000_000),
        2 => rng.random_range(-86_400_000_000..=86_400_000_000),
        _ => rng.random_range(-1_000..=1_000),
    }
}

pub(super) fn random_time(rng: &mut StdRng) -> i64 {
    let t = match rng.random_range(0..100) {
        0..=3 => return POS_INF,
        4..=7 => return NEG_INF,
        8..=17 => rng.random_range(PG_MIN_TS..PG_END_TS),
        18..=22 => PG_MIN_TS + rng.random_range(0..=10_000_000) * rng.random_range(0..=1),
        23..=27 => PG_END_TS - 1 - rng.random_range(0..=10_000_000) * rng.random_range(0..=1),
        28..=35 => UNIX_EPOCH + near(rng),
        36..=41 => rng.random_range(PG_MIN_TS..UNIX_EPOCH),
        42..=55 => rng.random_range(UNIX_EPOCH..OID_END),
        56..=62 => OID_END + near(rng),
        63..=66 => Y2038 + near(rng),
        67..=72 => rng.random_range(OID_END..V7_END),
        73..=79 => V7_END + near(rng),
        80..=85 => rng.random_range(V7_END..PG_END_TS),
        86..=90 => {
            let s = rng.random_range(0..=u32::MAX as i64);
            UNIX_EPOCH + s * 1_000_000 + *[0, 0, 1, -1].choose(rng).unwrap()
        }
        91..=95 => {
            let ms = rng.random_range(0..(1i64 << 48));
            UNIX_EPOCH + ms * 1_000 + *[0, 0, 1, -1].choose(rng).unwrap()
        }
        _ => NOWISH + near(rng),
    };
    t.clamp(PG_MIN_TS, PG_END_TS - 1)
}

fn pick_i32(rng: &mut StdRng, small: i32, medium: i32) -> i32 {
    match rng.random_range(0..20) {
        0..=7 => 0,
        8..=12 => rng.random_range(-small..=small),
        13..=15 => rng.random_range(-medium / 10..=medium / 10),
        16..=17 => rng.random_range(-medium..=medium),
        18 => rng.random(),
        _ => *[i32::MIN, i32::MAX, i32::MIN + 1, i32::MAX - 1]
            .choose(rng)
            .unwrap(),
    }
}

pub(super) fn random_interval(rng: &mut StdRng, infinite: bool) -> Iv {
    if infinite {
        match rng.random_range(0..40) {
            0 => return IV_INFINITY,
            1 => return IV_NEG_INFINITY,
            // One field short of infinity: finite, and far out of range.
            2 => {
                return Iv {
                    micros: i64::MAX - 1,
                    ..IV_INFINITY
                }
            }
            3 => {
                return Iv {
                    days: i32::MIN + 1,
                    ..IV_NEG_INFINITY
                }
            }
            _ => {}
        }
    }
    let micros = match rng.random_range(0..20) {
        0..=5 => 0,
        6..=9 => rng.random_range(-86_400_000_000..=86_400_000_000),
        10..=14 => rng.random_range(-3_153_600_000_000_000..=3_153_600_000_000_000), // ±100 years
        15..=17 => rng.random_range(-320_000_000_000_000_000..=320_000_000_000_000_000), // ±10,000 years
        18 => rng.random(),
        _ => *[i64::MIN, i64::MAX, i64::MIN + 1, i64::MAX - 1]
            .choose(rng)
            .unwrap(),
    };
    Iv {
        micros,
        days: pick_i32(rng, 36_500, 3_700_000),
        months: pick_i32(rng, 1_200, 120_000),
    }
}
