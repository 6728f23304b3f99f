//! Time conditions on distributed tables. Citus plans a multi-shard query by running the
//! coordinator's planner on the distributed table and shipping each shard its restrictions,
//! deparsed: with the extension's rewrite on the coordinator, the shards receive the key range
//! (`id >= objectid_first_at_or_after(…)`), and with it off they receive the time condition and
//! the worker's own planner rewrites it. Either way every shard must answer from its copy of the
//! primary key and the rows must be those of a local table. `now()` is not folded by Citus in
//! a SELECT: each worker evaluates it (its own transaction start), so the boundaries below sit
//! half a minute between rows, far from any row however long the test takes.

use postgres::Client;

use crate::cluster::*;
use crate::common::*;

const SHARDS: usize = 8;

/// Table `t` distributed by `id` over 8 shards and its local copy `t_local`: 20,000 rows, one a
/// minute back from now (n = 0…19999), keys made by `at` (a function of the row's time).
fn tables(c: &mut Client, key: &str, at: &str) {
    c.batch_execute(&format!(
        "CREATE TABLE t_local (id {key}, n int NOT NULL); \
         INSERT INTO t_local SELECT {at}(now() - i * interval '1 min'), i \
           FROM generate_series(0, 19999) i; \
         CREATE TABLE t (LIKE t_local INCLUDING ALL); \
         SELECT create_distributed_table('t', 'id', shard_count => {SHARDS}); \
         ANALYZE t_local"
    ))
    .unwrap();
    c.batch_execute("INSERT INTO t SELECT * FROM t_local; ANALYZE t")
        .unwrap();
}

/// `condition` on `t` and on `t_local`: the same ids; their number, which must be in `expected`;
/// and the distributed plan scans every shard's primary key, with the coordinator's rewrite on and
/// off.
fn check(c: &mut Client, condition: &str, expected: std::ops::RangeInclusive<usize>) {
    let query = |table: &str| format!("SELECT id::text, n FROM {table} WHERE {condition}");
    for coordinator_rewrite in ["on", "off"] {
        c.batch_execute(&format!(
            "SET pg_objectid.time_index_paths = {coordinator_rewrite}"
        ))
        .unwrap();
        let distributed = sorted_rows(c, &query("t")).unwrap();
        let local = sorted_rows(c, &query("t_local")).unwrap();
        assert_eq!(distributed, local, "{condition}");
        assert!(
            expected.contains(&distributed.len()),
            "{condition}: {} rows, expected {expected:?}",
            distributed.len()
        );
        let plan = explain(c, &query("t"));
        assert_eq!(task_count(&plan), SHARDS, "{plan}");
        assert_eq!(
            shard_index_scans(&plan, "t_pkey"),
            SHARDS,
            "time_index_paths = {coordinator_rewrite} on the coordinator, {condition}:\n{plan}"
        );
        assert!(!plan.contains("Seq Scan"), "{plan}");
    }
    c.batch_execute("RESET pg_objectid.time_index_paths")
        .unwrap();
}

/// A timestamptz literal `ago` before the coordinator's now(), made in the test, as an
/// application would send it.
fn literal(c: &mut Client, ago: &str) -> String {
    one_string(c, &format!("SELECT (now() - interval '{ago}')::text"))
}

fn time_conditions(c: &mut Client, time_of: &str) {
    c.batch_execute("SET citus.explain_all_tasks = on").unwrap();
    // Made first, right after the rows, so that they sit half a minute from the nearest row.
    let t = literal(c, "300 min 30 s");
    let (from, to) = (literal(c, "2000 min 30 s"), literal(c, "1800 min 30 s"));
    check(
        c,
        &format!("{time_of}(id) >= '{t}'::timestamptz"),
        301..=301,
    );
    check(
        c,
        &format!("{time_of}(id) >= '{from}' AND {time_of}(id) < '{to}'"),
        200..=200,
    );
    // Relative to the moving now(): once the test has run for 30 seconds a row leaves the range
    // each minute; one such minute is allowed for a slow machine. The window of BETWEEN slides
    // instead, keeping 100 rows but at the instant one crosses an edge.
    check(
        c,
        &format!("{time_of}(id) >= now() - interval '95 min 30 s'"),
        95..=96,
    );
    check(
        c,
        &format!(
            "{time_of}(id) BETWEEN now() - interval '15000 min 30 s' \
             AND now() - interval '14900 min 30 s'"
        ),
        99..=101,
    );
}

#[test]
fn objectid_time_conditions_use_every_shards_key_index() {
    let mut c = fresh_citus_db("t_citus_time_objectid");
    tables(&mut c, "objectid PRIMARY KEY", "gen_objectid_at");
    time_conditions(&mut c, "objectid_timestamp");
}

#[test]
fn uuid_time_conditions_use_every_shards_key_index() {
    let mut c = fresh_citus_db("t_citus_time_uuid");
    // A v7-only column: the CHECK is what lets the rewrite order rows by their time. Citus
    // copies it to every shard, where the workers' planners look for it.
    tables(
        &mut c,
        "uuid PRIMARY KEY CHECK (public.uuid_extract_version(id) = 7)",
        "public.uuidv7_at",
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM run_command_on_shards('t', \
               $$SELECT count(*) FROM pg_constraint WHERE conrelid = '%s'::regclass \
                 AND contype = 'c'$$) WHERE result = '1'"
        ),
        SHARDS as i64,
        "every shard has the CHECK"
    );
    // Ours, qualified: 17's built-in uuid_extract_timestamp reads only version 1.
    time_conditions(&mut c, "public.uuid_extract_timestamp");
}
