//! objectid and version-7 uuid keys as hash distribution columns: Citus hashes them with the
//! type's default hash operator class, so ids made one after another in the same second (which
//! differ only in their last bytes) must still land on every shard, and a condition on the key
//! must route to the one shard that holds it and use that shard's copy of the primary key.

use postgres::Client;

use crate::cluster::*;
use crate::common::*;

const SHARDS: i64 = 8;
const ROWS: i64 = 8000;

/// Table `t (id <key type> PRIMARY KEY, n int)` distributed by `id` over 8 shards, filled with
/// `ROWS` keys from `generator` in one statement.
fn distributed_table(c: &mut Client, key_type: &str, generator: &str) {
    c.batch_execute(&format!(
        "CREATE TABLE t (id {key_type} PRIMARY KEY, n int NOT NULL); \
         SELECT create_distributed_table('t', 'id', shard_count => {SHARDS}); \
         INSERT INTO t SELECT {generator}, i FROM generate_series(1, {ROWS}) i; \
         ANALYZE t"
    ))
    .unwrap();
}

/// Rows per shard, counted on the shards themselves.
fn rows_per_shard(c: &mut Client) -> Vec<i64> {
    c.query(
        "SELECT result::int8 FROM run_command_on_shards('t', 'SELECT count(*) FROM %s') \
         ORDER BY shardid",
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

fn spread_over_every_shard(c: &mut Client) {
    let counts = rows_per_shard(c);
    assert_eq!(counts.len() as i64, SHARDS, "{counts:?}");
    assert_eq!(counts.iter().sum::<i64>(), ROWS, "{counts:?}");
    // 1,000 a shard on average; a fair hash keeps each within a few dozen of it.
    assert!(
        counts
            .iter()
            .all(|&n| (ROWS / SHARDS * 8 / 10..=ROWS / SHARDS * 12 / 10).contains(&n)),
        "rows per shard: {counts:?}"
    );
}

/// Each of a few keys, queried by equality: one task, on the shard Citus computes for the key,
/// scanning that shard's primary key, returning the key's row.
fn routed_to_one_shard(c: &mut Client, key_type: &str) {
    let keys: Vec<(String, i32)> = c
        .query(
            "SELECT id::text, n FROM t WHERE n % 1000 = 7 ORDER BY n",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(keys.len(), 8);
    for (key, n) in keys {
        let query = format!("SELECT n FROM t WHERE id = '{key}'::{key_type}");
        let plan = explain(c, &query);
        assert_eq!(task_count(&plan), 1, "{plan}");
        let shard = one_i64(
            c,
            &format!("SELECT get_shard_id_for_distribution_column('t', '{key}'::{key_type})"),
        );
        assert_eq!(shard_index_scans(&plan, "t_pkey"), 1, "{plan}");
        assert!(
            plan.contains(&format!("using t_pkey_{shard} on t_{shard}")),
            "{plan}"
        );
        assert!(!plan.contains("Seq Scan"), "{plan}");
        let rows = c.query(&query, &[]).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].get::<_, i32>(0), n);
    }
}

#[test]
fn objectid_keys_spread_over_every_shard_and_route_to_one() {
    let mut c = fresh_citus_db("t_citus_dist_objectid");
    // One server-mode generator: the same random part and consecutive counters, mostly in one
    // second, so the keys differ only in their last bytes.
    distributed_table(&mut c, "objectid", "gen_objectid()");
    spread_over_every_shard(&mut c);
    routed_to_one_shard(&mut c, "objectid");
}

#[test]
fn uuid_v7_keys_spread_over_every_shard_and_route_to_one() {
    let mut c = fresh_citus_db("t_citus_dist_uuid");
    distributed_table(&mut c, "uuid", "public.uuidv7()");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM t WHERE public.uuid_extract_version(id) = 7"
        ),
        ROWS
    );
    spread_over_every_shard(&mut c);
    routed_to_one_shard(&mut c, "uuid");
}
