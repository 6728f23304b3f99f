//! Bad input through every entry point (issue 10): random and mutated inputs through
//!
//! - text input: the `text::objectid` cast and `objectid_in(cstring)`, in a UTF-8 database and in
//!   a `SQL_ASCII` one (any bytes but NUL), and on 16+ the soft path (`pg_input_is_valid()`,
//!   `pg_input_error_info()`);
//! - binary receive: a bare parameter, elements of an `objectid[]` parameter, `COPY (FORMAT binary)`;
//! - the `bytea::objectid` cast;
//! - the `jsonb::objectid` cast, with JSON of every shape around Extended JSON's `{"$oid": …}`;
//! - every function taking a timestamptz (`objectid_from_time`, `gen_objectid_at`, the bounds, the
//!   `first_*`/`last_*` functions where this build has them, the `uuidv7_*` ones) and `uuidv7(interval)`.
//!
//! Each input must give the value docs/reference.md documents, which must round-trip, or an ERROR with
//! the documented SQLSTATE (22P02 text, 22P03 binary and bytea length, 22008 times). The expected
//! values come from a model written here from docs/reference.md, not from the extension's code. After
//! each run the session that sent the inputs must still be the same backend (a crash anywhere
//! resets them all), a new connection must work, and the server log (`PG_OBJECTID_TEST_LOG`, set
//! by scripts/test.sh) must show no process terminated by a signal.
//!
//! The inputs come from a seeded generator. Every test prints its seed; `PG_OBJECTID_FUZZ_SEED`
//! (decimal or 0x…) repeats a run, `PG_OBJECTID_FUZZ_SCALE` multiplies the number of inputs
//! (default 1: 135,000 inputs per server version). A failure lists the seed and the failing inputs.
//! Inputs go in batches to PL/pgSQL loops with one exception block per call, so that every error
//! is seen with its SQLSTATE without a round trip per input.

use std::collections::HashSet;
use std::error::Error;
use std::io::Write as _;
use std::time::Instant;

use postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use postgres::Client;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, RngCore, SeedableRng};

use crate::common::*;

// ------------------------------------------------------------------------------------------
// Run settings, failure reports, server survival

/// "objectid" in ASCII.
const DEFAULT_SEED: u64 = 0x6f62_6a65_6374_6964;

struct Run {
    name: &'static str,
    seed: u64,
    rng: StdRng,
    scale: f64,
    started: Instant,
    failed: usize,
    failures: Vec<String>,
    /// Failures per kind (entry point or function), to see every kind in a report.
    kinds: std::collections::BTreeMap<String, (usize, String)>,
}

fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16).ok(),
        None => s.replace('_', "").parse().ok(),
    }
}

/// FNV-1a, to give each test its own stream from the one seed.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Run {
    fn new(name: &'static str) -> Run {
        let seed = match std::env::var("PG_OBJECTID_FUZZ_SEED") {
            Ok(s) => parse_u64(&s)
                .unwrap_or_else(|| panic!("PG_OBJECTID_FUZZ_SEED={s:?} is not a number")),
            Err(_) => DEFAULT_SEED,
        };
        let scale = match std::env::var("PG_OBJECTID_FUZZ_SCALE") {
            Ok(s) => s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| *x > 0.0)
                .unwrap_or_else(|| panic!("PG_OBJECTID_FUZZ_SCALE={s:?} is not a positive number")),
            Err(_) => 1.0,
        };
        println!("fuzz::{name}: seed {seed:#x} (PG_OBJECTID_FUZZ_SEED={seed:#x} repeats it), scale {scale}");
        Run {
            name,
            seed,
            rng: StdRng::seed_from_u64(seed ^ fnv1a(name)),
            scale,
            started: Instant::now(),
            failed: 0,
            failures: Vec::new(),
            kinds: Default::default(),
        }
    }

    fn count(&self, n: usize) -> usize {
        ((n as f64) * self.scale).ceil().max(1.0) as usize
    }

    fn fail(&mut self, what: String) {
        // The kind is what the report starts with: the entry point or function.
        let kind = what.split([' ', '(']).next().unwrap_or("").to_string();
        let entry = self.kinds.entry(kind).or_insert((0, what.clone()));
        entry.0 += 1;
        self.failed += 1;
        if self.failures.len() < 20 {
            self.failures.push(what);
        }
    }

    /// Fails now, for errors after which the run cannot go on (a lost connection).
    fn abort(&self, what: String) -> ! {
        panic!(
            "fuzz::{}: {what}\n(seed {:#x}: PG_OBJECTID_FUZZ_SEED={:#x} cargo test --test server fuzz::{})",
            self.name, self.seed, self.seed, self.name
        );
    }

    fn finish(self, inputs: usize, detail: &str) {
        if self.failed > 0 {
            let kinds: Vec<String> = self
                .kinds
                .iter()
                .map(|(kind, (n, first))| format!("{kind}: {n} failures, the first: {first}"))
                .collect();
            panic!(
                "fuzz::{}: {} checks of {inputs} inputs failed (seed {:#x}; repeat with \
                 PG_OBJECTID_FUZZ_SEED={:#x} cargo test --test server fuzz::{})\nby kind:\n  {}\nthe first {}:\n  {}",
                self.name,
                self.failed,
                self.seed,
                self.seed,
                self.name,
                kinds.join("\n  "),
                self.failures.len(),
                self.failures.join("\n  ")
            );
        }
        println!(
            "fuzz::{}: {inputs} inputs passed ({detail}) in {:.1} s, seed {:#x}",
            self.name,
            self.started.elapsed().as_secs_f64(),
            self.seed
        );
    }
}

fn backend_pid(c: &mut Client) -> i32 {
    c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0)
}

/// The server outlived the inputs: the session that sent them is the same backend (a backend
/// crash makes the postmaster end every session), a new session works, and the log shows no
/// process that died of a signal.
fn assert_server_survived(run: &Run, c: &mut Client, pid: i32) {
    match c.query_one("SELECT pg_backend_pid()", &[]) {
        Ok(row) => assert_eq!(
            row.get::<_, i32>(0),
            pid,
            "fuzz::{}: the session changed backends (seed {:#x})",
            run.name,
            run.seed
        ),
        Err(e) => run.abort(format!("the session did not survive the inputs: {e}")),
    }
    let mut fresh = connect_to("postgres");
    assert_eq!(one_i64(&mut fresh, "SELECT 1::int8"), 1);
    assert_log_clean(&format!("fuzz::{} (seed {:#x})", run.name, run.seed));
}

/// An input for a failure report: the text (Rust escapes) and, when not UTF-8 or short, its bytes.
fn show(b: &[u8]) -> String {
    const MAX: usize = 120;
    let cut = &b[..b.len().min(MAX)];
    let more = if b.len() > MAX {
        format!("… ({} bytes in all)", b.len())
    } else {
        String::new()
    };
    match std::str::from_utf8(b) {
        Ok(s) if s.len() <= MAX => format!("{s:?}"),
        _ => format!(
            "{:?}{more} (hex {})",
            String::from_utf8_lossy(cut),
            hex::encode(cut)
        ),
    }
}

// ------------------------------------------------------------------------------------------
// Wire types: the raw bytes of objectid, text, timestamptz and interval values

/// A text result as bytes: a SQL_ASCII database may send text that is not UTF-8.
struct RawText(Vec<u8>);

impl<'a> FromSql<'a> for RawText {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(RawText(raw.to_vec()))
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::TEXT
    }
}

/// A timestamptz as PostgreSQL keeps it: microseconds since 2000-01-01 00:00:00 UTC, with
/// i64::MIN and i64::MAX for -infinity and infinity.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ts(i64);

impl<'a> FromSql<'a> for Ts {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Ts(i64::from_be_bytes(raw.try_into()?)))
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMPTZ
    }
}

impl ToSql for Ts {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.extend_from_slice(&self.0.to_be_bytes());
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMPTZ
    }
    to_sql_checked!();
}

/// An interval's three fields, as interval_send writes them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Iv {
    micros: i64,
    days: i32,
    months: i32,
}

const IV_INFINITY: Iv = Iv {
    micros: i64::MAX,
    days: i32::MAX,
    months: i32::MAX,
};
const IV_NEG_INFINITY: Iv = Iv {
    micros: i64::MIN,
    days: i32::MIN,
    months: i32::MIN,
};

impl ToSql for Iv {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.extend_from_slice(&self.micros.to_be_bytes());
        out.extend_from_slice(&self.days.to_be_bytes());
        out.extend_from_slice(&self.months.to_be_bytes());
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
    to_sql_checked!();
}

// ------------------------------------------------------------------------------------------
// Generators

const HEX_DIGITS: &[u8] = b"0123456789abcdefABCDEF";

/// An id's 12 bytes: mostly random, sometimes the extremes.
fn random_id(rng: &mut StdRng) -> [u8; 12] {
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
fn random_text(rng: &mut StdRng) -> Vec<u8> {
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
fn binary_input(rng: &mut StdRng) -> Vec<u8> {
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
const NEG_INF: i64 = i64::MIN;
const POS_INF: i64 = i64::MAX;
/// The first and one past the last finite timestamp: 4714-11-24 00:00:00 BC and 294277-01-01.
const PG_MIN_TS: i64 = -211_813_488_000_000_000;
const PG_END_TS: i64 = 9_223_371_331_200_000_000;
/// 1970-01-01 00:00:00 UTC.
const UNIX_EPOCH: i64 = -946_684_800_000_000;
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

fn random_time(rng: &mut StdRng) -> i64 {
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

fn random_interval(rng: &mut StdRng, infinite: bool) -> Iv {
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

// ------------------------------------------------------------------------------------------
// The model: what docs/reference.md says each function gives

const OID_MIN: [u8; 12] = [0; 12];
const OID_MAX: [u8; 12] = [0xff; 12];

fn oid(sec: i128, fill: u8) -> [u8; 12] {
    let mut id = [fill; 12];
    id[..4].copy_from_slice(&u32::try_from(sec).expect("a 32-bit second").to_be_bytes());
    id
}

/// Microseconds since 1970 of a finite time.
fn unix_us(t: i64) -> i128 {
    i128::from(t) - i128::from(UNIX_EPOCH)
}

fn sec_floor(t: i64) -> i128 {
    unix_us(t).div_euclid(1_000_000)
}

fn sec_ceil(t: i64) -> i128 {
    -(-unix_us(t)).div_euclid(1_000_000)
}

/// The PostgreSQL time of an objectid's second.
fn oid_time(id: &[u8]) -> i64 {
    let s = u32::from_be_bytes(id[..4].try_into().unwrap());
    UNIX_EPOCH + i64::from(s) * 1_000_000
}

const U32_MAX: i128 = u32::MAX as i128;

/// objectid_from_time and gen_objectid_at: the second, or an error outside 1970 .. 2106-02-07 06:28:15.
fn m_from_time(t: i64) -> Option<[u8; 12]> {
    if t == NEG_INF || t == POS_INF {
        return None;
    }
    let s = sec_floor(t);
    (0..=U32_MAX).contains(&s).then(|| oid(s, 0))
}

fn m_bound(t: i64, fill: u8) -> [u8; 12] {
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
fn m_upper_before(t: i64) -> [u8; 12] {
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
fn m_first_at_or_after(t: i64) -> Option<[u8; 12]> {
    match t {
        NEG_INF => Some(OID_MIN),
        POS_INF => None,
        _ => first_from(sec_ceil(t)),
    }
}

/// objectid_first_after: the smallest id with objectid_timestamp(id) > t, or NULL.
fn m_first_after(t: i64) -> Option<[u8; 12]> {
    match t {
        NEG_INF => Some(OID_MIN),
        POS_INF => None,
        _ => first_from(sec_floor(t) + 1),
    }
}

/// objectid_last_at_or_before: the largest id with objectid_timestamp(id) <= t, or NULL.
fn m_last_at_or_before(t: i64) -> Option<[u8; 12]> {
    match t {
        NEG_INF => None,
        POS_INF => Some(OID_MAX),
        _ => last_until(sec_floor(t)),
    }
}

/// objectid_last_before: the largest id with objectid_timestamp(id) < t, or NULL.
fn m_last_before(t: i64) -> Option<[u8; 12]> {
    match t {
        NEG_INF => None,
        POS_INF => Some(OID_MAX),
        _ => last_until(sec_ceil(t) - 1),
    }
}

fn step(id: &[u8; 12], up: bool) -> [u8; 12] {
    let n = u128::from_be_bytes({
        let mut b = [0u8; 16];
        b[4..].copy_from_slice(id);
        b
    });
    let n = if up { n + 1 } else { n - 1 };
    n.to_be_bytes()[4..].try_into().unwrap()
}

const V7_MAX_MS: i128 = (1 << 48) - 1;

fn ms_floor(t: i64) -> i128 {
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
fn m_v7_from_time(t: i64) -> Option<[u8; 16]> {
    if t == NEG_INF || t == POS_INF {
        return None;
    }
    let ms = ms_floor(t);
    (0..=V7_MAX_MS).contains(&ms).then(|| v7_first_of_ms(ms))
}

fn m_v7_bound(t: i64, upper: bool) -> [u8; 16] {
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

fn m_v7_upper_before(t: i64) -> [u8; 16] {
    if t == NEG_INF || t == POS_INF {
        m_v7_bound(t, true)
    } else {
        m_v7_bound(t - 1, true)
    }
}

/// The Unix milliseconds of a v7's first 48 bits.
fn v7_ms(u: &[u8]) -> i128 {
    let mut b = [0u8; 8];
    b[2..].copy_from_slice(&u[..6]);
    i128::from(u64::from_be_bytes(b))
}

/// What uuid_extract_timestamp documents for a value: the millisecond of a v7 of the RFC variant;
/// NULL for other versions and variants (no v1 comes out of these functions).
fn extracted(u: &[u8]) -> Option<i64> {
    (u[8] & 0xc0 == 0x80 && u[6] >> 4 == 7)
        .then(|| (v7_ms(u) * 1_000 + i128::from(UNIX_EPOCH)) as i64)
}

fn parse_uuid(s: &str) -> Option<Vec<u8>> {
    hex::decode(s.replace('-', ""))
        .ok()
        .filter(|b| b.len() == 16)
}

fn show_time(t: i64) -> String {
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

// ------------------------------------------------------------------------------------------
// Text input

fn text_function_sql(param_type: &str, to_text: &str, soft: bool) -> String {
    let soft = if soft {
        "soft_valid := pg_input_is_valid(v, 'objectid');
            SELECT e.message, e.sql_error_code INTO soft_msg, soft_st
              FROM pg_input_error_info(v, 'objectid') AS e;"
    } else {
        ""
    };
    format!(
        "CREATE FUNCTION fuzz_text(inputs {param_type}[])
            RETURNS TABLE (n int, cast_res text, cast_st text, cast_msg text, in_res text,
                           in_st text, in_msg text, sent bytea, round_trip bool,
                           soft_valid bool, soft_st text, soft_msg text)
            LANGUAGE plpgsql AS $fn$
        DECLARE
            v text;
            o objectid;
        BEGIN
            FOR i IN 1 .. coalesce(array_length(inputs, 1), 0) LOOP
                n := i;
                cast_res := NULL; cast_st := NULL; cast_msg := NULL; in_res := NULL; in_st := NULL;
                in_msg := NULL; sent := NULL; round_trip := NULL; soft_valid := NULL; soft_st := NULL;
                soft_msg := NULL;
                v := {to_text};
                BEGIN
                    o := v::objectid;
                    cast_res := o::text;
                    sent := objectid_send(o);
                    round_trip := cast_res::objectid = o;
                EXCEPTION WHEN OTHERS THEN
                    cast_st := SQLSTATE; cast_msg := SQLERRM;
                END;
                BEGIN
                    in_res := objectid_in(v::cstring)::text;
                EXCEPTION WHEN OTHERS THEN
                    in_st := SQLSTATE; in_msg := SQLERRM;
                END;
                {soft}
                RETURN NEXT;
            END LOOP;
        END
        $fn$"
    )
}

/// The documented value of a text input: 24 hex digits in either case, shown in lower case.
fn m_text(input: &[u8]) -> Option<String> {
    (input.len() == 24 && input.iter().all(u8::is_ascii_hexdigit))
        .then(|| String::from_utf8(input.to_ascii_lowercase()).unwrap())
}

/// How an error message quotes bad input (docs/reference.md): its first 100 characters, and
/// "..." after them when there are more.
fn m_quote(s: &str) -> String {
    match s.char_indices().nth(100) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s.to_string(),
    }
}

fn check_text_message(input: &[u8], msg: Option<&[u8]>) -> Result<(), String> {
    let Some(msg) = msg else {
        return Err("no message".into());
    };
    let ok = match std::str::from_utf8(input) {
        // docs/reference.md: ERROR 22P02 invalid input syntax for type objectid: "…"
        Ok(s) => {
            msg == format!("invalid input syntax for type objectid: \"{}\"", m_quote(s)).as_bytes()
        }
        // How bytes that are not UTF-8 are shown is not documented: the frame only.
        Err(_) => {
            msg.starts_with(b"invalid input syntax for type objectid: \"") && msg.ends_with(b"\"")
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!("message {:?}", String::from_utf8_lossy(msg)))
    }
}

/// Runs `inputs` through fuzz_text in `c` and checks every row against the model.
fn run_text_batch(
    run: &mut Run,
    c: &mut Client,
    db: &str,
    inputs: &[Vec<u8>],
    soft: bool,
    utf8: bool,
) {
    let rows = if utf8 {
        let texts: Vec<&str> = inputs
            .iter()
            .map(|b| std::str::from_utf8(b).unwrap())
            .collect();
        c.query("SELECT * FROM fuzz_text($1)", &[&texts])
    } else {
        let bytes: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        c.query("SELECT * FROM fuzz_text($1)", &[&bytes])
    }
    .unwrap_or_else(|e| {
        run.abort(format!(
            "a batch of text inputs failed as a whole in {db}: {e:?}"
        ))
    });
    assert_eq!(rows.len(), inputs.len(), "one row per input");
    for (row, input) in rows.iter().zip(inputs) {
        let n: i32 = row.get("n");
        let cast_res: Option<String> = row.get("cast_res");
        let cast_st: Option<String> = row.get("cast_st");
        let cast_msg: Option<RawText> = row.get("cast_msg");
        let in_res: Option<String> = row.get("in_res");
        let in_st: Option<String> = row.get("in_st");
        let in_msg: Option<RawText> = row.get("in_msg");
        let sent: Option<Vec<u8>> = row.get("sent");
        let round_trip: Option<bool> = row.get("round_trip");
        let soft_valid: Option<bool> = row.get("soft_valid");
        let soft_st: Option<String> = row.get("soft_st");
        let soft_msg: Option<RawText> = row.get("soft_msg");
        let mut problems = Vec::new();
        match m_text(input) {
            Some(hex) => {
                if cast_res.as_deref() != Some(hex.as_str()) || cast_st.is_some() {
                    problems.push(format!(
                        "text::objectid gave {cast_res:?}, error {cast_st:?}, expected {hex}"
                    ));
                }
                if in_res.as_deref() != Some(hex.as_str()) || in_st.is_some() {
                    problems.push(format!(
                        "objectid_in gave {in_res:?}, error {in_st:?}, expected {hex}"
                    ));
                }
                if sent.as_deref() != Some(hex::decode(&hex).unwrap().as_slice()) {
                    problems.push(format!("objectid_send gave {sent:02x?}"));
                }
                if round_trip != Some(true) {
                    problems.push(format!("text out and in again: equal = {round_trip:?}"));
                }
                if soft && (soft_valid != Some(true) || soft_st.is_some()) {
                    problems.push(format!(
                        "pg_input_is_valid = {soft_valid:?}, pg_input_error_info code {soft_st:?}"
                    ));
                }
            }
            None => {
                for (what, res, st, msg) in [
                    ("text::objectid", &cast_res, &cast_st, &cast_msg),
                    ("objectid_in", &in_res, &in_st, &in_msg),
                ] {
                    if res.is_some() || st.as_deref() != Some("22P02") {
                        problems.push(format!("{what} gave {res:?}, error {st:?}, expected 22P02"));
                    } else if let Err(e) =
                        check_text_message(input, msg.as_ref().map(|m| m.0.as_slice()))
                    {
                        problems.push(format!("{what}: {e}"));
                    }
                }
                if soft {
                    if soft_valid != Some(false) || soft_st.as_deref() != Some("22P02") {
                        problems.push(format!(
                            "pg_input_is_valid = {soft_valid:?}, pg_input_error_info code {soft_st:?}, expected false and 22P02"
                        ));
                    } else if let Err(e) =
                        check_text_message(input, soft_msg.as_ref().map(|m| m.0.as_slice()))
                    {
                        problems.push(format!("pg_input_error_info: {e}"));
                    }
                }
            }
        }
        if !problems.is_empty() {
            run.fail(format!(
                "text input #{n} in {db} {}: {}",
                show(input),
                problems.join("; ")
            ));
        }
    }
}

/// Create a database of the given encoding with the extension.
fn fresh_db_encoded(name: &str, encoding: &str) -> Client {
    let mut c = fresh_database_encoded(name, encoding);
    c.batch_execute("CREATE EXTENSION pg_objectid").unwrap();
    c
}

#[test]
fn text_input() {
    let mut run = Run::new("text_input");
    let total = run.count(40_000);
    let inputs: Vec<Vec<u8>> = (0..total).map(|_| random_text(&mut run.rng)).collect();
    let valid = inputs.iter().filter(|i| m_text(i).is_some()).count();

    // Every input, as bytes, in a database that stores any byte but NUL.
    let mut ascii = fresh_db_encoded("t_fuzz_text_ascii", "SQL_ASCII");
    let soft = server_version(&mut ascii) >= 160000;
    ascii
        .batch_execute(&text_function_sql(
            "bytea",
            "convert_from(inputs[i], 'SQL_ASCII')",
            soft,
        ))
        .unwrap();
    let ascii_pid = backend_pid(&mut ascii);
    for batch in inputs.chunks(1_000) {
        run_text_batch(
            &mut run,
            &mut ascii,
            "a SQL_ASCII database",
            batch,
            soft,
            false,
        );
    }

    // The UTF-8 ones again as text in a UTF-8 database, as clients send them.
    let utf8_inputs: Vec<Vec<u8>> = inputs
        .iter()
        .filter(|i| std::str::from_utf8(i).is_ok())
        .cloned()
        .collect();
    let mut utf8 = fresh_db("t_fuzz_text_utf8");
    utf8.batch_execute(&text_function_sql("text", "inputs[i]", soft))
        .unwrap();
    let utf8_pid = backend_pid(&mut utf8);
    for batch in utf8_inputs.chunks(1_000) {
        run_text_batch(&mut run, &mut utf8, "a UTF-8 database", batch, soft, true);
    }

    assert_server_survived(&run, &mut ascii, ascii_pid);
    assert_server_survived(&run, &mut utf8, utf8_pid);
    let detail = format!(
        "{valid} valid; {} again in UTF-8; soft input checked: {soft}",
        utf8_inputs.len()
    );
    run.finish(total, &detail);
}

// ------------------------------------------------------------------------------------------
// Binary receive

fn binary_error_ok(len: usize, e: &postgres::Error) -> Result<(), String> {
    let Some(db) = e.as_db_error() else {
        return Err(format!("not a server error: {e}"));
    };
    let want = format!("invalid binary length for type objectid: {len} bytes, expected 12");
    if db.code().code() != "22P03" || db.message() != want {
        return Err(format!(
            "error {} {:?}, expected 22P03 {want:?}",
            db.code().code(),
            db.message()
        ));
    }
    Ok(())
}

const COPY_HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

fn copy_rows(rows: &[(i32, &[u8])]) -> Vec<u8> {
    let mut out = COPY_HEADER.to_vec();
    for (n, bytes) in rows {
        out.extend_from_slice(&2i16.to_be_bytes());
        out.extend_from_slice(&4i32.to_be_bytes());
        out.extend_from_slice(&n.to_be_bytes());
        out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    out.extend_from_slice(&(-1i16).to_be_bytes());
    out
}

fn copy_in(c: &mut Client, data: &[u8]) -> Result<u64, postgres::Error> {
    let mut w = c.copy_in("COPY fuzz_copy (n, id) FROM STDIN (FORMAT binary)")?;
    // A failed write shows up in finish().
    let _ = w.write_all(data);
    w.finish()
}

#[test]
fn binary_receive() {
    let mut run = Run::new("binary_receive");
    let total = run.count(20_000);
    let inputs: Vec<Vec<u8>> = (0..total).map(|_| binary_input(&mut run.rng)).collect();
    let mut c = fresh_db("t_fuzz_binary");
    let pid = backend_pid(&mut c);

    // 1. Each input alone as a parameter of type objectid, its value sent back in binary and text.
    let stmt = c
        .prepare("SELECT $1::objectid, $1::objectid::text")
        .unwrap();
    for (n, input) in inputs.iter().enumerate() {
        match c.query_one(&stmt, &[&Raw(input.clone())]) {
            Ok(row) => {
                let back: Raw = row.get(0);
                let text: String = row.get(1);
                if input.len() != 12 || back.0 != *input || text != hex::encode(input) {
                    run.fail(format!(
                        "parameter #{n} {}: accepted, sent back {} as text {text:?}",
                        show(input),
                        hex::encode(&back.0)
                    ));
                }
            }
            Err(e) => {
                if e.as_db_error().is_none() {
                    run.abort(format!(
                        "parameter #{n} {} lost the connection: {e:?}",
                        show(input)
                    ));
                }
                if input.len() == 12 {
                    run.fail(format!(
                        "parameter #{n} {}: 12 bytes refused: {e:?}",
                        show(input)
                    ));
                } else if let Err(why) = binary_error_ok(input.len(), &e) {
                    run.fail(format!("parameter #{n} {}: {why}", show(input)));
                }
            }
        }
    }

    // 2. The valid ones as elements of objectid[] parameters.
    let valid: Vec<&Vec<u8>> = inputs.iter().filter(|i| i.len() == 12).collect();
    let invalid: Vec<&Vec<u8>> = inputs.iter().filter(|i| i.len() != 12).collect();
    let array_stmt = c
        .prepare("SELECT u.n::int, u.x, u.x::text FROM unnest($1::objectid[]) WITH ORDINALITY AS u(x, n) ORDER BY u.n")
        .unwrap();
    for batch in valid.chunks(2_000) {
        let raws: Vec<Raw> = batch.iter().map(|b| Raw(b.to_vec())).collect();
        let rows = c.query(&array_stmt, &[&raws]).unwrap_or_else(|e| {
            run.abort(format!("an objectid[] of valid elements failed: {e:?}"))
        });
        assert_eq!(rows.len(), batch.len());
        for (row, input) in rows.iter().zip(batch) {
            let back: Raw = row.get(1);
            let text: String = row.get(2);
            if back.0 != **input || text != hex::encode(input) {
                run.fail(format!(
                    "array element {}: came back as {} / {text:?}",
                    show(input),
                    hex::encode(&back.0)
                ));
            }
        }
    }
    // A wrong length anywhere in an array refuses the array with the element's 22P03.
    let array_bad = invalid.len().min(run.count(500));
    for input in invalid.iter().take(array_bad) {
        let mut raws: Vec<Raw> = (0..run.rng.random_range(0..8))
            .map(|_| Raw(random_id(&mut run.rng).to_vec()))
            .collect();
        let at = run.rng.random_range(0..=raws.len());
        raws.insert(at, Raw(input.to_vec()));
        match c.query(&array_stmt, &[&raws]) {
            Ok(_) => run.fail(format!(
                "array element {} of {} was accepted",
                show(input),
                raws.len()
            )),
            Err(e) => {
                if e.as_db_error().is_none() {
                    run.abort(format!(
                        "array with element {} lost the connection: {e:?}",
                        show(input)
                    ));
                }
                if let Err(why) = binary_error_ok(input.len(), &e) {
                    run.fail(format!("array element {}: {why}", show(input)));
                }
            }
        }
    }

    // 3. COPY (FORMAT binary): the valid ones in one COPY, each of some wrong ones in its own.
    c.batch_execute("CREATE TABLE fuzz_copy (n int, id objectid)")
        .unwrap();
    let rows: Vec<(i32, &[u8])> = valid
        .iter()
        .enumerate()
        .map(|(n, b)| (n as i32, b.as_slice()))
        .collect();
    match copy_in(&mut c, &copy_rows(&rows)) {
        Ok(loaded) => assert_eq!(loaded as usize, valid.len()),
        Err(e) => run.abort(format!("COPY of {} valid ids failed: {e:?}", valid.len())),
    }
    let loaded = c
        .query("SELECT id, id::text FROM fuzz_copy ORDER BY n", &[])
        .unwrap();
    assert_eq!(loaded.len(), valid.len());
    for (row, input) in loaded.iter().zip(&valid) {
        let back: Raw = row.get(0);
        let text: String = row.get(1);
        if back.0 != **input || text != hex::encode(input) {
            run.fail(format!(
                "COPY row {}: came back as {} / {text:?}",
                show(input),
                hex::encode(&back.0)
            ));
        }
    }
    c.batch_execute("TRUNCATE fuzz_copy").unwrap();
    let copy_bad = invalid.len().min(run.count(200));
    for input in invalid.iter().skip(array_bad).take(copy_bad) {
        let good: Vec<[u8; 12]> = (0..run.rng.random_range(0..4))
            .map(|_| random_id(&mut run.rng))
            .collect();
        let mut rows: Vec<(i32, &[u8])> = good
            .iter()
            .enumerate()
            .map(|(n, b)| (n as i32, b.as_slice()))
            .collect();
        let at = run.rng.random_range(0..=rows.len());
        rows.insert(at, (-1, input.as_slice()));
        match copy_in(&mut c, &copy_rows(&rows)) {
            Ok(_) => run.fail(format!("COPY row {} was accepted", show(input))),
            Err(e) => {
                if e.as_db_error().is_none() {
                    run.abort(format!(
                        "COPY of {} lost the connection: {e:?}",
                        show(input)
                    ));
                }
                if let Err(why) = binary_error_ok(input.len(), &e) {
                    run.fail(format!("COPY row {}: {why}", show(input)));
                }
            }
        }
    }
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM fuzz_copy"),
        0,
        "a refused COPY loads nothing"
    );

    assert_server_survived(&run, &mut c, pid);
    let detail = format!(
        "{} valid; each as a parameter, the valid ones also in arrays and COPY, {array_bad} wrong in arrays, {copy_bad} in COPY",
        valid.len()
    );
    run.finish(total, &detail);
}

// ------------------------------------------------------------------------------------------
// The bytea cast

const BYTEA_FUNCTION: &str = "CREATE FUNCTION fuzz_bytea(inputs bytea[])
    RETURNS TABLE (n int, res text, back bytea, st text, msg text)
    LANGUAGE plpgsql AS $fn$
DECLARE
    o objectid;
BEGIN
    FOR i IN 1 .. coalesce(array_length(inputs, 1), 0) LOOP
        n := i; res := NULL; back := NULL; st := NULL; msg := NULL;
        BEGIN
            o := inputs[i]::objectid;
            res := o::text;
            back := o::bytea;
        EXCEPTION WHEN OTHERS THEN
            st := SQLSTATE; msg := SQLERRM;
        END;
        RETURN NEXT;
    END LOOP;
END
$fn$";

#[test]
fn bytea_cast() {
    let mut run = Run::new("bytea_cast");
    let total = run.count(20_000);
    let inputs: Vec<Vec<u8>> = (0..total).map(|_| binary_input(&mut run.rng)).collect();
    let mut c = fresh_db("t_fuzz_bytea");
    c.batch_execute(BYTEA_FUNCTION).unwrap();
    let pid = backend_pid(&mut c);
    for batch in inputs.chunks(1_000) {
        let params: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
        let rows = c
            .query("SELECT * FROM fuzz_bytea($1)", &[&params])
            .unwrap_or_else(|e| {
                run.abort(format!("a batch of bytea inputs failed as a whole: {e:?}"))
            });
        assert_eq!(rows.len(), batch.len());
        for (row, input) in rows.iter().zip(batch) {
            let res: Option<String> = row.get("res");
            let back: Option<Vec<u8>> = row.get("back");
            let st: Option<String> = row.get("st");
            let msg: Option<String> = row.get("msg");
            let ok = if input.len() == 12 {
                res.as_deref() == Some(hex::encode(input).as_str())
                    && back.as_deref() == Some(input.as_slice())
                    && st.is_none()
            } else {
                // docs/reference.md: a bytea of another length is ERROR 22P03.
                res.is_none()
                    && st.as_deref() == Some("22P03")
                    && msg.as_deref().is_some_and(|m| {
                        m.starts_with("invalid length for type objectid: ")
                            && m.ends_with(&format!(" has {} bytes, expected 12", input.len()))
                    })
            };
            if !ok {
                run.fail(format!(
                    "bytea {}: gave {res:?} (back {back:02x?}), error {st:?} {msg:?}",
                    show(input)
                ));
            }
        }
    }
    assert_server_survived(&run, &mut c, pid);
    let valid = inputs.iter().filter(|i| i.len() == 12).count();
    run.finish(total, &format!("{valid} valid"));
}

// ------------------------------------------------------------------------------------------
// Functions taking a timestamptz

#[derive(Clone, Copy, PartialEq)]
enum Returns {
    ObjectId,
    Uuid,
}

/// The functions of one timestamptz argument, and whether each is in every build.
const TIME_FUNCTIONS: &[(&str, Returns, bool)] = &[
    ("objectid_from_time", Returns::ObjectId, true),
    ("gen_objectid_at", Returns::ObjectId, true),
    ("objectid_lower_bound", Returns::ObjectId, true),
    ("objectid_upper_bound", Returns::ObjectId, true),
    ("objectid_upper_bound_before", Returns::ObjectId, true),
    ("objectid_first_at_or_after", Returns::ObjectId, false),
    ("objectid_first_after", Returns::ObjectId, false),
    ("objectid_last_at_or_before", Returns::ObjectId, false),
    ("objectid_last_before", Returns::ObjectId, false),
    ("uuidv7_from_time", Returns::Uuid, true),
    ("uuidv7_at", Returns::Uuid, true),
    ("uuidv7_lower_bound", Returns::Uuid, true),
    ("uuidv7_upper_bound", Returns::Uuid, true),
    ("uuidv7_upper_bound_before", Returns::Uuid, true),
];

fn time_function_sql(functions: &[(&str, Returns)]) -> String {
    let mut body = String::new();
    for (k, (name, returns)) in functions.iter().enumerate() {
        let j = k + 1;
        let (var, text, time) = match returns {
            Returns::ObjectId => ("o", "o::text", "objectid_timestamp(o)"),
            Returns::Uuid => ("u", "u::text", "public.uuid_extract_timestamp(u)"),
        };
        body.push_str(&format!(
            "
                BEGIN
                    {var} := public.{name}(ts[i]);
                    res[{j}] := {text};
                    ts_out[{j}] := {time};
                EXCEPTION WHEN OTHERS THEN
                    st[{j}] := SQLSTATE; msg[{j}] := SQLERRM;
                END;"
        ));
    }
    format!(
        "CREATE FUNCTION fuzz_time(ts timestamptz[])
            RETURNS TABLE (n int, res text[], st text[], msg text[], ts_out timestamptz[])
            LANGUAGE plpgsql AS $fn$
        DECLARE
            o objectid;
            u uuid;
        BEGIN
            FOR i IN 1 .. coalesce(array_length(ts, 1), 0) LOOP
                n := i;
                res := array_fill(NULL::text, ARRAY[{k}]);
                st := res;
                msg := res;
                ts_out := array_fill(NULL::timestamptz, ARRAY[{k}]);
                {body}
                RETURN NEXT;
            END LOOP;
        END
        $fn$",
        k = functions.len()
    )
}

/// What one call gave: a value (its text and the time the server reads from it), NULL, or an error.
struct Call<'a> {
    res: Option<&'a str>,
    st: Option<&'a str>,
    msg: Option<&'a str>,
    time: Option<i64>,
}

/// Checks one objectid-valued call against the model; returns what is wrong.
fn check_objectid_call(
    name: &str,
    t: i64,
    call: &Call,
    gen_seen: &mut HashSet<[u8; 12]>,
) -> Result<(), String> {
    let got: Option<[u8; 12]> = match call.res {
        Some(s) => Some(
            hex::decode(s)
                .ok()
                .and_then(|b| <[u8; 12]>::try_from(b).ok())
                .ok_or_else(|| format!("not an objectid's text: {s:?}"))?,
        ),
        None => None,
    };
    if let Some(id) = got {
        // objectid_timestamp of the result is the second in its first 4 bytes.
        if call.time != Some(oid_time(&id)) {
            return Err(format!(
                "objectid_timestamp({}) gave {:?}",
                hex::encode(id),
                call.time
            ));
        }
    }
    let value = |want: [u8; 12]| -> Result<(), String> {
        match (got, call.st) {
            (Some(id), None) if id == want => Ok(()),
            _ => Err(format!(
                "gave {:?} error {:?} {:?}, expected {}",
                call.res,
                call.st,
                call.msg,
                hex::encode(want)
            )),
        }
    };
    let value_or_null = |want: Option<[u8; 12]>| -> Result<(), String> {
        match (want, got, call.st) {
            (None, None, None) => Ok(()),
            (Some(w), Some(id), None) if id == w => Ok(()),
            _ => Err(format!(
                "gave {:?} error {:?} {:?}, expected {}",
                call.res,
                call.st,
                call.msg,
                want.map_or("NULL".into(), hex::encode)
            )),
        }
    };
    let out_of_range = || -> Result<(), String> {
        // docs/reference.md: ERROR 22008 timestamp out of range for type objectid: "…"
        let msg_ok = call.msg.is_some_and(|m| {
            m.starts_with("timestamp out of range for type objectid: \"")
                && m.ends_with('"')
                && match t {
                    POS_INF => m.ends_with("\"infinity\""),
                    NEG_INF => m.ends_with("\"-infinity\""),
                    _ => true,
                }
        });
        if call.res.is_none() && call.st == Some("22008") && msg_ok {
            Ok(())
        } else {
            Err(format!(
                "gave {:?} error {:?} {:?}, expected 22008",
                call.res, call.st, call.msg
            ))
        }
    };
    match name {
        "objectid_from_time" => match m_from_time(t) {
            Some(want) => {
                value(want)?;
                // The smallest id of t's second: objectid_timestamp(it) <= t < it + 1 s.
                let at = call.time.unwrap();
                if !(at <= t && t - at < 1_000_000) {
                    return Err(format!(
                        "objectid_timestamp of the result {at} is not the second of t"
                    ));
                }
                Ok(())
            }
            None => out_of_range(),
        },
        "gen_objectid_at" => match m_from_time(t) {
            Some(want) => {
                let id = got.filter(|_| call.st.is_none()).ok_or_else(|| {
                    format!(
                        "gave {:?} error {:?} {:?}, expected an id of second {}",
                        call.res,
                        call.st,
                        call.msg,
                        hex::encode(&want[..4])
                    )
                })?;
                if id[..4] != want[..4] {
                    return Err(format!(
                        "gave {}, expected the second {}",
                        hex::encode(id),
                        hex::encode(&want[..4])
                    ));
                }
                // It shares the generator's counter: every id it makes is new.
                if !gen_seen.insert(id) {
                    return Err(format!("gave {} a second time", hex::encode(id)));
                }
                Ok(())
            }
            None => out_of_range(),
        },
        "objectid_lower_bound" => {
            let want = m_bound(t, 0);
            value(want)?;
            // objectid_timestamp(objectid_lower_bound(t)) <= t, unless t is before every id.
            if want != OID_MIN && call.time.unwrap() > t {
                return Err("objectid_timestamp(objectid_lower_bound(t)) > t".into());
            }
            Ok(())
        }
        "objectid_upper_bound" => value(m_bound(t, 0xff)),
        "objectid_upper_bound_before" => value(m_upper_before(t)),
        "objectid_first_at_or_after"
        | "objectid_first_after"
        | "objectid_last_at_or_before"
        | "objectid_last_before" => {
            // The model's answer, and the condition on objectid_timestamp(id) as a test.
            type Condition = fn(i64, i64) -> bool;
            let (want, satisfies): (Option<[u8; 12]>, Condition) = match name {
                "objectid_first_at_or_after" => (m_first_at_or_after(t), |a, t| a >= t),
                "objectid_first_after" => (m_first_after(t), |a, t| a > t),
                "objectid_last_at_or_before" => (m_last_at_or_before(t), |a, t| a <= t),
                _ => (m_last_before(t), |a, t| a < t),
            };
            value_or_null(want)?;
            // The documented relation: the result satisfies objectid_timestamp(id) <op> t and
            // its neighbour on the open side does not (or there is none).
            if let Some(id) = got {
                if !satisfies(call.time.unwrap(), t) {
                    return Err(format!(
                        "objectid_timestamp({}) does not satisfy the condition",
                        hex::encode(id)
                    ));
                }
                let first = name.starts_with("objectid_first");
                let edge = if first { OID_MIN } else { OID_MAX };
                if id != edge {
                    let neighbour = step(&id, !first);
                    if satisfies(oid_time(&neighbour), t) {
                        return Err(format!(
                            "{} also satisfies the condition",
                            hex::encode(neighbour)
                        ));
                    }
                }
            }
            Ok(())
        }
        _ => unreachable!("{name}"),
    }
}

fn check_uuid_call(name: &str, t: i64, call: &Call) -> Result<(), String> {
    let got = match call.res {
        Some(s) => Some(parse_uuid(s).ok_or_else(|| format!("not a uuid's text: {s:?}"))?),
        None => None,
    };
    if let Some(u) = &got {
        // uuid_extract_timestamp reads the millisecond of a v7, NULL for anything else.
        if call.time != extracted(u) {
            return Err(format!(
                "uuid_extract_timestamp({}) gave {:?}, expected {:?}",
                hex::encode(u),
                call.time,
                extracted(u)
            ));
        }
    }
    let value = |want: [u8; 16]| -> Result<(), String> {
        match (&got, call.st) {
            (Some(u), None) if u.as_slice() == want => Ok(()),
            _ => Err(format!(
                "gave {:?} error {:?} {:?}, expected {}",
                call.res,
                call.st,
                call.msg,
                hex::encode(want)
            )),
        }
    };
    let out_of_range = || -> Result<(), String> {
        // docs/reference.md: SQLSTATE 22008 timestamp out of range for UUID version 7.
        if got.is_none()
            && call.st == Some("22008")
            && call.msg == Some("timestamp out of range for UUID version 7")
        {
            Ok(())
        } else {
            Err(format!(
                "gave {:?} error {:?} {:?}, expected 22008",
                call.res, call.st, call.msg
            ))
        }
    };
    match name {
        "uuidv7_from_time" => match m_v7_from_time(t) {
            Some(want) => value(want),
            None => out_of_range(),
        },
        "uuidv7_at" => match m_v7_from_time(t) {
            Some(first) => {
                let u = got.filter(|_| call.st.is_none()).ok_or_else(|| {
                    format!(
                        "gave {:?} error {:?} {:?}, expected a v7",
                        call.res, call.st, call.msg
                    )
                })?;
                // A v7 of t's millisecond whose 12-bit fraction is t's microseconds in it.
                let fraction = (u16::from(u[6] & 0x0f) << 8) | u16::from(u[7]);
                let want_fraction = (unix_us(t).rem_euclid(1_000) * 4096 / 1_000) as u16;
                if u[..6] != first[..6]
                    || u[6] >> 4 != 7
                    || u[8] >> 6 != 0b10
                    || fraction != want_fraction
                {
                    return Err(format!(
                        "gave {}, expected millisecond {}, version 7, variant 10, fraction {want_fraction:#05x}",
                        hex::encode(&u),
                        hex::encode(&first[..6])
                    ));
                }
                Ok(())
            }
            None => out_of_range(),
        },
        "uuidv7_lower_bound" => value(m_v7_bound(t, false)),
        "uuidv7_upper_bound" => value(m_v7_bound(t, true)),
        "uuidv7_upper_bound_before" => value(m_v7_upper_before(t)),
        _ => unreachable!("{name}"),
    }
}

/// Functions of `TIME_FUNCTIONS` this build has in schema public, taking one timestamptz.
fn present_time_functions(c: &mut Client) -> Vec<(&'static str, Returns)> {
    let names: Vec<String> = c
        .query(
            "SELECT proname::text FROM pg_proc WHERE pronamespace = 'public'::regnamespace \
             AND pronargs = 1 AND proargtypes[0] = 'timestamptz'::regtype",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut present = Vec::new();
    for (name, returns, always) in TIME_FUNCTIONS {
        if names.iter().any(|n| n == name) {
            present.push((*name, *returns));
        } else if *always {
            panic!("{name}(timestamptz) is missing from the extension");
        } else {
            println!("fuzz::time_functions: {name}(timestamptz) is not in this build; skipped");
        }
    }
    present
}

#[test]
fn time_functions() {
    let mut run = Run::new("time_functions");
    let total = run.count(30_000);
    let inputs: Vec<i64> = (0..total).map(|_| random_time(&mut run.rng)).collect();
    let mut c = fresh_db("t_fuzz_time");
    let functions = present_time_functions(&mut c);
    c.batch_execute(&time_function_sql(&functions)).unwrap();
    let pid = backend_pid(&mut c);
    let mut gen_seen = HashSet::new();
    let zones = [
        "UTC",
        "America/New_York",
        "Asia/Kathmandu",
        "Pacific/Chatham",
        "Etc/GMT+12",
    ];
    for batch in inputs.chunks(1_000) {
        // The functions are about instants: the session's time zone must not matter.
        let zone = *zones.choose(&mut run.rng).unwrap();
        c.batch_execute(&format!("SET TimeZone = '{zone}'"))
            .unwrap();
        let params: Vec<Ts> = batch.iter().map(|t| Ts(*t)).collect();
        let rows = c
            .query("SELECT * FROM fuzz_time($1)", &[&params])
            .unwrap_or_else(|e| run.abort(format!("a batch of times failed as a whole: {e:?}")));
        assert_eq!(rows.len(), batch.len());
        for (row, &t) in rows.iter().zip(batch) {
            let res: Vec<Option<String>> = row.get("res");
            let st: Vec<Option<String>> = row.get("st");
            let msg: Vec<Option<String>> = row.get("msg");
            let times: Vec<Option<Ts>> = row.get("ts_out");
            for (k, (name, returns)) in functions.iter().enumerate() {
                let call = Call {
                    res: res[k].as_deref(),
                    st: st[k].as_deref(),
                    msg: msg[k].as_deref(),
                    time: times[k].map(|t| t.0),
                };
                let outcome = match returns {
                    Returns::ObjectId => check_objectid_call(name, t, &call, &mut gen_seen),
                    Returns::Uuid => check_uuid_call(name, t, &call),
                };
                if let Err(why) = outcome {
                    run.fail(format!(
                        "{name}({}) with TimeZone {zone}: {why}",
                        show_time(t)
                    ));
                }
            }
        }
    }
    assert_server_survived(&run, &mut c, pid);
    let names: Vec<&str> = functions.iter().map(|f| f.0).collect();
    run.finish(
        total,
        &format!(
            "each through {} functions: {}",
            names.len(),
            names.join(", ")
        ),
    );
}

// ------------------------------------------------------------------------------------------
// uuidv7(interval)

/// The loop over intervals; with `builtin` (PostgreSQL 18) also the server's own uuidv7(interval).
fn interval_function_sql(builtin: bool) -> String {
    let builtin = if builtin {
        "BEGIN
            u := pg_catalog.uuidv7(iv[i]);
            res18 := u::text;
        EXCEPTION WHEN OTHERS THEN
            st18 := SQLSTATE; msg18 := SQLERRM;
        END;"
    } else {
        ""
    };
    format!(
        "CREATE FUNCTION fuzz_interval(iv interval[])
            RETURNS TABLE (n int, res text, st text, msg text, lo timestamptz, lo_st text,
                           hi timestamptz, hi_st text, res18 text, st18 text, msg18 text)
            LANGUAGE plpgsql AS $fn$
        DECLARE
            t0 timestamptz;
            t1 timestamptz;
            u uuid;
        BEGIN
            FOR i IN 1 .. coalesce(array_length(iv, 1), 0) LOOP
                n := i; res := NULL; st := NULL; msg := NULL; lo := NULL; lo_st := NULL; hi := NULL;
                hi_st := NULL; res18 := NULL; st18 := NULL; msg18 := NULL;
                t0 := clock_timestamp();
                BEGIN
                    u := public.uuidv7(iv[i]);
                    res := u::text;
                EXCEPTION WHEN OTHERS THEN
                    st := SQLSTATE; msg := SQLERRM;
                END;
                t1 := clock_timestamp();
                -- The clock reading uuidv7 shifted lies between t0 and t1.
                BEGIN lo := t0 + iv[i]; EXCEPTION WHEN OTHERS THEN lo_st := SQLSTATE; END;
                BEGIN hi := t1 + iv[i]; EXCEPTION WHEN OTHERS THEN hi_st := SQLSTATE; END;
                {builtin}
                RETURN NEXT;
            END LOOP;
        END
        $fn$"
    )
}

/// As 18.6 bounds uuidv7(interval): in microseconds, so only the first one of the last millisecond.
fn v7_carries(t: Option<Ts>) -> bool {
    t.is_some_and(|Ts(t)| {
        t != NEG_INF && t != POS_INF && (0..=V7_MAX_MS * 1000).contains(&unix_us(t))
    })
}

#[test]
fn interval_shift() {
    let mut run = Run::new("interval_shift");
    let total = run.count(20_000);
    let mut c = fresh_db("t_fuzz_interval");
    // Infinite intervals exist from PostgreSQL 17 on.
    let infinite = server_version(&mut c) >= 170000;
    let inputs: Vec<Iv> = (0..total)
        .map(|_| random_interval(&mut run.rng, infinite))
        .collect();
    // In UTC, adding an interval to a later time never gives an earlier one.
    // PostgreSQL 18 has its own uuidv7(interval): ours must fail where it fails, alike.
    let builtin = server_version(&mut c) >= 180000;
    c.batch_execute(&format!(
        "SET TimeZone = 'UTC'; {}",
        interval_function_sql(builtin)
    ))
    .unwrap();
    let pid = backend_pid(&mut c);
    let (mut made, mut refused) = (0, 0);
    for batch in inputs.chunks(1_000) {
        let rows = c
            .query("SELECT * FROM fuzz_interval($1)", &[&batch.to_vec()])
            .unwrap_or_else(|e| {
                run.abort(format!("a batch of intervals failed as a whole: {e:?}"))
            });
        assert_eq!(rows.len(), batch.len());
        for (row, iv) in rows.iter().zip(batch) {
            let res: Option<String> = row.get("res");
            let st: Option<String> = row.get("st");
            let msg: Option<String> = row.get("msg");
            let lo: Option<Ts> = row.get("lo");
            let hi: Option<Ts> = row.get("hi");
            let lo_st: Option<String> = row.get("lo_st");
            let hi_st: Option<String> = row.get("hi_st");
            let res18: Option<String> = row.get("res18");
            let st18: Option<String> = row.get("st18");
            let msg18: Option<String> = row.get("msg18");
            let is_infinite = infinite && (*iv == IV_INFINITY || *iv == IV_NEG_INFINITY);
            let must_work = !is_infinite && v7_carries(lo) && v7_carries(hi);
            let must_fail = is_infinite || (!v7_carries(lo) && !v7_carries(hi));
            let what = match (&res, &st) {
                (Some(text), None) => {
                    made += 1;
                    match parse_uuid(text) {
                        Some(u) => {
                            let ms = v7_ms(&u);
                            let lo_ms = lo.filter(|_| v7_carries(lo)).map(|Ts(t)| ms_floor(t));
                            let hi_ms = hi.filter(|_| v7_carries(hi)).map(|Ts(t)| ms_floor(t));
                            if u[6] >> 4 != 7 || u[8] >> 6 != 0b10 {
                                Some(format!("{text} is not a v7 of the RFC variant"))
                            } else if must_fail {
                                Some(format!("made {text} where clock + interval is {lo:?} .. {hi:?} ({lo_st:?}, {hi_st:?})"))
                            } else if lo_ms.is_some_and(|l| ms < l) || hi_ms.is_some_and(|h| ms > h)
                            {
                                Some(format!("{text} carries millisecond {ms}, outside clock + interval {lo_ms:?} .. {hi_ms:?}"))
                            } else {
                                None
                            }
                        }
                        None => Some(format!("not a uuid's text: {text:?}")),
                    }
                }
                (None, Some(state)) => {
                    refused += 1;
                    let msg = msg.as_deref().unwrap_or("");
                    if must_work {
                        Some(format!(
                            "error {state} {msg:?} where clock + interval is {lo:?} .. {hi:?}"
                        ))
                    } else if state != "22008" {
                        Some(format!("error {state} {msg:?}, expected 22008"))
                    } else if is_infinite && msg != "interval out of range for UUID version 7" {
                        Some(format!("error {msg:?} for an infinite interval"))
                    } else {
                        None
                    }
                }
                _ => Some(format!("gave {res:?} and error {st:?}")),
            };
            // Where the outcome is settled (not at the edge of the range), 18's own function
            // gives the same: a value, or the same SQLSTATE and message.
            let what = what.or_else(|| {
                let settled = must_work || must_fail;
                (builtin && settled && (st != st18 || msg != msg18 || res.is_some() != res18.is_some())).then(|| {
                    format!("ours gave {res:?} error {st:?} {msg:?}, 18's own {res18:?} error {st18:?} {msg18:?}")
                })
            });
            if let Some(why) = what {
                run.fail(format!(
                    "uuidv7(interval {} months {} days {} µs): {why}",
                    iv.months, iv.days, iv.micros
                ));
            }
        }
    }
    assert_server_survived(&run, &mut c, pid);
    run.finish(
        total,
        &format!("{made} made, {refused} refused; infinite intervals: {infinite}; compared with 18's own: {builtin}"),
    );
}

// ------------------------------------------------------------------------------------------
// jsonb cast (docs/mongodb.md): random JSON of every shape, built here as a tree so that the
// model sees what jsonb sees (the last of duplicate keys wins, escapes are decoded).

enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

/// What `jsonb::objectid` must give: the id's hex, NULL, or an error's SQLSTATE and, for bad hex,
/// the string the message quotes.
#[derive(Debug, PartialEq)]
enum JsonOutcome {
    Id(String),
    Null,
    BadHex(String),
    NotAnObjectId,
}

fn m_jsonb(j: &J) -> JsonOutcome {
    let hex = |s: &str| match m_text(s.as_bytes()) {
        Some(hex) => JsonOutcome::Id(hex),
        None => JsonOutcome::BadHex(s.to_string()),
    };
    match j {
        J::Null => JsonOutcome::Null,
        J::Str(s) => hex(s),
        J::Obj(pairs) => {
            let mut keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
            keys.sort_unstable();
            keys.dedup();
            match pairs.iter().rev().find(|(k, _)| k == "$oid") {
                Some((_, J::Str(s))) if keys.len() == 1 => hex(s),
                _ => JsonOutcome::NotAnObjectId,
            }
        }
        _ => JsonOutcome::NotAnObjectId,
    }
}

/// A JSON string literal, escaping what must be and, at random, what need not be.
fn json_string(rng: &mut StdRng, s: &str, out: &mut String) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if rng.random_bool(0.05) && (c as u32) < 0x10000 => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_text(rng: &mut StdRng, j: &J, out: &mut String) {
    let space = |rng: &mut StdRng, out: &mut String| {
        if rng.random_bool(0.2) {
            out.push_str(*[" ", "\n", "\t", "  "].choose(rng).unwrap());
        }
    };
    match j {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Num(n) => out.push_str(n),
        J::Str(s) => json_string(rng, s, out),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(rng, out);
                json_text(rng, item, out);
            }
            out.push(']');
        }
        J::Obj(pairs) => {
            out.push('{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(rng, out);
                json_string(rng, k, out);
                out.push(':');
                space(rng, out);
                json_text(rng, v, out);
            }
            out.push('}');
        }
    }
}

/// A string for JSON: the text fuzzer's inputs where they are UTF-8 (jsonb holds no NUL).
fn json_str(rng: &mut StdRng) -> String {
    loop {
        if let Ok(s) = String::from_utf8(random_text(rng)) {
            return s;
        }
    }
}

fn random_json(rng: &mut StdRng, depth: u32) -> J {
    let key = |rng: &mut StdRng| -> String {
        match rng.random_range(0..10) {
            0..=5 => "$oid".into(),
            6 => ["$OID", "oid", "$oid ", " $oid", "$Oid", "$oid\u{0}x"]
                .choose(rng)
                .unwrap()
                .replace('\0', ""),
            7 => ["_id", "$date", "$numberLong", ""]
                .choose(rng)
                .unwrap()
                .to_string(),
            _ => json_str(rng).chars().take(8).collect(),
        }
    };
    match rng.random_range(0..100) {
        0..=29 => J::Str(json_str(rng)),
        30..=64 => {
            let n = *[0usize, 1, 1, 1, 1, 2, 3].choose(rng).unwrap();
            J::Obj(
                (0..n)
                    .map(|_| {
                        let k = key(rng);
                        let v = if rng.random_bool(0.7) {
                            J::Str(json_str(rng))
                        } else if depth < 40 {
                            random_json(rng, depth + 1)
                        } else {
                            J::Null
                        };
                        (k, v)
                    })
                    .collect(),
            )
        }
        65..=72 => J::Null,
        73..=78 => J::Bool(rng.random_bool(0.5)),
        79..=86 => J::Num(
            ["0", "-1", "1e308", "12345678901234567890123", "0.5", "-0"]
                .choose(rng)
                .unwrap()
                .to_string(),
        ),
        87..=94 if depth < 40 => J::Arr(
            (0..rng.random_range(0..3))
                .map(|_| random_json(rng, depth + 1))
                .collect(),
        ),
        _ => {
            // Deep nesting around an Extended JSON ObjectId.
            let mut j = J::Obj(vec![("$oid".into(), J::Str(json_str(rng)))]);
            for _ in 0..rng.random_range(1..200) {
                j = if rng.random_bool(0.5) {
                    J::Arr(vec![j])
                } else {
                    J::Obj(vec![("$oid".into(), j)])
                };
            }
            j
        }
    }
}

#[test]
fn jsonb_cast() {
    let mut run = Run::new("jsonb_cast");
    let total = run.count(5_000);
    let values: Vec<J> = (0..total).map(|_| random_json(&mut run.rng, 0)).collect();
    let texts: Vec<String> = values
        .iter()
        .map(|j| {
            let mut s = String::new();
            json_text(&mut run.rng, j, &mut s);
            s
        })
        .collect();
    let mut c = fresh_db("t_fuzz_jsonb");
    c.batch_execute(
        "CREATE FUNCTION fuzz_jsonb(inputs text[])
            RETURNS TABLE (n int, parse_st text, res text, is_null bool, st text, msg text,
                           back text, round_trip bool)
            LANGUAGE plpgsql AS $fn$
        DECLARE
            j jsonb;
            o objectid;
        BEGIN
            FOR i IN 1 .. coalesce(array_length(inputs, 1), 0) LOOP
                n := i; parse_st := NULL; res := NULL; is_null := NULL; st := NULL; msg := NULL;
                back := NULL; round_trip := NULL;
                BEGIN
                    j := inputs[i]::jsonb;
                EXCEPTION WHEN OTHERS THEN
                    parse_st := SQLSTATE || ' ' || SQLERRM;
                END;
                IF parse_st IS NULL THEN
                    BEGIN
                        o := j::objectid;
                        is_null := o IS NULL;
                        res := o::text;
                        back := o::jsonb::text;
                        round_trip := o::jsonb::objectid = o;
                    EXCEPTION WHEN OTHERS THEN
                        st := SQLSTATE; msg := SQLERRM;
                    END;
                END IF;
                RETURN NEXT;
            END LOOP;
        END
        $fn$;",
    )
    .unwrap();
    let pid = backend_pid(&mut c);
    let mut outcomes: std::collections::BTreeMap<&'static str, usize> = Default::default();
    for (batch_values, batch_texts) in values.chunks(500).zip(texts.chunks(500)) {
        let rows = c
            .query("SELECT * FROM fuzz_jsonb($1)", &[&batch_texts])
            .unwrap_or_else(|e| {
                run.abort(format!("a batch of jsonb inputs failed as a whole: {e:?}"))
            });
        assert_eq!(rows.len(), batch_texts.len(), "one row per input");
        for ((row, j), text) in rows.iter().zip(batch_values).zip(batch_texts) {
            let parse_st: Option<String> = row.get("parse_st");
            let res: Option<String> = row.get("res");
            let is_null: Option<bool> = row.get("is_null");
            let st: Option<String> = row.get("st");
            let msg: Option<String> = row.get("msg");
            let back: Option<String> = row.get("back");
            let round_trip: Option<bool> = row.get("round_trip");
            let shown: String = text.chars().take(200).collect();
            if let Some(p) = parse_st {
                run.fail(format!(
                    "jsonb_in refused a generated document ({p}): {shown:?}"
                ));
                continue;
            }
            let want = m_jsonb(j);
            let ok = match &want {
                JsonOutcome::Id(hex) => {
                    outcomes.entry("id").and_modify(|n| *n += 1).or_insert(1);
                    res.as_deref() == Some(hex)
                        && back == Some(format!("{{\"$oid\": \"{hex}\"}}"))
                        && round_trip == Some(true)
                }
                JsonOutcome::Null => {
                    outcomes.entry("null").and_modify(|n| *n += 1).or_insert(1);
                    is_null == Some(true) && st.is_none()
                }
                JsonOutcome::BadHex(s) => {
                    outcomes.entry("22P02").and_modify(|n| *n += 1).or_insert(1);
                    st.as_deref() == Some("22P02")
                        && msg
                            == Some(format!(
                                "invalid input syntax for type objectid: \"{}\"",
                                m_quote(s)
                            ))
                }
                JsonOutcome::NotAnObjectId => {
                    outcomes.entry("22023").and_modify(|n| *n += 1).or_insert(1);
                    st.as_deref() == Some("22023")
                        && msg.as_deref().is_some_and(|m| {
                            m.starts_with("cannot cast jsonb ") && m.ends_with(" to type objectid")
                        })
                }
            };
            if !ok {
                run.fail(format!(
                    "jsonb::objectid of {shown:?} gave {res:?} (null {is_null:?}, back {back:?}, \
                     round trip {round_trip:?}), error {st:?} {msg:?}; expected {want:?}"
                ));
            }
        }
    }
    assert_server_survived(&run, &mut c, pid);
    run.finish(total, &format!("outcomes {outcomes:?}"));
}
