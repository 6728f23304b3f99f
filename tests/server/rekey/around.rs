//! Around the rekey itself: materialized views, rows without a usable time, and rekey_translate
//! before the rekey starts and after rekey_forget.

use postgres::error::SqlState;

use super::assert_verified;
use crate::common::*;

/// Around the rekey itself: a materialized view that reads the key through a view, and one that
/// reads that one, are listed by assess and plan and refreshed at the end when asked; rows whose
/// time is NULL or beyond what a UUIDv7 carries are counted by assess and plan and get the fallback
/// time; rekey_translate answers before the rekey starts (every key its own) and after
/// rekey_forget (from the mapping table it finds by its comment).
#[test]
fn materialized_views_untimed_rows_and_translate_around_the_rekey() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE acct (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz, made date);
         CREATE TABLE pay (acct_id uuid REFERENCES acct, amount int);
         CREATE INDEX ON pay (acct_id);
         INSERT INTO acct (id, at, made)
             SELECT gen_random_uuid(),
                    CASE WHEN i % 10 = 0 THEN NULL WHEN i % 10 = 1 THEN '1969-12-31 23:00:00+00'
                         ELSE '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 hour' END,
                    '2024-01-01'::date + i
               FROM generate_series(1, 100) i;
         INSERT INTO pay SELECT id, 1 FROM acct;
         CREATE VIEW acct_pay AS SELECT a.id, p.amount FROM acct a JOIN pay p ON p.acct_id = a.id;
         CREATE MATERIALIZED VIEW totals AS SELECT id, sum(amount) AS total FROM acct_pay GROUP BY id;
         CREATE MATERIALIZED VIEW top AS SELECT id FROM totals ORDER BY total DESC, id LIMIT 3;
         CREATE MATERIALIZED VIEW unrelated AS SELECT 1 AS one",
    )
    .unwrap();
    let some_key = one_string(&mut c, "SELECT id::text FROM acct ORDER BY id LIMIT 1");
    // Before any rekey: every key is its own.
    assert_eq!(
        one_string(
            &mut c,
            &format!("SELECT rekey_translate('acct', '{some_key}')::text")
        ),
        some_key
    );
    let row = c
        .query_one(
            "SELECT time_columns::text[], untimed_rows, materialized_views::text[] FROM rekey_assess('acct')",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, Vec<String>>(0), vec!["at", "made"]);
    assert_eq!(row.get::<_, Vec<i64>>(1), vec![20, 0]);
    assert_eq!(row.get::<_, Vec<String>>(2), vec!["totals", "top"]);
    let plan: Vec<String> = c
        .query("SELECT * FROM rekey_plan('acct', 'at')", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let plan = plan.join("\n");
    assert!(
        plan.contains("times: 20 version-4 keys have no time a UUIDv7 can carry in at")
            && plan.contains("they get the fallback time 1970-01-01 00:00:00 UTC"),
        "{plan}"
    );
    let refresh = plan
        .find("REFRESH MATERIALIZED VIEW public.totals")
        .unwrap();
    assert!(
        refresh < plan.find("REFRESH MATERIALIZED VIEW public.top").unwrap(),
        "{plan}"
    );
    assert!(!plan.contains("public.unrelated"), "{plan}");

    // The materialized views' owner must be one the caller may act for, checked up front.
    c.batch_execute(
        "DROP ROLE IF EXISTS rekey_mv_owner; CREATE ROLE rekey_mv_owner;
         DROP ROLE IF EXISTS rekey_mv_runner; CREATE ROLE rekey_mv_runner;
         GRANT rekey_mv_owner TO rekey_mv_runner; GRANT CREATE ON SCHEMA public TO rekey_mv_owner;
         ALTER TABLE acct OWNER TO rekey_mv_owner; ALTER TABLE pay OWNER TO rekey_mv_owner;
         ALTER VIEW acct_pay OWNER TO rekey_mv_owner; ALTER MATERIALIZED VIEW totals OWNER TO rekey_mv_owner",
    )
    .unwrap();
    c.batch_execute("SET ROLE rekey_mv_runner").unwrap();
    let (got, message) = error_of(
        &mut c,
        "CALL rekey_run('acct', 'at', refresh_materialized_views => true, fallback_time => '2000-01-01 00:00:00+00')",
    );
    assert_eq!(got, SqlState::INSUFFICIENT_PRIVILEGE, "{message}");
    assert!(
        message.contains("public.top (owned by postgres)"),
        "{message}"
    );
    c.batch_execute(
        "RESET ROLE; ALTER MATERIALIZED VIEW top OWNER TO rekey_mv_owner; SET ROLE rekey_mv_runner",
    )
    .unwrap();
    c.batch_execute(
        "CALL rekey_run('acct', 'at', batch_size => 30, refresh_materialized_views => true,
                        fallback_time => '2000-01-01 00:00:00+00')",
    )
    .unwrap();
    c.batch_execute("RESET ROLE").unwrap();
    // The views hold the new keys; the untimed rows carry the fallback time.
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM totals t JOIN acct a ON a.id = t.id"
        ),
        100
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM top t JOIN acct a ON a.id = t.id"
        ),
        3
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM acct WHERE public.uuid_extract_timestamp(id) = '2000-01-01 00:00:00+00'"
        ),
        20
    );
    assert_verified(&mut c, "acct");
    let new_key = one_string(
        &mut c,
        &format!("SELECT rekey_translate('acct', '{some_key}')::text"),
    );
    assert_ne!(new_key, some_key);
    // After rekey_forget, the mapping table still answers.
    c.batch_execute("SELECT rekey_forget('acct')").unwrap();
    assert_eq!(
        one_string(
            &mut c,
            &format!("SELECT rekey_translate('acct', '{some_key}')::text")
        ),
        new_key
    );
    // A table of another owner with the same comment is not taken for it.
    c.batch_execute(
        "ALTER TABLE acct_rekey_map RENAME TO acct_rekey_map_kept;
         CREATE TABLE planted (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE, batch bigint NOT NULL);
         INSERT INTO planted SELECT old_key, gen_random_uuid(), 1 FROM acct_rekey_map_kept;
         ALTER TABLE planted OWNER TO rekey_mv_runner",
    )
    .unwrap();
    let comment = one_string(
        &mut c,
        "SELECT obj_description('acct_rekey_map_kept'::regclass, 'pg_class')",
    );
    c.batch_execute(&format!(
        "COMMENT ON TABLE planted IS '{}'; DROP TABLE acct_rekey_map_kept",
        comment.replace('\'', "''")
    ))
    .unwrap();
    assert_eq!(
        one_string(
            &mut c,
            &format!("SELECT rekey_translate('acct', '{some_key}')::text")
        ),
        some_key
    );
}
