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
//!
//! One file per entry point (`text`, `binary`, `time_functions`, `interval`, `json`), beside the
//! wire types they read and write (`wire`), the input generators (`generators`) and the model of
//! what each function gives (`models`). This file holds the run settings, the failure reports
//! and the check that the server survived.

mod binary;
mod generators;
mod interval;
mod json;
mod models;
mod text;
mod time_functions;
mod wire;

use std::time::Instant;

use postgres::Client;
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::common::*;

/// "objectid" in ASCII.
const DEFAULT_SEED: u64 = 0x6f62_6a65_6374_6964;

struct Run {
    name: &'static str,
    /// The test's path (`fuzz::text::text_input`): the filter that runs it again.
    path: String,
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
            // The test harness names each test's thread after the test's path.
            path: std::thread::current().name().unwrap_or(name).to_string(),
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
            "fuzz::{}: {what}\n(seed {:#x}: PG_OBJECTID_FUZZ_SEED={:#x} cargo test --test server {})",
            self.name, self.seed, self.seed, self.path
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
                 PG_OBJECTID_FUZZ_SEED={:#x} cargo test --test server {})\nby kind:\n  {}\nthe first {}:\n  {}",
                self.name,
                self.failed,
                self.seed,
                self.seed,
                self.path,
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
