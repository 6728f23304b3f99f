//! Joins on objectid keys: a child table co-located with its parent (same shard for a parent and
//! its children, so the join and the foreign key stay on one node), and a reference table (a
//! copy on every node). Every result must equal the same query on plain local tables.

use postgres::error::SqlState;
use postgres::Client;

use crate::cluster::*;
use crate::common::*;

/// `sql` with each `@` removed, on the distributed tables, and with each `@` made `_local`, on
/// the local copies (`FROM p@ p` names table p or p_local, aliased p): the same rows.
fn same_as_local(c: &mut Client, sql: &str) -> Vec<String> {
    assert!(sql.contains('@'));
    let distributed = sorted_rows(c, &sql.replace('@', "")).unwrap();
    let local = sorted_rows(c, &sql.replace('@', "_local")).unwrap();
    assert_eq!(distributed, local, "{sql}");
    distributed
}

#[test]
fn colocated_child_with_a_foreign_key_joins_as_local_tables_do() {
    let mut c = fresh_citus_db("t_citus_colocated");
    c.batch_execute(
        "CREATE TABLE p_local (id objectid PRIMARY KEY, name text NOT NULL); \
         CREATE TABLE c_local (id objectid NOT NULL, p_id objectid NOT NULL REFERENCES p_local, \
           amount int NOT NULL, PRIMARY KEY (p_id, id)); \
         INSERT INTO p_local SELECT gen_objectid_at(now() - i * interval '1 hour'), 'parent ' || i \
           FROM generate_series(1, 500) i; \
         INSERT INTO c_local SELECT gen_objectid_at(now() - j * interval '1 min'), p.id, j % 97 \
           FROM (SELECT id, row_number() OVER (ORDER BY id) AS k FROM p_local) p, \
                generate_series(1, 3000) j WHERE j % 500 = p.k - 1; \
         CREATE TABLE p (id objectid PRIMARY KEY, name text NOT NULL); \
         CREATE TABLE c (id objectid NOT NULL, p_id objectid NOT NULL REFERENCES p, \
           amount int NOT NULL, PRIMARY KEY (p_id, id)); \
         SELECT create_distributed_table('p', 'id', shard_count => 8); \
         SELECT create_distributed_table('c', 'p_id', colocate_with => 'p');",
    )
    .unwrap();
    c.batch_execute(
        "INSERT INTO p SELECT * FROM p_local; INSERT INTO c SELECT * FROM c_local; ANALYZE p, c",
    )
    .unwrap();
    assert_eq!(one_i64(&mut c, "SELECT count(*) FROM c_local"), 3000);
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(DISTINCT colocationid) FROM pg_dist_partition \
             WHERE logicalrelid IN ('p'::regclass, 'c'::regclass)"
        ),
        1,
        "one co-location group"
    );

    let per_parent = same_as_local(
        &mut c,
        "SELECT p.id::text, p.name, count(*), sum(c.amount) FROM p@ p JOIN c@ c ON c.p_id = p.id \
         GROUP BY p.id, p.name",
    );
    assert_eq!(per_parent.len(), 500, "every parent has children");
    same_as_local(
        &mut c,
        "SELECT c.id::text, p.name FROM c@ c JOIN p@ p ON p.id = c.p_id \
         WHERE objectid_timestamp(c.id) >= now() - interval '100 min 30 s' \
           AND objectid_timestamp(p.id) < now() - interval '250 hours'",
    );
    same_as_local(
        &mut c,
        "SELECT p.id::text, count(c.id) FROM p@ p LEFT JOIN c@ c ON c.p_id = p.id AND c.amount = 3 \
         GROUP BY p.id",
    );
    // The join runs on the shards, one task per co-located pair, without moving rows.
    let plan = explain(&mut c, "SELECT count(*) FROM p JOIN c ON c.p_id = p.id");
    assert_eq!(task_count(&plan), 8, "{plan}");
    assert!(!plan.contains("MapMergeJob"), "{plan}");

    // A join for one parent goes to the one shard holding it and its children.
    let one = one_string(
        &mut c,
        "SELECT id::text FROM p_local ORDER BY id LIMIT 1 OFFSET 7",
    );
    let rows = same_as_local(
        &mut c,
        &format!(
            "SELECT c.id::text, c.amount FROM p@ p JOIN c@ c ON c.p_id = p.id WHERE p.id = '{one}'"
        ),
    );
    assert_eq!(rows.len(), 6);
    let plan = explain(
        &mut c,
        &format!("SELECT c.id FROM p JOIN c ON c.p_id = p.id WHERE p.id = '{one}'"),
    );
    assert_eq!(task_count(&plan), 1, "{plan}");

    // The foreign key holds on the shards.
    let err = expect_error(
        &mut c,
        "INSERT INTO c VALUES (gen_objectid(), '000000000000000000000000', 1)",
        &SqlState::FOREIGN_KEY_VIOLATION,
    );
    assert!(err.contains("c_p_id_fkey"), "{err}");
    expect_error(
        &mut c,
        &format!("DELETE FROM p WHERE id = '{one}'"),
        &SqlState::FOREIGN_KEY_VIOLATION,
    );
    assert_eq!(
        one_i64(
            &mut c,
            &format!("SELECT count(*) FROM p WHERE id = '{one}'")
        ),
        1
    );
}

#[test]
fn reference_table_of_objectids_joins_a_distributed_table() {
    let db = "t_citus_reference";
    let mut c = fresh_citus_db(db);
    c.batch_execute(
        "CREATE TABLE r_local (id objectid PRIMARY KEY, label text NOT NULL, made objectid NOT NULL); \
         CREATE TABLE t_local (id objectid PRIMARY KEY, r_id objectid NOT NULL REFERENCES r_local, \
           n int NOT NULL); \
         INSERT INTO r_local SELECT gen_objectid_at(now() - i * interval '1 day'), 'kind ' || i, \
           gen_objectid() FROM generate_series(1, 40) i; \
         INSERT INTO t_local SELECT gen_objectid(), r.id, i \
           FROM generate_series(1, 4000) i \
           JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS k FROM r_local) r ON r.k = i % 40; \
         CREATE TABLE r (id objectid PRIMARY KEY, label text NOT NULL, made objectid NOT NULL); \
         CREATE TABLE t (id objectid PRIMARY KEY, r_id objectid NOT NULL REFERENCES r, n int NOT NULL); \
         SELECT create_reference_table('r'); \
         SELECT create_distributed_table('t', 'id', shard_count => 8);",
    )
    .unwrap();
    c.batch_execute("INSERT INTO r SELECT * FROM r_local; INSERT INTO t SELECT * FROM t_local")
        .unwrap();

    // Every worker holds the whole reference table, readable there directly.
    let checksum = "SELECT count(*) || ' ' || md5(string_agg(id::text || label || made::text, ',' \
                    ORDER BY id)) FROM r";
    let expected = one_string(&mut c, checksum);
    assert!(expected.starts_with("40 "), "{expected}");
    for (i, w) in workers(db).iter_mut().enumerate() {
        assert_eq!(one_string(w, checksum), expected, "worker {}", i + 1);
    }

    let per_kind = same_as_local(
        &mut c,
        "SELECT r.label, r.made::text, count(*), min(t.id)::text, max(t.id)::text \
         FROM t@ t JOIN r@ r ON r.id = t.r_id GROUP BY r.label, r.made",
    );
    assert_eq!(per_kind.len(), 40);
    same_as_local(
        &mut c,
        "SELECT t.id::text, r.label FROM t@ t JOIN r@ r ON r.id = t.r_id \
         WHERE objectid_timestamp(r.id) >= now() - interval '5 days 12 hours' AND t.n % 7 = 0",
    );
    expect_error(
        &mut c,
        "INSERT INTO t VALUES (gen_objectid(), 'ffffffffffffffffffffffff', 1)",
        &SqlState::FOREIGN_KEY_VIOLATION,
    );
}
