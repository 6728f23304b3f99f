//! Killed mid-write (issue 10): while 4 sessions insert into a table keyed by
//! `id objectid PRIMARY KEY DEFAULT gen_objectid()`, the server is stopped with
//! `pg_ctl -m immediate` (every process gets SIGQUIT, no checkpoint: crash recovery on the next
//! start), started again, and 4 new sessions insert more; twice over, then a last round of
//! inserts. No duplicate key may ever come up, every id the server acknowledged must be there
//! exactly once, and the only errors allowed are the sessions losing their server (SQLSTATE 57P01,
//! 57P02, 57P03, class 08, or a closed connection).
//!
//! It stops the server, so it does not run with the rest of the suite (it is `#[ignore]`d):
//! scripts/crash_test.sh runs it on a cluster of its own, once without and once with
//! `shared_preload_libraries = 'pg_objectid'`, with these settings:
//!
//! - `PG_OBJECTID_TEST_DSN`: the server, as for every test;
//! - `PG_OBJECTID_CRASH_PG_CTL`, `PG_OBJECTID_CRASH_PGDATA`: its pg_ctl and data directory;
//! - `PG_OBJECTID_CRASH_RUN_AS`: the user to run pg_ctl as (through runuser), when not ourselves;
//! - `PG_OBJECTID_CRASH_MODE`: the generator mode the server must be in, `server` or `backend`;
//! - `PG_OBJECTID_TEST_LOG`: the server log, which pg_ctl appends to and which must show no
//!   process terminated by a signal.

use std::collections::HashSet;
use std::error::Error;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use postgres::types::{FromSql, Type};
use postgres::Client;

use crate::common::*;

const WRITERS: i32 = 4;
const ROWS_PER_INSERT: i32 = 10;
/// Kill-and-restart rounds; after the last one, a round of inserts with no kill.
const CYCLES: i32 = 2;

/// An objectid as its 12 bytes.
struct Id([u8; 12]);

impl<'a> FromSql<'a> for Id {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Id(raw.try_into()?))
    }
    fn accepts(ty: &Type) -> bool {
        ty.name() == "objectid"
    }
}

fn setting(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: this test runs through scripts/crash_test.sh")
    })
}

/// Runs pg_ctl with `args` (as PG_OBJECTID_CRASH_RUN_AS, if set); panics with its output on failure.
fn pg_ctl(args: &[&str]) {
    let pg_ctl = setting("PG_OBJECTID_CRASH_PG_CTL");
    let pgdata = setting("PG_OBJECTID_CRASH_PGDATA");
    let mut full = vec!["-D", &pgdata];
    full.extend_from_slice(args);
    let mut cmd = match std::env::var("PG_OBJECTID_CRASH_RUN_AS")
        .ok()
        .filter(|u| !u.is_empty())
    {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.args(["-u", &user, "--", &pg_ctl]);
            c
        }
        None => Command::new(&pg_ctl),
    };
    let out = cmd
        .args(&full)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {pg_ctl}: {e}"));
    assert!(
        out.status.success(),
        "pg_ctl {full:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether an error is the session losing its server: shutdown or crash SQLSTATEs, connection
/// exceptions, or the connection closing under the client.
fn lost_connection(e: &postgres::Error) -> bool {
    match e.code() {
        Some(code) => {
            let code = code.code();
            matches!(code, "57P01" | "57P02" | "57P03") || code.starts_with("08")
        }
        None => {
            e.is_closed()
                || e.source()
                    .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
        }
    }
}

/// What one writer saw.
#[derive(Default)]
struct Report {
    /// Ids of the inserts the server acknowledged.
    ids: Vec<[u8; 12]>,
    /// How the writer's run ended: the error that took its server away.
    ended_by: Option<String>,
    /// Errors other than losing the server: each one fails the test.
    unexpected: Vec<String>,
}

/// Acknowledged inserts, one counter per writer.
type Progress = Arc<Vec<AtomicUsize>>;

/// Inserts until `stop` is set (returning normally) or the connection is lost (recorded in
/// `ended_by`), counting its acknowledged inserts in `done[session - 1]`.
fn writer(db: &str, session: i32, cycle: i32, stop: Arc<AtomicBool>, done: Progress) -> Report {
    let mut report = Report::default();
    let mut c = match Client::connect(&format!("{} dbname={db}", dsn()), postgres::NoTls) {
        Ok(c) => c,
        Err(e) => {
            report
                .unexpected
                .push(format!("session {session}: cannot connect: {e}"));
            return report;
        }
    };
    let stmt = c
        .prepare(&format!(
            "INSERT INTO t (session, cycle, n) SELECT $1, $2, g FROM generate_series($3::int, $3::int + {}) AS g RETURNING id",
            ROWS_PER_INSERT - 1
        ))
        .unwrap();
    let mut n = 0i32;
    while !stop.load(Ordering::Relaxed) {
        match c.query(&stmt, &[&session, &cycle, &n]) {
            Ok(rows) => {
                report.ids.extend(rows.iter().map(|r| r.get::<_, Id>(0).0));
                done[(session - 1) as usize].fetch_add(1, Ordering::Relaxed);
                n += ROWS_PER_INSERT;
            }
            Err(e) if lost_connection(&e) => {
                report.ended_by = Some(format!("{e}"));
                return report;
            }
            Err(e) => {
                let why = match e.as_db_error() {
                    Some(db) => format!(
                        "{} {} {}",
                        db.code().code(),
                        db.message(),
                        db.detail().unwrap_or("")
                    ),
                    None => format!("{e:?}"),
                };
                report.unexpected.push(format!(
                    "session {session}, cycle {cycle}, insert at n = {n}: {why}"
                ));
                if c.is_closed() || report.unexpected.len() > 20 {
                    return report;
                }
            }
        }
    }
    report
}

fn start_writers(
    db: &str,
    cycle: i32,
    stop: &Arc<AtomicBool>,
    done: &Progress,
) -> Vec<thread::JoinHandle<Report>> {
    (1..=WRITERS)
        .map(|session| {
            let (db, stop, done) = (db.to_string(), stop.clone(), done.clone());
            thread::spawn(move || writer(&db, session, cycle, stop, done))
        })
        .collect()
}

/// Waits until every writer has made `inserts` more acknowledged inserts, or has stopped
/// (after errors, which its report then shows).
fn wait_for_inserts(
    done: &Progress,
    inserts: usize,
    writers: &[thread::JoinHandle<Report>],
    what: &str,
) {
    let start: Vec<usize> = done.iter().map(|d| d.load(Ordering::Relaxed)).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let behind: Vec<usize> = (0..writers.len())
            .filter(|&i| {
                !writers[i].is_finished() && done[i].load(Ordering::Relaxed) < start[i] + inserts
            })
            .collect();
        if behind.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: writers {behind:?} did not make {inserts} inserts each in 60 s"
        );
        thread::sleep(Duration::from_millis(5));
    }
}

fn postmaster_started(c: &mut Client) -> String {
    one_string(c, "SELECT pg_postmaster_start_time()::text")
}

#[test]
#[ignore = "stops the server: scripts/crash_test.sh runs it on a cluster of its own"]
fn killed_mid_write() {
    let mode = setting("PG_OBJECTID_CRASH_MODE");
    let log = setting("PG_OBJECTID_TEST_LOG");
    for name in ["PG_OBJECTID_CRASH_PG_CTL", "PG_OBJECTID_CRASH_PGDATA"] {
        setting(name);
    }
    let Database {
        name: db,
        client: mut c,
    } = database_with_extension("");
    c.batch_execute(
        "CREATE TABLE t (id objectid PRIMARY KEY DEFAULT gen_objectid(), \
         session int NOT NULL, cycle int NOT NULL, n int NOT NULL)",
    )
    .unwrap();
    assert_eq!(
        one_string(&mut c, "SELECT objectid_generator_mode()"),
        mode,
        "the generator mode this run is for"
    );
    let mut started = postmaster_started(&mut c);
    drop(c);

    let mut acknowledged: Vec<[u8; 12]> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let done: Progress = Arc::new((0..WRITERS).map(|_| AtomicUsize::new(0)).collect());
    for cycle in 0..CYCLES {
        let stop = Arc::new(AtomicBool::new(false));
        let writers = start_writers(&db, cycle, &stop, &done);
        // Well into the writing: every session has made 100 inserts of 10 rows and goes on.
        wait_for_inserts(&done, 100, &writers, &format!("cycle {cycle}"));
        let killed_at = Instant::now();
        pg_ctl(&["-m", "immediate", "-w", "stop"]);
        println!("cycle {cycle}: server stopped with -m immediate under {WRITERS} writers");
        // Writers that somehow keep going (they cannot: the server is gone) are stopped after 60 s.
        let watchdog = {
            let stop = stop.clone();
            thread::spawn(move || {
                while killed_at.elapsed() < Duration::from_secs(60) && !stop.load(Ordering::Relaxed)
                {
                    thread::sleep(Duration::from_millis(50));
                }
                stop.store(true, Ordering::Relaxed);
            })
        };
        for (i, w) in writers.into_iter().enumerate() {
            let report = w.join().expect("a writer thread panicked");
            if report.ids.is_empty() {
                problems.push(format!(
                    "cycle {cycle}, session {}: no insert before the stop",
                    i + 1
                ));
            }
            match &report.ended_by {
                Some(e) => println!(
                    "cycle {cycle}, session {}: {} rows, then: {e}",
                    i + 1,
                    report.ids.len()
                ),
                None => problems.push(format!(
                    "cycle {cycle}, session {}: never lost its server",
                    i + 1
                )),
            }
            problems.extend(report.unexpected);
            acknowledged.extend(report.ids);
        }
        stop.store(true, Ordering::Relaxed);
        watchdog.join().unwrap();

        pg_ctl(&["-l", &log, "-w", "-t", "120", "start"]);
        let mut c = connect_to(&db);
        let now = postmaster_started(&mut c);
        assert_ne!(now, started, "cycle {cycle}: the server did not restart");
        started = now;
        assert_eq!(
            one_string(&mut c, "SELECT objectid_generator_mode()"),
            mode,
            "cycle {cycle}: mode after the restart"
        );
    }

    // After the last restart: more inserts, none of which may fail.
    let stop = Arc::new(AtomicBool::new(false));
    let writers = start_writers(&db, CYCLES, &stop, &done);
    wait_for_inserts(&done, 100, &writers, "after the last restart");
    stop.store(true, Ordering::Relaxed);
    for (i, w) in writers.into_iter().enumerate() {
        let report = w.join().expect("a writer thread panicked");
        if let Some(e) = report.ended_by {
            problems.push(format!(
                "after the restarts, session {}: lost its server: {e}",
                i + 1
            ));
        }
        problems.extend(report.unexpected);
        acknowledged.extend(report.ids);
    }

    // Every acknowledged id is unique, is in the table, and the table has no duplicates (its
    // heap and its primary key agree).
    let mut c = connect_to(&db);
    let distinct: HashSet<[u8; 12]> = acknowledged.iter().copied().collect();
    if distinct.len() != acknowledged.len() {
        problems.push(format!(
            "{} ids were acknowledged twice",
            acknowledged.len() - distinct.len()
        ));
    }
    let row = c
        .query_one(
            "SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE cycle = $1) FROM t",
            &[&CYCLES],
        )
        .unwrap();
    let (rows, distinct_rows, last_rows): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    if rows != distinct_rows {
        problems.push(format!(
            "the table has {rows} rows but {distinct_rows} distinct ids"
        ));
    }
    if rows < acknowledged.len() as i64 {
        problems.push(format!(
            "the table has {rows} rows, fewer than the {} acknowledged",
            acknowledged.len()
        ));
    }
    if last_rows == 0 {
        problems.push("no rows were inserted after the last restart".into());
    }
    let ids: Vec<String> = acknowledged.iter().map(hex::encode).collect();
    let found: i64 = c
        .query_one(
            "SELECT count(*) FROM t WHERE id = ANY($1::text[]::objectid[])",
            &[&ids],
        )
        .unwrap()
        .get(0);
    if found != acknowledged.len() as i64 {
        problems.push(format!(
            "{found} of the {} acknowledged ids are in the table",
            acknowledged.len()
        ));
    }
    c.batch_execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
        .unwrap();
    let by_index = one_i64(
        &mut c,
        "SELECT count(*) FROM t WHERE id >= '000000000000000000000000'",
    );
    if by_index != rows {
        problems.push(format!(
            "the primary key finds {by_index} rows, the heap has {rows}"
        ));
    }
    assert_log_clean(&format!("crash::killed_mid_write ({mode} mode)"));
    assert!(
        problems.is_empty(),
        "killed mid-write, generator in {mode} mode:\n  {}",
        problems.join("\n  ")
    );
    println!(
        "killed mid-write, generator in {mode} mode: {CYCLES} immediate stops, {} acknowledged ids, {rows} rows, all distinct",
        acknowledged.len()
    );
}
