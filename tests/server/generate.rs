//! gen_objectid(), gen_objectid_subsecond(), gen_objectid_at() and objectid_generator_mode() in a
//! real server.
//!
//! scripts/test.sh runs this module on two clusters per version: one without and one with
//! `shared_preload_libraries = 'pg_objectid'`. The tests read which one they are on from the
//! server and expect the mode that goes with it.

use std::thread;

use postgres::error::SqlState;
use postgres::{Client, SimpleQueryMessage};

use crate::common::*;

fn preloaded(c: &mut Client) -> bool {
    one_bool(
        c,
        "SELECT 'pg_objectid' = ANY (string_to_array(replace(current_setting('shared_preload_libraries'), ' ', ''), ','))",
    )
}

/// Server mode needs the library preloaded, or PostgreSQL 17's DSM registry.
fn expected_mode(c: &mut Client) -> &'static str {
    if preloaded(c) || server_version(c) >= 170000 {
        "server"
    } else {
        "backend"
    }
}

/// SQL for the fields of an objectid column `id`.
const FIELDS: &str = "extract(epoch FROM objectid_timestamp(id))::int8 AS secs, \
     encode(substr(id::bytea, 5, 5), 'hex') AS random, \
     (get_byte(id::bytea, 9) << 16) + (get_byte(id::bytea, 10) << 8) + get_byte(id::bytea, 11) AS counter";

#[test]
fn mode_matches_the_server() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
    let want = expected_mode(&mut c);
    assert_eq!(one_string(&mut c, "SELECT objectid_generator_mode()"), want);
    // The mode holds for the whole session and for new sessions alike.
    c.batch_execute("SELECT gen_objectid()").unwrap();
    assert_eq!(one_string(&mut c, "SELECT objectid_generator_mode()"), want);
    let mut other = connect_to(&name);
    assert_eq!(
        one_string(&mut other, "SELECT objectid_generator_mode()"),
        want
    );
}

#[test]
fn layout_and_order_within_a_session() {
    let mut c = database_with_extension("").client;
    let rows = c
        .query(
            &format!(
                "SELECT id::text, {FIELDS}, extract(epoch FROM clock_timestamp())::int8 AS now \
                 FROM (SELECT gen_objectid() AS id, n FROM generate_series(1, 5000) n) g ORDER BY n"
            ),
            &[],
        )
        .unwrap();
    let random: String = rows[0].get("random");
    let mut previous: Option<String> = None;
    for r in &rows {
        let (id, secs, now): (String, i64, i64) = (r.get(0), r.get("secs"), r.get("now"));
        // The stamp is the clock's second, or one ahead of it for less than a second after the
        // counter wrapped within a second (a carry; the counter starts at a random value, and
        // at this server's rates two carries cannot fall within one second).
        assert!(
            (now - 2..=now + 1).contains(&secs),
            "{id}: {secs} is not the current second {now}"
        );
        assert_eq!(
            r.get::<_, String>("random"),
            random,
            "one random value per generator"
        );
        if let Some(p) = &previous {
            // Strictly ascending, with no exception: the counter's wrap carries into the second.
            assert!(*p < id, "{p} then {id}: not ascending");
        }
        previous = Some(id);
    }
    if expected_mode(&mut c) == "backend" {
        // Alone in its generator, a session sees the counter rise by exactly one (mod 2^24).
        let counters: Vec<i32> = rows.iter().map(|r| r.get("counter")).collect();
        assert!(counters
            .windows(2)
            .all(|w| (w[1] - w[0]).rem_euclid(1 << 24) == 1));
    }
}

#[test]
fn default_for_a_primary_key() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE items (id objectid PRIMARY KEY DEFAULT gen_objectid(), n int); \
         INSERT INTO items (n) SELECT generate_series(1, 10000); \
         INSERT INTO items (n) VALUES (0)",
    )
    .unwrap();
    assert_eq!(
        one_i64(&mut c, "SELECT count(DISTINCT id) FROM items"),
        10001
    );
    // Later rows got strictly larger keys, so they land at the right edge of the index. No
    // exception, not even where the counter (which starts at a random value) wraps.
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM (SELECT id <= lag(id) OVER (ORDER BY n = 0, n) AS not_up \
             FROM items) s WHERE not_up"
        ),
        0,
        "ids must strictly increase in insertion order"
    );
}

/// One session's share of the concurrency test: its ids in generation order.
fn generate_in_session(db: &str, session: i32, n: i32) {
    let mut c = connect_to(db);
    c.execute(
        "INSERT INTO gen SELECT $1, g, gen_objectid() FROM generate_series(1, $2) g",
        &[&session, &n],
    )
    .unwrap();
}

#[test]
fn eight_sessions_and_a_parallel_query_make_unique_ordered_ids() {
    const SESSIONS: i32 = 8;
    const PER_SESSION: i32 = 250_000;
    let Database {
        name: db,
        client: mut c,
    } = database_with_extension("");
    c.batch_execute(
        "CREATE UNLOGGED TABLE gen (session int, seq int, id objectid); \
         CREATE UNLOGGED TABLE big AS SELECT g FROM generate_series(1, 200000) g; ANALYZE big",
    )
    .unwrap();
    let handles: Vec<_> = (1..=SESSIONS)
        .map(|s| {
            let db = db.clone();
            thread::spawn(move || generate_in_session(&db, s, PER_SESSION))
        })
        .collect();
    // Meanwhile, parallel workers generate ids too (session 0).
    c.batch_execute(
        "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; \
         SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2; \
         SET parallel_leader_participation = off",
    )
    .unwrap();
    let plan = explain_analyze(
        &mut c,
        "SELECT count(*) FROM (SELECT gen_objectid() FROM big) s",
    );
    assert!(
        plan.contains("Workers Launched: 2"),
        "gen_objectid() must run in parallel workers:\n{plan}"
    );
    // INSERT ... SELECT never runs in parallel, so the ids come back to us and go in afterwards.
    let from_workers: Vec<String> = c
        .simple_query("SELECT gen_objectid()::text FROM big")
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(from_workers.len(), 200_000);
    c.execute(
        "INSERT INTO gen SELECT 0, 0, unnest($1::text[])::objectid",
        &[&from_workers],
    )
    .unwrap();
    for h in handles {
        h.join().unwrap();
    }
    let total = i64::from(SESSIONS * PER_SESSION) + 200_000;
    assert_eq!(one_i64(&mut c, "SELECT count(*) FROM gen"), total);
    assert_eq!(
        one_i64(&mut c, "SELECT count(DISTINCT id) FROM gen"),
        total,
        "duplicate ids"
    );

    // Per session, ids strictly rise in generation order, with no exception (the counter's
    // wrap carries into the second).
    let rows = c
        .query(
            "WITH s AS (SELECT session, id, lag(id) OVER w AS prev_id FROM gen WHERE session > 0 \
                        WINDOW w AS (PARTITION BY session ORDER BY seq)) \
             SELECT session, count(*) FILTER (WHERE prev_id >= id) AS disorder \
             FROM s GROUP BY session ORDER BY session",
            &[],
        )
        .unwrap();
    assert_eq!(rows.len(), SESSIONS as usize);
    for r in &rows {
        let (session, bad): (i32, i64) = (r.get(0), r.get(1));
        assert_eq!(bad, 0, "session {session} has ids out of generation order");
    }

    let randoms = one_i64(
        &mut c,
        &format!("SELECT count(DISTINCT random) FROM (SELECT {FIELDS} FROM gen) f"),
    );
    if expected_mode(&mut c) == "server" {
        // One random value and one counter for the whole server: the ids of all sessions
        // sort in generation order.
        assert_eq!(randoms, 1, "sessions must share the server's random value");
    } else {
        // Each backend and each parallel worker has its own random value. The leader took no
        // part in the parallel scan, so session 0's ids all come from workers.
        assert!(
            randoms > i64::from(SESSIONS),
            "only {randoms} random values"
        );
        c.batch_execute(&format!(
            "CREATE TEMP TABLE randoms AS SELECT DISTINCT session = 0 AS worker, random \
             FROM (SELECT session, {FIELDS} FROM gen) f"
        ))
        .unwrap();
        let leader = one_string(
            &mut c,
            &format!("SELECT random FROM (SELECT {FIELDS} FROM (SELECT gen_objectid() AS id) g) f"),
        );
        assert_eq!(
            one_i64(
                &mut c,
                &format!(
                    "SELECT count(*) FROM randoms w WHERE worker AND (random = '{leader}' \
                       OR random IN (SELECT random FROM randoms WHERE NOT worker))"
                )
            ),
            0,
            "workers must not share a random value with the leader or other sessions"
        );
        assert!(one_i64(&mut c, "SELECT count(*) FROM randoms WHERE worker") >= 1);
    }
}

#[test]
fn gen_objectid_at_carries_the_given_time() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(
            &format!(
                "SELECT count(DISTINCT id), min(secs), max(secs) FROM (SELECT id, {FIELDS} FROM \
                   (SELECT gen_objectid_at('2012-10-17 21:13:27.999+00') AS id \
                    FROM generate_series(1, 10000)) g) f"
            ),
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 10000, "unique");
    assert_eq!(row.get::<_, i64>(1), 1_350_508_407, "fraction dropped");
    assert_eq!(row.get::<_, i64>(2), 1_350_508_407);
    // Ids made for other times leave the generator's own clock alone.
    assert!(one_bool(
        &mut c,
        "SELECT gen_objectid_at('2106-02-07 06:28:15+00') > gen_objectid()"
    ));
    assert!(one_bool(
        &mut c,
        "SELECT objectid_timestamp(gen_objectid()) BETWEEN now() - interval '1 minute' \
                                                       AND now() + interval '1 minute'"
    ));
    for (at, shown) in [
        (
            "1969-12-31 23:59:59.999999+00",
            "1969-12-31 23:59:59.999999+00",
        ),
        ("2106-02-07 06:28:16+00", "2106-02-07 06:28:16+00"),
        ("infinity", "infinity"),
        ("-infinity", "-infinity"),
    ] {
        let msg = expect_error(
            &mut c,
            &format!("SET TimeZone = 'UTC'; SELECT gen_objectid_at('{at}')"),
            &SqlState::DATETIME_FIELD_OVERFLOW,
        );
        assert_eq!(
            msg,
            format!("timestamp out of range for type objectid: \"{shown}\"")
        );
    }
}

/// Issue 10, item 6: 2^24 + 1 backfill ids for one second, more than a counter cycle, are all
/// distinct (the query, which used to return 1).
#[test]
fn gen_objectid_at_never_repeats_within_one_second() {
    let mut c = database_with_extension("").client;
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) - count(DISTINCT id) FROM (SELECT gen_objectid_at('2020-01-01 00:00+00') id \
             FROM generate_series(1, 16777217)) s"
        ),
        0,
        "gen_objectid_at() repeated an id"
    );
}

/// Issue 10, item 6: backfill ids never take the bytes of a live id of the same generator, so a
/// backfill cannot collide with the keys of a busy second, and they ascend in call order.
#[test]
fn gen_objectid_at_never_equals_a_live_id() {
    let mut c = database_with_extension("").client;
    // One process, one generator, also in backend mode.
    c.batch_execute(
        "SET max_parallel_workers_per_gather = 0; \
         CREATE TABLE live AS SELECT n, gen_objectid() AS id FROM generate_series(1, 100000) n; \
         CREATE TABLE backfill AS \
           SELECT n, gen_objectid_at(objectid_timestamp(id)) AS id FROM live ORDER BY n",
    )
    .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM backfill \
             WHERE substr(id::bytea, 5, 5) IN (SELECT substr(id::bytea, 5, 5) FROM live)"
        ),
        0,
        "a backfill id carries the live ids' random value"
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(DISTINCT id) FROM (SELECT id FROM live UNION ALL SELECT id FROM backfill) u"
        ),
        200_000
    );
    // Within one second, backfill ids follow call order (n).
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM (SELECT id <= lag(id) OVER (PARTITION BY objectid_timestamp(id) \
             ORDER BY n) AS not_up FROM backfill) s WHERE not_up"
        ),
        0
    );
}

/// The time a gen_objectid_subsecond() id `id` carries, in Unix seconds: its seconds plus its
/// tick (bytes 5–7) in units of 2^-24 s.
const SUBSECOND_TIME: &str = "(extract(epoch FROM objectid_timestamp(id))::float8 \
     + ((get_byte(id::bytea, 4) << 16) + (get_byte(id::bytea, 5) << 8) + get_byte(id::bytea, 6))::float8 / 16777216)";

/// Issue 12: ids whose bytes after the seconds are the clock's fraction of the second, read
/// between two clock readings, ascending in generation order, and ending in the generator's
/// random value (the same as gen_objectid()'s: one generator).
#[test]
fn subsecond_ids_carry_the_clock_and_ascend() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "SET max_parallel_workers_per_gather = 0; \
         CREATE TABLE s AS SELECT n, extract(epoch FROM clock_timestamp())::float8 AS before, \
                gen_objectid_subsecond() AS id, extract(epoch FROM clock_timestamp())::float8 AS after \
         FROM generate_series(1, 20000) n",
    )
    .unwrap();
    // A tick truncates the clock to 2^-24 s (and float8 epochs near 2^31 s keep ~0.5 us), so
    // an id is at most a microsecond before the reading taken just ahead of it. It can run
    // ahead of the clock only by one tick per id made faster than the clock ticks, by any
    // session of the server: far less than 0.1 s here.
    assert_eq!(
        one_i64(
            &mut c,
            &format!(
                "SELECT count(*) FROM s WHERE NOT ({SUBSECOND_TIME} BETWEEN before - 1e-6 AND after + 0.1)"
            )
        ),
        0,
        "ids whose time is not the clock's"
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM (SELECT id <= lag(id) OVER (ORDER BY n) AS not_up FROM s) x \
             WHERE not_up"
        ),
        0,
        "ids must strictly increase in generation order"
    );
    // Spread over the second, not bunched in a counter: ticks differ between consecutive ids.
    assert!(
        one_i64(
            &mut c,
            "SELECT count(DISTINCT substr(id::bytea, 5, 3)) FROM s"
        ) == 20_000
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(DISTINCT substr(id::bytea, 8, 5)) FROM s"
        ),
        1,
        "one random value per generator"
    );
    assert!(
        one_bool(
            &mut c,
            "SELECT substr(gen_objectid_subsecond()::bytea, 8, 5) = substr(gen_objectid()::bytea, 5, 5)"
        ),
        "gen_objectid() and gen_objectid_subsecond() of one session share the generator"
    );
}

fn subsecond_in_session(db: &str, session: i32, n: i32) {
    let mut c = connect_to(db);
    c.execute(
        "INSERT INTO gen SELECT $1, g, gen_objectid_subsecond() FROM generate_series(1, $2) g",
        &[&session, &n],
    )
    .unwrap();
}

/// Issue 12: several sessions at once, alongside gen_objectid() and gen_objectid_at() on the
/// same generator: no id repeats, in any kind, and each session's ids ascend.
#[test]
fn subsecond_sessions_make_unique_ordered_ids() {
    const SESSIONS: i32 = 4;
    const PER_SESSION: i32 = 100_000;
    let Database {
        name: db,
        client: mut c,
    } = database_with_extension("");
    c.batch_execute("CREATE UNLOGGED TABLE gen (session int, seq int, id objectid)")
        .unwrap();
    let handles: Vec<_> = (1..=SESSIONS)
        .map(|s| {
            let db = db.clone();
            thread::spawn(move || subsecond_in_session(&db, s, PER_SESSION))
        })
        .collect();
    c.batch_execute(
        "INSERT INTO gen SELECT 0, g, gen_objectid() FROM generate_series(1, 100000) g; \
         INSERT INTO gen SELECT -1, g, gen_objectid_at(now()) FROM generate_series(1, 100000) g",
    )
    .unwrap();
    for h in handles {
        h.join().unwrap();
    }
    let total = i64::from(SESSIONS * PER_SESSION) + 200_000;
    assert_eq!(
        one_i64(&mut c, "SELECT count(DISTINCT id) FROM gen"),
        total,
        "duplicate ids"
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM (SELECT id <= lag(id) OVER (PARTITION BY session ORDER BY seq) \
             AS not_up FROM gen WHERE session > 0) s WHERE not_up"
        ),
        0,
        "a session's ids out of generation order"
    );
    if expected_mode(&mut c) == "server" {
        assert_eq!(
            one_i64(
                &mut c,
                "SELECT count(DISTINCT substr(id::bytea, 8, 5)) FROM gen WHERE session > 0"
            ),
            1,
            "the sessions share the server's generator"
        );
    }
}

/// Issue 12: as a column default, keys rise in insertion order, so inserts land at the index's
/// right edge.
#[test]
fn subsecond_default_for_a_primary_key() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE items (id objectid PRIMARY KEY DEFAULT gen_objectid_subsecond(), n int); \
         INSERT INTO items (n) SELECT generate_series(1, 10000); \
         INSERT INTO items (n) VALUES (0)",
    )
    .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM (SELECT id <= lag(id) OVER (ORDER BY n = 0, n) AS not_up \
             FROM items) s WHERE not_up"
        ),
        0
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM items WHERE objectid_timestamp(id) >= now() - interval '1 minute'"
        ),
        10001,
        "the time condition reads the seconds as for any objectid"
    );
}
