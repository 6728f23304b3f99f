use crate::common::*;

#[test]
fn min_and_max() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(
            "SELECT min(id)::text, max(id)::text FROM (VALUES \
               ('7fffffffffffffffffffffff'::objectid), ('800000000000000000000000'), (NULL), \
               ('507f1f77bcf86cd799439011'), ('ffffffffffffffffffffffff'), ('000000000000000000000001')) v(id)",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "000000000000000000000001");
    assert_eq!(row.get::<_, String>(1), "ffffffffffffffffffffffff");
    let row = c
        .query_one(
            "SELECT min(id) IS NULL, max(id) IS NULL FROM (SELECT NULL::objectid WHERE false) v(id)",
            &[],
        )
        .unwrap();
    assert!(
        row.get::<_, bool>(0) && row.get::<_, bool>(1),
        "empty input gives NULL"
    );
    let row = c
        .query_one(
            "SELECT min(id) IS NULL FROM (VALUES (NULL::objectid), (NULL)) v(id)",
            &[],
        )
        .unwrap();
    assert!(row.get::<_, bool>(0), "all-NULL input gives NULL");
}

#[test]
fn min_and_max_in_parallel_and_from_an_index() {
    let mut c = database_with_extension("").client;
    c.batch_execute(&format!(
        "CREATE TABLE t AS {}; ANALYZE t; \
         SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; \
         SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2",
        sample_ids_sql(200_000)
    ))
    .unwrap();
    let q = "SELECT min(id)::text, max(id)::text FROM t";
    let plan = explain(&mut c, "SELECT min(id), max(id) FROM t");
    assert!(
        plan.contains("Partial Aggregate") && plan.contains("Finalize Aggregate"),
        "{plan}"
    );
    let parallel = c.query_one(q, &[]).unwrap();
    let (pmin, pmax): (String, String) = (parallel.get(0), parallel.get(1));
    // The same from sorted text, which needs no objectid ordering at all.
    assert_eq!(pmin, one_string(&mut c, "SELECT min(id::text) FROM t"));
    assert_eq!(pmax, one_string(&mut c, "SELECT max(id::text) FROM t"));

    c.batch_execute("RESET ALL; CREATE INDEX ON t (id); ANALYZE t")
        .unwrap();
    let plan = explain(&mut c, "SELECT min(id), max(id) FROM t");
    assert!(
        plan.contains("Index Only Scan using t_id_idx")
            && plan.contains("Index Only Scan Backward"),
        "{plan}"
    );
    let indexed = c.query_one(q, &[]).unwrap();
    assert_eq!(
        (indexed.get::<_, String>(0), indexed.get::<_, String>(1)),
        (pmin, pmax)
    );
}
