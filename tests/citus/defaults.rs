//! Keys made by column defaults on distributed tables. Citus evaluates a volatile default on the
//! coordinator when the rows come from the client (it must know the key to route the row), but on
//! the workers when an INSERT … SELECT reads a distributed table: then each node's generator
//! makes ids. Either way they must be unique across shards and carry the current time.

use std::io::Write;

use postgres::Client;

use crate::cluster::*;
use crate::common::*;

/// 20 single-row INSERTs, an INSERT … SELECT of 2,000 rows and a COPY of 500, all made on the
/// coordinator, then 2,000 rows made on the workers: 4,520 rows, none naming `id`.
fn insert_without_id(c: &mut Client) {
    for i in 0..20 {
        c.execute(
            "INSERT INTO t (note) VALUES ($1)",
            &[&format!("single {i}")],
        )
        .unwrap();
    }
    c.batch_execute("INSERT INTO t (note) SELECT 'many ' || i FROM generate_series(1, 2000) i")
        .unwrap();
    let mut copy = c.copy_in("COPY t (note) FROM STDIN").unwrap();
    for i in 0..500 {
        writeln!(copy, "copied {i}").unwrap();
    }
    copy.finish().unwrap();
    let on_workers = "INSERT INTO t (note) SELECT 'again ' || note FROM t WHERE note LIKE 'many %'";
    let plan = explain(c, on_workers);
    assert!(plan.contains("INSERT/SELECT method: repartition"), "{plan}");
    c.batch_execute(on_workers).unwrap();
}

fn every_shard_has_rows(c: &mut Client) {
    assert_eq!(
        one_i64(
            c,
            "SELECT count(*) FILTER (WHERE result::int8 > 0) - count(*) \
             FROM run_command_on_shards('t', 'SELECT count(*) FROM %s')"
        ),
        0
    );
}

#[test]
fn gen_objectid_default_on_a_distributed_table() {
    let mut c = fresh_citus_db("t_citus_default_objectid");
    c.batch_execute(
        "CREATE TABLE t (id objectid PRIMARY KEY DEFAULT gen_objectid(), note text NOT NULL); \
         SELECT create_distributed_table('t', 'id', shard_count => 8)",
    )
    .unwrap();
    insert_without_id(&mut c);
    let row = c
        .query_one(
            "SELECT count(*), count(DISTINCT id), \
               count(*) FILTER (WHERE objectid_timestamp(id) \
                 BETWEEN date_trunc('second', now() - interval '1 minute') AND now()) \
             FROM t",
            &[],
        )
        .unwrap();
    assert_eq!(
        (
            row.get::<_, i64>(0),
            row.get::<_, i64>(1),
            row.get::<_, i64>(2)
        ),
        (4520, 4520, 4520),
        "rows, distinct ids, ids made within the last minute"
    );
    every_shard_has_rows(&mut c);
    // Bytes 5-9 are the generator's random value, one per server with the library preloaded:
    // the coordinator's, and each worker's for the rows made there.
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(DISTINCT substr(id::text, 9, 10)) FROM t"
        ),
        3
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(DISTINCT substr(id::text, 9, 10)) FROM t WHERE note NOT LIKE 'again %'"
        ),
        1
    );
}

/// Issue 12: sub-second ids made on three nodes sort in the order they were made, since every
/// node stamps the same clock's time right after the second (the nodes share this machine's
/// clock; across machines, to within their synchronisation). gen_objectid() ids of the same
/// workload would not: within a second they sort by the node's random value.
#[test]
fn gen_objectid_subsecond_default_keeps_time_order_across_nodes() {
    let mut c = fresh_citus_db("t_citus_default_subsecond");
    c.batch_execute(
        "CREATE TABLE t (id objectid PRIMARY KEY DEFAULT gen_objectid_subsecond(), \
                         note text NOT NULL); \
         SELECT create_distributed_table('t', 'id', shard_count => 8)",
    )
    .unwrap();
    insert_without_id(&mut c);
    let row = c
        .query_one(
            "SELECT count(*), count(DISTINCT id), \
               count(*) FILTER (WHERE objectid_timestamp(id) \
                 BETWEEN date_trunc('second', now() - interval '1 minute') AND now()) \
             FROM t",
            &[],
        )
        .unwrap();
    assert_eq!(
        (
            row.get::<_, i64>(0),
            row.get::<_, i64>(1),
            row.get::<_, i64>(2)
        ),
        (4520, 4520, 4520),
        "rows, distinct ids, ids made within the last minute"
    );
    every_shard_has_rows(&mut c);
    // Bytes 8-12 are the generator's random value: the coordinator's, and each worker's for
    // the rows made there.
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(DISTINCT substr(id::text, 15, 10)) FROM t"
        ),
        3
    );
    // The workers made the 'again' rows after the coordinator made every other row: all their
    // keys sort above the coordinator's, whichever random values the nodes drew.
    assert!(
        one_bool(
            &mut c,
            "SELECT max(id) FILTER (WHERE note NOT LIKE 'again %') \
                  < min(id) FILTER (WHERE note LIKE 'again %') FROM t"
        ),
        "keys of later rows made on other nodes sort below earlier ones"
    );
    // And within the coordinator's rows, key order is insertion order: singles, many, copied.
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM (SELECT note, lead(note) OVER (ORDER BY id) AS next FROM t \
               WHERE note NOT LIKE 'again %') s \
             WHERE (note LIKE 'many %' AND next LIKE 'single %') \
                OR (note LIKE 'copied %' AND next NOT LIKE 'copied %')"
        ),
        0
    );
}

#[test]
fn uuidv7_default_on_a_distributed_table() {
    let mut c = fresh_citus_db("t_citus_default_uuid");
    // Qualified: on 18 an unqualified uuidv7() is the built-in one.
    c.batch_execute(
        "CREATE TABLE t (id uuid PRIMARY KEY DEFAULT public.uuidv7(), note text NOT NULL); \
         SELECT create_distributed_table('t', 'id', shard_count => 8)",
    )
    .unwrap();
    insert_without_id(&mut c);
    let row = c
        .query_one(
            "SELECT count(*), count(DISTINCT id), \
               count(*) FILTER (WHERE public.uuid_extract_version(id) = 7 \
                 AND public.uuid_extract_timestamp(id) BETWEEN now() - interval '1 minute' AND now()) \
             FROM t",
            &[],
        )
        .unwrap();
    assert_eq!(
        (
            row.get::<_, i64>(0),
            row.get::<_, i64>(1),
            row.get::<_, i64>(2)
        ),
        (4520, 4520, 4520),
        "rows, distinct ids, version-7 ids made within the last minute"
    );
    every_shard_has_rows(&mut c);
}
