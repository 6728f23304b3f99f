//! docs/clients.md's Rust adapter (PgObjectId) against a real server: every value written by the
//! client must read back as the same ObjectId and, on the server, as the same 12 bytes; every id
//! the server makes must carry the generation time bson reads from it. Each test works in a
//! database of its own, so they run in parallel.

use std::error::Error as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bson::oid::ObjectId;
use pg_objectid_client_test::objectid_postgres::PgObjectId;
use postgres::binary_copy::{BinaryCopyInWriter, BinaryCopyOutIter};
use postgres::error::SqlState;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{FromSql, Type, WrongType};
use postgres::{Client, NoTls};

/// Ids whose first 4 bytes are the edges of the unsigned Unix second: 1970, 2012, the last second
/// a signed reading gets right (2038-01-19 03:14:07), the first it gets wrong, and 2106.
const EDGES: [&str; 5] = [
    "000000000000000000000000",
    "507f1f77bcf86cd799439011",
    "7fffffffffffffffffffffff",
    "800000000000000000000000",
    "ffffffffffffffffffffffff",
];

fn dsn() -> String {
    std::env::var("PG_OBJECTID_CLIENTS_DSN").expect(
        "PG_OBJECTID_CLIENTS_DSN is not set: run this through scripts/clients_test.sh, which starts \
         a server with pg_objectid installed",
    )
}

fn connect(dbname: &str) -> Client {
    Client::connect(&format!("{} dbname={dbname}", dsn()), NoTls)
        .unwrap_or_else(|e| panic!("cannot connect to database {dbname}: {e}"))
}

/// A new database named `name`, set up by `setup`.
fn fresh_db(name: &str, setup: &str) -> Client {
    let mut admin = connect("postgres");
    // Two statements: a multi-statement string runs in one transaction, which DROP DATABASE refuses.
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE template0"))
        .unwrap();
    let mut client = connect(name);
    client.batch_execute(setup).unwrap();
    client
}

fn db(name: &str) -> Client {
    fresh_db(name, "CREATE EXTENSION pg_objectid")
}

/// The edge ids and 50 made by bson, as a MongoDB client makes them.
fn client_ids() -> Vec<ObjectId> {
    let mut ids: Vec<ObjectId> = EDGES
        .iter()
        .map(|h| ObjectId::parse_str(h).unwrap())
        .collect();
    ids.extend((0..50).map(|_| ObjectId::new()));
    ids
}

fn unix_millis(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// The driver's error came from a ToSql or FromSql `accepts` saying no.
fn is_wrong_type(err: &postgres::Error) -> bool {
    err.source()
        .is_some_and(|s| s.downcast_ref::<WrongType>().is_some())
}

#[test]
fn client_ids_read_back_as_the_same_bytes() {
    let mut c = db("clients_rust_roundtrip");
    c.batch_execute("CREATE TABLE t (n int4 PRIMARY KEY, id objectid NOT NULL)")
        .unwrap();
    let ids = client_ids();
    // A parameter is sent in binary: the 12 raw bytes, which only the type's binary receive
    // function accepts (its text input wants 24 hex digits).
    let insert = c.prepare("INSERT INTO t VALUES ($1, $2)").unwrap();
    for (n, id) in ids.iter().enumerate() {
        c.execute(&insert, &[&(n as i32), &PgObjectId(*id)])
            .unwrap();
    }
    let rows = c
        .query("SELECT n, id, id::bytea, id::text FROM t ORDER BY n", &[])
        .unwrap();
    assert_eq!(rows.len(), ids.len());
    for row in &rows {
        let id = ids[row.get::<_, i32>(0) as usize];
        let read: PgObjectId = row.get(1);
        assert_eq!(read, PgObjectId(id));
        assert_eq!(read.0.bytes(), id.bytes(), "the driver's bytes");
        assert_eq!(
            row.get::<_, Vec<u8>>(2),
            id.bytes().to_vec(),
            "the server's bytes"
        );
        assert_eq!(row.get::<_, String>(3), id.to_hex(), "the server's text");
        assert_eq!(read.to_string(), id.to_hex(), "Display");
        assert_eq!(ObjectId::from(read), id);
    }
    // Ids as search keys find their own rows.
    for (n, id) in ids.iter().enumerate() {
        let found: i32 = c
            .query_one("SELECT n FROM t WHERE id = $1", &[&PgObjectId::from(*id)])
            .unwrap()
            .get(0);
        assert_eq!(found, n as i32);
    }
}

#[test]
fn server_ids_carry_bsons_generation_time() {
    let mut c = db("clients_rust_time");
    let before = SystemTime::now();
    let rows = c
        .query(
            "SELECT id, objectid_timestamp(id), id::bytea FROM (
                 SELECT gen_objectid() AS id FROM generate_series(1, 200)
                 UNION ALL SELECT unnest($1::text[])::objectid) AS s",
            &[&EDGES.to_vec()],
        )
        .unwrap();
    let after = SystemTime::now();
    assert_eq!(rows.len(), 200 + EDGES.len());
    for (i, row) in rows.iter().enumerate() {
        let id: PgObjectId = row.get(0);
        let server_time: SystemTime = row.get(1);
        assert_eq!(
            unix_millis(server_time),
            id.0.timestamp().timestamp_millis(),
            "{id}: objectid_timestamp against bson's timestamp()"
        );
        assert_eq!(row.get::<_, Vec<u8>>(2), id.0.bytes().to_vec());
        if i < 200 {
            // Made just now (the stamp may run up to a second ahead of the clock).
            let secs = unix_millis(server_time) / 1000;
            assert!(
                secs >= unix_millis(before) / 1000 - 1
                    && secs <= unix_millis(after + Duration::from_secs(2)) / 1000,
                "{id} was not made now"
            );
        }
    }
    // The edges, read unsigned: 2038-01-19 03:14:08 is 0x80000000 seconds, 2106 is 0xffffffff.
    let last: PgObjectId = rows.last().unwrap().get(0);
    assert_eq!(
        last.0.timestamp().timestamp_millis(),
        0xffff_ffff_i64 * 1000
    );
    let first_wrong: PgObjectId = rows[200 + 3].get(0);
    assert_eq!(
        first_wrong.0.timestamp().timestamp_millis(),
        0x8000_0000_i64 * 1000
    );
}

#[test]
fn null_is_none_both_ways() {
    let mut c = db("clients_rust_null");
    c.batch_execute("CREATE TABLE t (n int4, id objectid)")
        .unwrap();
    let none: Option<PgObjectId> = None;
    let some = Some(PgObjectId(ObjectId::new()));
    c.execute("INSERT INTO t VALUES (1, $1), (2, $2)", &[&none, &some])
        .unwrap();
    let rows = c
        .query("SELECT id, id IS NULL FROM t ORDER BY n", &[])
        .unwrap();
    assert_eq!(rows[0].get::<_, Option<PgObjectId>>(0), None);
    assert!(rows[0].get::<_, bool>(1), "None arrived as NULL");
    assert_eq!(rows[1].get::<_, Option<PgObjectId>>(0), some);
    // A NULL read into the plain type is an error, not a made-up id.
    assert!(rows[0].try_get::<_, PgObjectId>(0).is_err());
}

#[test]
fn arrays_are_vecs() {
    let mut c = db("clients_rust_arrays");
    let ids: Vec<PgObjectId> = client_ids().into_iter().map(PgObjectId).collect();
    let row = c
        .query_one(
            "SELECT $1::objectid[], pg_typeof($1)::text, array_to_string($1, ','), cardinality($1)",
            &[&ids],
        )
        .unwrap();
    assert_eq!(row.get::<_, Vec<PgObjectId>>(0), ids);
    assert_eq!(row.get::<_, String>(1), "objectid[]");
    let hex: Vec<String> = ids.iter().map(|i| i.0.to_hex()).collect();
    assert_eq!(
        row.get::<_, String>(2),
        hex.join(","),
        "the server's elements"
    );
    assert_eq!(row.get::<_, i32>(3), ids.len() as i32);

    // NULL elements.
    let with_null = vec![Some(ids[0]), None, Some(ids[1])];
    let row = c
        .query_one(
            "SELECT $1::objectid[], array_position($1::objectid[], NULL)",
            &[&with_null],
        )
        .unwrap();
    assert_eq!(row.get::<_, Vec<Option<PgObjectId>>>(0), with_null);
    assert_eq!(row.get::<_, i32>(1), 2);

    // An array made by the server; and = ANY($1) with an array parameter.
    c.batch_execute(
        "CREATE TABLE t (id objectid); INSERT INTO t SELECT gen_objectid() FROM generate_series(1, 100)",
    )
    .unwrap();
    let all: Vec<PgObjectId> = c
        .query_one("SELECT array_agg(id ORDER BY id) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(all.len(), 100);
    let found: i64 = c
        .query_one(
            "SELECT count(*) FROM t WHERE id = ANY($1)",
            &[&all[..10].to_vec()],
        )
        .unwrap()
        .get(0);
    assert_eq!(found, 10);

    // A Vec has one dimension; a two-dimensional array is refused, not flattened.
    let row = c
        .query_one(
            "SELECT ARRAY[ARRAY[gen_objectid()], ARRAY[gen_objectid()]]",
            &[],
        )
        .unwrap();
    let err = row.try_get::<_, Vec<PgObjectId>>(0).unwrap_err();
    let cause = err.source().map(|s| s.to_string());
    assert_eq!(
        cause.as_deref(),
        Some("array contains too many dimensions"),
        "{err}"
    );
}

#[test]
fn binary_copy_in_and_out() {
    let mut c = db("clients_rust_copy");
    c.batch_execute("CREATE TABLE t (n int4, id objectid)")
        .unwrap();
    let objectid = c.prepare("SELECT NULL::objectid").unwrap().columns()[0]
        .type_()
        .clone();
    assert_eq!(objectid.name(), "objectid");
    let ids = client_ids();
    let mut writer = BinaryCopyInWriter::new(
        c.copy_in("COPY t (n, id) FROM STDIN (FORMAT binary)")
            .unwrap(),
        &[Type::INT4, objectid.clone()],
    );
    for (n, id) in ids.iter().enumerate() {
        writer.write(&[&(n as i32), &PgObjectId(*id)]).unwrap();
    }
    writer.write(&[&-1i32, &None::<PgObjectId>]).unwrap();
    assert_eq!(writer.finish().unwrap(), ids.len() as u64 + 1);

    for row in c
        .query("SELECT n, id::bytea FROM t WHERE n >= 0", &[])
        .unwrap()
    {
        let n: i32 = row.get(0);
        assert_eq!(row.get::<_, Vec<u8>>(1), ids[n as usize].bytes().to_vec());
    }
    let mut seen = 0;
    let mut rows = BinaryCopyOutIter::new(
        c.copy_out("COPY t (n, id) TO STDOUT (FORMAT binary)")
            .unwrap(),
        &[Type::INT4, objectid],
    );
    while let Some(row) = rows.next().unwrap() {
        let n: i32 = row.get(0);
        let id: Option<PgObjectId> = row.get(1);
        assert_eq!(id.map(|i| i.0), ids.get(n as usize).copied(), "row {n}");
        seen += 1;
    }
    assert_eq!(seen, ids.len() + 1);
}

#[test]
fn wrong_values_and_wrong_types_fail_clearly() {
    let mut c = db("clients_rust_errors");
    assert!(
        ObjectId::parse_str("507f1f77bcf86cd79943901").is_err(),
        "23 digits"
    );
    assert!(
        ObjectId::parse_str("507f1f77bcf86cd79943901g").is_err(),
        "not hex"
    );

    // An objectid where the server wants text: refused on the client, before anything runs.
    let err = c
        .query_one("SELECT $1::text", &[&PgObjectId(ObjectId::new())])
        .unwrap_err();
    assert!(is_wrong_type(&err), "{err}");
    assert!(err.as_db_error().is_none());

    // Columns of other types are not read as ids, nor ids as text.
    let row = c
        .query_one(
            "SELECT '\\x507f1f77bcf86cd799439011'::bytea, '507f1f77bcf86cd799439011'::text, \
                    '507f1f77bcf86cd799439011'::objectid",
            &[],
        )
        .unwrap();
    for i in 0..2 {
        let err = row.try_get::<_, PgObjectId>(i).unwrap_err();
        assert!(is_wrong_type(&err), "column {i}: {err}");
    }
    assert!(is_wrong_type(&row.try_get::<_, String>(2).unwrap_err()));

    // The server sends an objectid as exactly 12 bytes; anything else read as one is an error,
    // not a truncated or padded id.
    let objectid = c.prepare("SELECT NULL::objectid").unwrap().columns()[0]
        .type_()
        .clone();
    for len in [0, 11, 13] {
        let err = PgObjectId::from_sql(&objectid, &vec![0xab; len]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("objectid: expected 12 bytes, got {len}")
        );
    }

    // A malformed id in text reaches the server's input function and its error.
    let err = c
        .query_one("SELECT $1::text::objectid", &[&"507f1f77bcf86cd79943901g"])
        .unwrap_err();
    assert_eq!(
        err.as_db_error().map(|d| d.code()),
        Some(&SqlState::INVALID_TEXT_REPRESENTATION)
    );
}

#[test]
fn another_schema_and_a_domain() {
    // The extension in a schema off the search_path, and a domain over its type: the driver looks
    // both types up by OID, so the adapter needs no search_path.
    let mut c = fresh_db(
        "clients_rust_schema",
        "CREATE SCHEMA ext;
         CREATE EXTENSION pg_objectid SCHEMA ext;
         CREATE DOMAIN recent_id AS ext.objectid CHECK (ext.objectid_timestamp(VALUE) >= '2000-01-01');
         CREATE TABLE t (id ext.objectid, r recent_id)",
    );
    let path: String = c.query_one("SHOW search_path", &[]).unwrap().get(0);
    assert!(!path.contains("ext"), "{path}");
    let id = PgObjectId(ObjectId::new());
    let insert = c.prepare("INSERT INTO t VALUES ($1, $2)").unwrap();
    // The statement's second parameter is typed by the domain itself.
    assert_eq!(insert.params()[1].name(), "recent_id");
    c.execute(&insert, &[&id, &id]).unwrap();
    let row = c
        .query_one("SELECT id, r, r::ext.objectid::bytea FROM t", &[])
        .unwrap();
    assert_eq!(row.get::<_, PgObjectId>(0), id);
    assert_eq!(row.get::<_, PgObjectId>(1), id);
    assert_eq!(row.get::<_, Vec<u8>>(2), id.0.bytes().to_vec());
    // The domain's check still runs on a value sent in binary.
    let old = PgObjectId(ObjectId::parse_str(EDGES[0]).unwrap());
    let err = c.execute(&insert, &[&old, &old]).unwrap_err();
    assert_eq!(
        err.as_db_error().map(|d| d.code()),
        Some(&SqlState::CHECK_VIOLATION)
    );
}
