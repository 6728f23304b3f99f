//! Each operator class is really used by the planner, and gives the same rows as a scan.

use postgres::Client;

use crate::common::*;

/// Rows of `sql` as sorted text, for comparing plans that should return the same rows.
fn rows_text(c: &mut Client, sql: &str) -> Vec<String> {
    let mut v: Vec<String> = c
        .query(&format!("SELECT x::text FROM ({sql}) AS q(x)"), &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    v.sort();
    v
}

fn assert_plan(c: &mut Client, sql: &str, needle: &str) {
    let plan = explain(c, sql);
    assert!(
        plan.contains(needle),
        "expected {needle:?} in the plan of {sql}:\n{plan}"
    );
}

/// Ascending ids, as a generator makes them: `n` rows, `lpad(hex(i))`.
fn ascending_table(c: &mut Client, table: &str, n: u32) {
    c.batch_execute(&format!(
        "CREATE TABLE {table} AS SELECT lpad(to_hex(i), 24, '0')::objectid AS id, i AS n \
         FROM generate_series(1, {n}) AS i"
    ))
    .unwrap();
}

#[test]
fn btree_index_scan() {
    let mut c = database_with_extension("").client;
    c.batch_execute(&format!(
        "CREATE TABLE t (id objectid PRIMARY KEY, n int); \
         INSERT INTO t SELECT id, row_number() OVER () FROM ({}) s; ANALYZE t",
        sample_ids_sql(20000)
    ))
    .unwrap();
    let probe: String = one_string(&mut c, "SELECT id::text FROM t WHERE n = 777");
    let point = format!("SELECT id FROM t WHERE id = '{probe}'");
    assert_plan(&mut c, &point, "Index Only Scan using t_pkey on t");
    let range = "SELECT id FROM t WHERE id >= '400000000000000000000000' \
                 AND id < '800000000000000000000000'";
    c.batch_execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
        .unwrap();
    assert_plan(&mut c, range, "Index Cond: ((id >= '400000000000000000000000'::objectid) AND (id < '800000000000000000000000'::objectid))");
    let with_index = rows_text(&mut c, range);
    assert_eq!(rows_text(&mut c, &point), vec![probe.clone()]);
    c.batch_execute(
        "RESET enable_seqscan; SET enable_indexscan = off; SET enable_indexonlyscan = off",
    )
    .unwrap();
    assert_plan(&mut c, range, "Seq Scan on t");
    let without = rows_text(&mut c, range);
    assert!(with_index.len() > 1000);
    assert_eq!(with_index, without);
    // ORDER BY id ... LIMIT is answered from the index, without a sort.
    c.batch_execute("RESET ALL").unwrap();
    assert_plan(
        &mut c,
        "SELECT id FROM t ORDER BY id DESC LIMIT 10",
        "Index Only Scan Backward using t_pkey",
    );
}

#[test]
fn btree_has_sort_support_and_allows_deduplication() {
    let mut c = database_with_extension("").client;
    let procs: Vec<(i16, String)> = c
        .query(
            "SELECT amprocnum, amproc::regproc::text FROM pg_amproc p \
             JOIN pg_opfamily f ON f.oid = p.amprocfamily \
             JOIN pg_am am ON am.oid = f.opfmethod \
             WHERE am.amname = 'btree' AND p.amproclefttype = 'objectid'::regtype ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        procs,
        vec![
            (1, "objectid_cmp".to_string()),
            (2, "objectid_sortsupport".to_string()),
            (4, "btequalimage".to_string())
        ]
    );
    c.batch_execute(
        "CREATE TABLE d AS SELECT ('00000000000000000000000' || (i % 4))::objectid AS id \
           FROM generate_series(1, 50000) i; \
         CREATE INDEX d_id ON d (id); \
         CREATE INDEX d_id_plain ON d (id) WITH (deduplicate_items = off)",
    )
    .unwrap();
    // 50,000 entries of 4 distinct keys: deduplicated into posting lists they need a fraction of
    // the pages that one index tuple per row does. Without btequalimage in the operator class,
    // btree would not deduplicate and both indexes would be the same size.
    let dedup = one_i64(&mut c, "SELECT pg_relation_size('d_id')");
    let plain = one_i64(&mut c, "SELECT pg_relation_size('d_id_plain')");
    assert!(
        dedup * 3 < plain,
        "deduplicated {dedup} bytes, plain {plain} bytes"
    );
}

#[test]
fn hash_join_hash_aggregate_and_merge_join() {
    let mut c = database_with_extension("").client;
    c.batch_execute(&format!(
        "CREATE TABLE a AS {ids}; CREATE TABLE b AS SELECT id FROM a WHERE id::text < '8'; \
         ANALYZE a; ANALYZE b",
        ids = sample_ids_sql(20000)
    ))
    .unwrap();
    let join = "SELECT a.id FROM a JOIN b ON a.id = b.id";
    let expected = one_i64(&mut c, "SELECT count(*) FROM b");
    assert!(expected > 5000);

    c.batch_execute("SET enable_mergejoin = off; SET enable_nestloop = off")
        .unwrap();
    assert_plan(&mut c, join, "Hash Join");
    let hashed = rows_text(&mut c, join);
    assert_eq!(hashed.len() as i64, expected);

    c.batch_execute("RESET ALL; SET enable_hashjoin = off; SET enable_nestloop = off")
        .unwrap();
    assert_plan(&mut c, join, "Merge Join");
    assert_eq!(rows_text(&mut c, join), hashed);

    c.batch_execute("RESET ALL; SET enable_sort = off").unwrap();
    let group = "SELECT id FROM (SELECT id FROM a UNION ALL SELECT id FROM b) u GROUP BY id";
    assert_plan(&mut c, group, "HashAggregate");
    assert_eq!(rows_text(&mut c, group).len(), 20000);
}

#[test]
fn hash_index_scan() {
    let mut c = database_with_extension("").client;
    c.batch_execute(&format!(
        "CREATE TABLE t AS {}; CREATE INDEX t_id_hash ON t USING hash (id); ANALYZE t",
        sample_ids_sql(20000)
    ))
    .unwrap();
    let probe = one_string(
        &mut c,
        "SELECT id::text FROM t ORDER BY id LIMIT 1 OFFSET 1234",
    );
    let q = format!("SELECT id FROM t WHERE id = '{probe}'");
    c.batch_execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
        .unwrap();
    assert_plan(&mut c, &q, "Index Scan using t_id_hash on t");
    assert_eq!(rows_text(&mut c, &q), vec![probe]);
}

#[test]
fn hash_partitions_follow_satisfies_hash_partition() {
    let mut c = database_with_extension("").client;
    c.batch_execute(&format!(
        "CREATE TABLE p (id objectid PRIMARY KEY) PARTITION BY HASH (id); \
         CREATE TABLE p_0 PARTITION OF p FOR VALUES WITH (MODULUS 4, REMAINDER 0); \
         CREATE TABLE p_1 PARTITION OF p FOR VALUES WITH (MODULUS 4, REMAINDER 1); \
         CREATE TABLE p_2 PARTITION OF p FOR VALUES WITH (MODULUS 4, REMAINDER 2); \
         CREATE TABLE p_3 PARTITION OF p FOR VALUES WITH (MODULUS 4, REMAINDER 3); \
         INSERT INTO p {}",
        sample_ids_sql(4000)
    ))
    .unwrap();
    let rows = c
        .query(
            "SELECT tableoid::regclass::text, count(*), \
                    count(*) FILTER (WHERE satisfies_hash_partition('p'::regclass, 4, \
                        right(tableoid::regclass::text, 1)::int, id)) \
             FROM p GROUP BY 1 ORDER BY 1",
            &[],
        )
        .unwrap();
    assert_eq!(rows.len(), 4, "every partition gets rows");
    for r in rows {
        let (part, n, ok): (String, i64, i64) = (r.get(0), r.get(1), r.get(2));
        assert!(n > 700, "{part} has only {n} of 4000 rows");
        assert_eq!(n, ok, "rows of {part} that hash elsewhere");
    }
    // Pruning by the same hash: a point query touches one partition.
    let probe = one_string(&mut c, "SELECT id::text FROM p_2 LIMIT 1");
    let plan = explain(&mut c, &format!("SELECT * FROM p WHERE id = '{probe}'"));
    assert!(
        plan.contains("p_2")
            && !plan.contains("p_0")
            && !plan.contains("p_1")
            && !plan.contains("p_3"),
        "{plan}"
    );
}

/// The heap blocks a BRIN bitmap scan visited, from EXPLAIN ANALYZE.
fn brin_blocks_visited(c: &mut Client, sql: &str) -> i64 {
    let plan = explain_analyze(c, sql);
    let at = plan
        .find("lossy=")
        .unwrap_or_else(|| panic!("no lossy blocks in\n{plan}"));
    plan[at + 6..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[test]
fn brin_operator_classes() {
    let mut c = database_with_extension("").client;
    ascending_table(&mut c, "t", 200_000);
    c.batch_execute("ANALYZE t").unwrap();
    let total_pages = one_i64(
        &mut c,
        "SELECT relpages::int8 FROM pg_class WHERE relname = 't'",
    );
    let range = "SELECT id FROM t WHERE id >= '000000000000000000010000' AND id < '000000000000000000010400'";
    let point = "SELECT id FROM t WHERE id = '0000000000000000000186a0'";
    c.batch_execute("SET enable_indexscan = off").unwrap();
    let expected_range = rows_text(&mut c, range);
    assert_eq!(expected_range.len(), 1024);
    let expected_point = rows_text(&mut c, point);
    assert_eq!(expected_point, vec!["0000000000000000000186a0".to_string()]);

    let server_version = one_i64(&mut c, "SELECT current_setting('server_version_num')::int8");
    let mut opclasses = vec![
        ("", vec![range, point]),
        ("objectid_minmax_ops", vec![range, point]),
        ("objectid_minmax_multi_ops", vec![range, point]),
        // Sized for all-distinct values: the default assumes a tenth of the rows are distinct,
        // which overloads the filter on a key column.
        (
            "objectid_bloom_ops(n_distinct_per_range = -1, false_positive_rate = 0.01)",
            vec![point],
        ),
    ];
    if server_version < 140000 {
        // minmax-multi and bloom arrived in PostgreSQL 14; on 13 the extension leaves them out.
        opclasses.truncate(2);
        for missing in ["objectid_minmax_multi_ops", "objectid_bloom_ops"] {
            expect_error(
                &mut c,
                &format!("CREATE INDEX ON t USING brin (id {missing})"),
                &postgres::error::SqlState::UNDEFINED_OBJECT,
            );
        }
    }
    for (opclass, queries) in opclasses {
        c.batch_execute(&format!(
            "DROP INDEX IF EXISTS t_brin; CREATE INDEX t_brin ON t USING brin (id {opclass}) WITH (pages_per_range = 16); \
             SET enable_seqscan = off"
        ))
        .unwrap();
        if opclass.is_empty() {
            // minmax is the default BRIN operator class.
            assert_eq!(
                one_string(
                    &mut c,
                    "SELECT opcname::text FROM pg_index i JOIN pg_opclass o \
                                    ON o.oid = i.indclass[0] WHERE indexrelid = 't_brin'::regclass"
                ),
                "objectid_minmax_ops"
            );
        }
        for q in queries {
            assert_plan(&mut c, q, "Bitmap Index Scan on t_brin");
            let want = if q == range {
                &expected_range
            } else {
                &expected_point
            };
            assert_eq!(&rows_text(&mut c, q), want, "{opclass} {q}");
            let visited = brin_blocks_visited(&mut c, q);
            // The rows sought lie in one or two block ranges of 16 pages.
            assert!(
                (1..=32).contains(&visited),
                "{opclass}: {q} visited {visited} of {total_pages} pages"
            );
        }
        c.batch_execute("RESET enable_seqscan").unwrap();
    }
}

#[test]
fn hash_functions_keep_postgresql_contract() {
    let mut c = database_with_extension("").client;
    c.batch_execute(&format!("CREATE TABLE t AS {}", sample_ids_sql(5000)))
        .unwrap();
    // With seed 0 the extended hash's low 32 bits equal the 32-bit hash (PostgreSQL requires it
    // of every hash operator class); another seed gives other values; equal values hash equally.
    let row = c
        .query_one(
            "SELECT count(*) FILTER (WHERE (objectid_hash_extended(id, 0) & 4294967295) \
                                       <> (objectid_hash(id)::int8 & 4294967295)), \
                    count(*) FILTER (WHERE objectid_hash_extended(id, 1) = objectid_hash_extended(id, 0)), \
                    count(DISTINCT objectid_hash(id)), \
                    count(*) FILTER (WHERE objectid_hash(id) <> objectid_hash(id::text::objectid)) \
             FROM t",
            &[],
        )
        .unwrap();
    assert_eq!(
        row.get::<_, i64>(0),
        0,
        "seed 0 disagrees with the 32-bit hash"
    );
    assert!(row.get::<_, i64>(1) < 5, "the seed is ignored");
    assert!(row.get::<_, i64>(2) > 4990, "too many collisions");
    assert_eq!(row.get::<_, i64>(3), 0);
    let row = c
        .query_one(
            "SELECT objectid_hash(NULL) IS NULL AND objectid_hash_extended(NULL, 0) IS NULL",
            &[],
        )
        .unwrap();
    assert!(row.get::<_, bool>(0));
}
