//! `objectid_internal.rekey_new_key(key, keys, new_keys)`, the lookup a rekey batch's rewrite
//! makes for every column of every row it changes (src/rekey/rekey_new_key.rs): the right new key
//! whether its arrays are the statement's parameters (the mapping built once and kept) or change
//! from row to row (built for each call), and an error with its SQLSTATE for arrays that make no
//! mapping.

use postgres::error::SqlState;

use crate::common::*;

#[test]
fn maps_each_key_and_passes_the_others_through() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE m AS SELECT gen_random_uuid() AS old_key, uuidv7() AS new_key FROM generate_series(1, 2000);
         CREATE TABLE r AS SELECT old_key AS k FROM m UNION ALL SELECT gen_random_uuid() FROM generate_series(1, 1000)",
    )
    .unwrap();
    // The arrays as a prepared statement's parameters, as a batch passes them (kept for the
    // statement), unsorted here; and as literals.
    c.batch_execute(
        "PREPARE look(uuid[], uuid[]) AS
           SELECT count(*) FILTER (WHERE objectid_internal.rekey_new_key(r.k, $1, $2) IS DISTINCT FROM coalesce(m.new_key, r.k))
             FROM r LEFT JOIN m ON m.old_key = r.k",
    )
    .unwrap();
    let keys = one_string(
        &mut c,
        "SELECT array_agg(old_key ORDER BY new_key)::text FROM m",
    );
    let new_keys = one_string(
        &mut c,
        "SELECT array_agg(new_key ORDER BY new_key)::text FROM m",
    );
    for plan in ["force_custom_plan", "force_generic_plan"] {
        c.batch_execute(&format!("SET plan_cache_mode = {plan}"))
            .unwrap();
        assert_eq!(
            one_i64(&mut c, &format!("EXECUTE look('{keys}', '{new_keys}')")),
            0,
            "{plan}"
        );
    }
    // Arrays that differ from row to row: the mapping of each row's own.
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FILTER (WHERE objectid_internal.rekey_new_key(x.k, ARRAY[x.k, x.o], ARRAY[x.n, x.k]) IS DISTINCT FROM x.n)
                  + count(*) FILTER (WHERE objectid_internal.rekey_new_key(x.o, ARRAY[x.k, x.o], ARRAY[x.n, x.k]) IS DISTINCT FROM x.k)
                  + count(*) FILTER (WHERE objectid_internal.rekey_new_key(x.n, ARRAY[x.k, x.o], ARRAY[x.n, x.k]) IS DISTINCT FROM x.n)
               FROM (SELECT m.old_key AS k, m.new_key AS n, gen_random_uuid() AS o FROM m) x"
        ),
        0
    );
    // A PL/pgSQL variable, passed as a parameter that changes between calls through one
    // expression state, in place or by a new array at a freed one's address: each call maps with
    // the arrays it is given (adversarial review: a mapping kept for a parameter went stale).
    c.batch_execute(
        "CREATE TABLE mm (i int, k uuid[], n uuid[]);
         INSERT INTO mm SELECT g, ARRAY['00000000-0000-0000-0000-000000000001'::uuid],
                               ARRAY[('aaaaaaaa-0000-0000-0000-00000000000' || g)::uuid] FROM generate_series(1, 4) g;
         CREATE FUNCTION f_pl(k uuid[], n uuid[]) RETURNS uuid LANGUAGE plpgsql AS
           $$ BEGIN RETURN objectid_internal.rekey_new_key('00000000-0000-0000-0000-000000000001', k, n); END $$;
         CREATE TABLE seen (i int, got uuid);
         DO $$
         DECLARE k uuid[] := ARRAY['00000000-0000-0000-0000-000000000001'::uuid]; n uuid[];
         BEGIN
           FOR i IN 1..4 LOOP
             n := ARRAY[('bbbbbbbb-0000-0000-0000-00000000000' || i)::uuid];
             n[1] := ('cccccccc-0000-0000-0000-00000000000' || i)::uuid;
             IF i = 4 THEN k := ARRAY['00000000-0000-0000-0000-000000000002'::uuid]; END IF;
             INSERT INTO seen VALUES (i, objectid_internal.rekey_new_key('00000000-0000-0000-0000-000000000001', k, n));
           END LOOP;
         END $$",
    )
    .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM mm WHERE f_pl(k, n) IS DISTINCT FROM n[1]"
        ),
        0
    );
    assert_eq!(
        strings(&mut c, "SELECT got::text FROM seen ORDER BY i"),
        [
            "cccccccc-0000-0000-0000-000000000001",
            "cccccccc-0000-0000-0000-000000000002",
            "cccccccc-0000-0000-0000-000000000003",
            "00000000-0000-0000-0000-000000000001",
        ]
    );
    // Ordered as uuid's btree orders: the first byte compared without a sign.
    assert_eq!(
        one_string(
            &mut c,
            "SELECT objectid_internal.rekey_new_key('80000000-0000-0000-0000-000000000000',
                      '{7fffffff-ffff-ffff-ffff-ffffffffffff,80000000-0000-0000-0000-000000000000}',
                      '{00000000-0000-0000-0000-000000000001,00000000-0000-0000-0000-000000000002}')::text"
        ),
        "00000000-0000-0000-0000-000000000002"
    );
    // STRICT: a NULL argument gives NULL.
    assert!(!one_bool(
        &mut c,
        "SELECT objectid_internal.rekey_new_key(NULL, '{}', '{}') IS NOT NULL"
    ));
}

#[test]
fn arrays_that_make_no_mapping_are_refused() {
    let mut c = database_with_extension("").client;
    let a = "00000000-0000-0000-0000-00000000000a";
    let b = "00000000-0000-0000-0000-00000000000b";
    let message = expect_error(
        &mut c,
        &format!("SELECT objectid_internal.rekey_new_key('{a}', '{{{a},{b}}}', '{{{a}}}')"),
        &SqlState::INVALID_PARAMETER_VALUE,
    );
    assert!(message.contains("2 keys but 1 new keys"), "{message}");
    let message = expect_error(
        &mut c,
        &format!(
            "SELECT objectid_internal.rekey_new_key('{a}', '{{{b},{a},{b}}}', '{{{a},{a},{a}}}')"
        ),
        &SqlState::INVALID_PARAMETER_VALUE,
    );
    assert!(
        message.contains(&format!("key {b} appears twice")),
        "{message}"
    );
    for (keys, new_keys) in [
        (format!("'{{{a},NULL}}'"), format!("'{{{a},{b}}}'")),
        (format!("'{{{a},{b}}}'"), format!("'{{{a},NULL}}'")),
    ] {
        let message = expect_error(
            &mut c,
            &format!("SELECT objectid_internal.rekey_new_key('{a}', {keys}, {new_keys})"),
            &SqlState::NULL_VALUE_NOT_ALLOWED,
        );
        assert!(message.contains("must not hold a NULL"), "{message}");
    }
    // Refused in a statement over many rows too, where the mapping is built once.
    expect_error(
        &mut c,
        &format!(
            "PREPARE dup(uuid[], uuid[]) AS SELECT objectid_internal.rekey_new_key(gen_random_uuid(), $1, $2) FROM generate_series(1, 100);
             EXECUTE dup('{{{a},{a}}}', '{{{a},{b}}}')"
        ),
        &SqlState::INVALID_PARAMETER_VALUE,
    );
    // A multidimensional array is read in its storage order, as unnest() reads it.
    assert_eq!(
        one_string(
            &mut c,
            &format!("SELECT objectid_internal.rekey_new_key('{b}', '{{{{{a}}},{{{b}}}}}', '{{{b},{a}}}')::text")
        ),
        a
    );
}
