//! Rows moved into distributed tables by INSERT … SELECT (pushed down to the shards, or
//! repartitioned by another key) and by COPY in text and binary format through the coordinator,
//! which must parse each objectid and hash it to its shard: every row must read back byte-equal.

use std::io::Write;

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
use postgres::Client;

use crate::cluster::*;
use crate::common::*;

/// Every row of `table` as (objectid bytes, uuid bytes, n), sorted, read on the binary protocol.
fn raw_rows(c: &mut Client, table: &str) -> Vec<(Vec<u8>, [u8; 16], i32)> {
    let mut rows: Vec<_> = c
        .query(&format!("SELECT id, u, n FROM {table}"), &[])
        .unwrap()
        .iter()
        .map(|r| (r.get::<_, Raw>(0).0, r.get::<_, RawUuid>(1).0, r.get(2)))
        .collect();
    rows.sort();
    rows
}

fn nonempty_shards(c: &mut Client, table: &str) -> i64 {
    one_i64(
        c,
        &format!(
            "SELECT count(*) FROM run_command_on_shards('{table}', 'SELECT count(*) FROM %s') \
             WHERE result::int8 > 0"
        ),
    )
}

#[test]
fn insert_select_between_distributed_tables_keeps_every_byte() {
    let mut c = fresh_citus_db("t_citus_insert_select");
    c.batch_execute(
        "CREATE TABLE src (id objectid PRIMARY KEY, u uuid NOT NULL, n int NOT NULL); \
         CREATE TABLE same_key (LIKE src INCLUDING ALL); \
         CREATE TABLE by_uuid (u uuid PRIMARY KEY, id objectid NOT NULL, n int NOT NULL); \
         CREATE TABLE back (LIKE src INCLUDING ALL); \
         SELECT create_distributed_table('src', 'id', shard_count => 8); \
         SELECT create_distributed_table('same_key', 'id', colocate_with => 'src'); \
         SELECT create_distributed_table('by_uuid', 'u', shard_count => 6); \
         SELECT create_distributed_table('back', 'id', shard_count => 5);",
    )
    .unwrap();
    c.batch_execute(
        "INSERT INTO src SELECT gen_objectid_at(now() - i * interval '1 min'), \
           public.uuidv7_at(now() - i * interval '1 s'), i FROM generate_series(1, 5000) i",
    )
    .unwrap();
    let expected = raw_rows(&mut c, "src");
    assert_eq!(expected.len(), 5000);

    // Co-located, same key: each shard copies into its twin, no row through the coordinator.
    let same = "INSERT INTO same_key SELECT * FROM src";
    // Another distribution column (uuid) and another shard count: the workers hash each row's
    // key themselves and send it to the shard it belongs to.
    let to_uuid = "INSERT INTO by_uuid SELECT u, id, n FROM src";
    // And from the uuid-keyed table back into an objectid-keyed one.
    let to_objectid = "INSERT INTO back SELECT id, u, n FROM by_uuid";
    let plan = explain(&mut c, same);
    assert!(
        plan.starts_with("Custom Scan (Citus Adaptive)") && task_count(&plan) == 8,
        "{plan}"
    );
    for insert in [to_uuid, to_objectid] {
        let plan = explain(&mut c, insert);
        assert!(plan.contains("INSERT/SELECT method: repartition"), "{plan}");
    }
    for insert in [same, to_uuid, to_objectid] {
        c.batch_execute(insert).unwrap();
    }

    assert_eq!(raw_rows(&mut c, "same_key"), expected);
    let mut by_uuid: Vec<_> = c
        .query("SELECT id, u, n FROM by_uuid", &[])
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.get::<_, Raw>(0).0,
                r.get::<_, RawUuid>(1).0,
                r.get::<_, i32>(2),
            )
        })
        .collect();
    by_uuid.sort();
    assert_eq!(by_uuid, expected);
    assert_eq!(raw_rows(&mut c, "back"), expected);
    assert_eq!(nonempty_shards(&mut c, "by_uuid"), 6);
    assert_eq!(nonempty_shards(&mut c, "back"), 5);
    // Each row sits on the shard its uuid hashes to: a query by key goes to that shard alone.
    let sample: Vec<(String, i32)> = c
        .query("SELECT u::text, n FROM src WHERE n % 50 = 0", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(sample.len(), 100);
    for (u, n) in sample {
        let query = format!("SELECT n FROM by_uuid WHERE u = '{u}'");
        assert_eq!(task_count(&explain(&mut c, &query)), 1);
        let found: Vec<i32> = c
            .query(&query, &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(found, vec![n], "{u}");
    }
}

/// A deterministic objectid for row i: a second in 2021 and 8 bytes spread from i.
fn objectid_bytes(i: u32) -> Vec<u8> {
    let mut b = (0x6000_0000u32 + i * 13).to_be_bytes().to_vec();
    b.extend_from_slice(&(u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_be_bytes());
    b
}

/// A deterministic version-7 uuid for row i.
fn uuid_bytes(i: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..6].copy_from_slice(&(0x0180_0000_0000u64 + u64::from(i) * 1000).to_be_bytes()[2..]);
    b[6..].copy_from_slice(&(u128::from(i).wrapping_mul(0x2545_f491_4f6c_dd1d)).to_be_bytes()[6..]);
    b[6] = 0x70 | (b[6] & 0x0f);
    b[8] = 0x80 | (b[8] & 0x3f);
    b
}

fn uuid_text(b: &[u8; 16]) -> String {
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

#[test]
fn copy_text_and_binary_into_a_distributed_table_keeps_every_byte() {
    let mut c = fresh_citus_db("t_citus_copy");
    c.batch_execute(
        "CREATE TABLE by_text (id objectid PRIMARY KEY, u uuid NOT NULL, n int NOT NULL); \
         CREATE TABLE by_binary (LIKE by_text INCLUDING ALL); \
         SELECT create_distributed_table('by_text', 'id', shard_count => 8); \
         SELECT create_distributed_table('by_binary', 'id', colocate_with => 'by_text');",
    )
    .unwrap();
    let n = 3000u32;
    let mut expected: Vec<(Vec<u8>, [u8; 16], i32)> = (0..n)
        .map(|i| (objectid_bytes(i), uuid_bytes(i), i as i32))
        .collect();

    let mut text = c.copy_in("COPY by_text FROM STDIN").unwrap();
    for (id, u, i) in &expected {
        writeln!(text, "{}\t{}\t{i}", hex::encode(id), uuid_text(u)).unwrap();
    }
    assert_eq!(text.finish().unwrap(), u64::from(n));

    // The objectid's type is the extension's, known by OID only at run time.
    let objectid = c.prepare("SELECT $1::objectid").unwrap().params()[0].clone();
    let sink = c
        .copy_in("COPY by_binary FROM STDIN (FORMAT binary)")
        .unwrap();
    let mut binary = BinaryCopyInWriter::new(sink, &[objectid, Type::UUID, Type::INT4]);
    for (id, u, i) in &expected {
        binary.write(&[&Raw(id.clone()), &RawUuid(*u), i]).unwrap();
    }
    assert_eq!(binary.finish().unwrap(), u64::from(n));

    expected.sort();
    assert_eq!(raw_rows(&mut c, "by_text"), expected);
    assert_eq!(raw_rows(&mut c, "by_binary"), expected);
    assert_eq!(nonempty_shards(&mut c, "by_text"), 8);
    assert_eq!(nonempty_shards(&mut c, "by_binary"), 8);
    // Co-located and keyed alike: each row landed on the same shard index in both tables.
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM by_text t JOIN by_binary b USING (id, u, n)"
        ),
        i64::from(n)
    );
    // The text form reads back as written.
    assert_eq!(
        one_string(&mut c, "SELECT id::text FROM by_text WHERE n = 1"),
        hex::encode(objectid_bytes(1))
    );
    assert_eq!(
        one_string(&mut c, "SELECT u::text FROM by_binary WHERE n = 1"),
        uuid_text(&uuid_bytes(1))
    );
}
