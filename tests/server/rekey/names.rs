//! Names: long table names and other search paths, and names outside ASCII in a database of
//! another encoding.

use postgres::error::SqlState;

use crate::common::*;

/// Long table names that share their first 53 characters get distinct mapping tables or a clear
/// refusal, never a shared one; and a rekey begun under one search_path resumes, translates and
/// verifies under another with the same tables.
#[test]
fn names_hold_whatever_the_search_path() {
    let mut c = database_with_extension("").client;
    let long = "customer_subscription_billing_period_adjustment_entries";
    c.batch_execute(&format!(
        "CREATE SCHEMA shop; CREATE SCHEMA other;
         CREATE TABLE shop.orders (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL);
         CREATE TABLE shop.items (order_id uuid NOT NULL REFERENCES shop.orders, n int);
         CREATE INDEX ON shop.items (order_id);
         CREATE TABLE other.items (order_id uuid, n int);
         CREATE TABLE other.orders_map (old_key uuid, new_key uuid, batch bigint);
         INSERT INTO shop.orders SELECT gen_random_uuid(), '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 s'
           FROM generate_series(1, 100) i;
         INSERT INTO shop.items SELECT id, 1 FROM shop.orders;
         INSERT INTO other.items VALUES (gen_random_uuid(), 1);
         SELECT rekey_switch_default('shop.orders');
         CREATE TABLE {long}s (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
         CREATE TABLE {long}z (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now())"
    ))
    .unwrap();
    c.batch_execute(&format!("CALL rekey_run('{long}s', 'at')"))
        .unwrap();
    let (_, message) = error_of(&mut c, &format!("CALL rekey_run('{long}z', 'at')"));
    assert!(message.contains("is not the mapping table of"), "{message}");

    c.batch_execute("SET search_path = shop, public").unwrap();
    c.batch_execute(
        "CALL rekey_run('orders', 'at', batch_size => 10, mapping_table => 'orders_map', max_batches => 3)",
    )
    .unwrap();
    c.batch_execute("SET search_path = other, shop, public")
        .unwrap();
    c.batch_execute("CALL rekey_run('shop.orders', batch_size => 10)")
        .unwrap();
    assert_eq!(one_i64(&mut c, "SELECT count(*) FROM shop.orders_map"), 100);
    assert_eq!(one_i64(&mut c, "SELECT count(*) FROM other.orders_map"), 0);
    for path in ["other, shop, public", "public", "shop, public"] {
        c.batch_execute(&format!("SET search_path = {path}"))
            .unwrap();
        let bad: Vec<(String, String, String)> = c
            .query(
                "SELECT check_name, status, detail FROM public.rekey_verify('shop.orders') WHERE status <> 'ok'",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        assert!(bad.is_empty(), "{path}: {bad:#?}");
        assert_eq!(
            one_i64(
                &mut c,
                "SELECT count(*) FROM shop.orders_map m
                  WHERE public.rekey_translate('shop.orders', m.old_key) <> m.new_key"
            ),
            0
        );
    }
}

/// In a database whose encoding is not UTF-8, names with characters outside ASCII are refused
/// cleanly (0A000, not yet supported), by assess, plan and run alike, and the error quotes the
/// statement with those bytes escaped; names in ASCII rekey there as anywhere, and a cursor with
/// such a name is named in the refusal to run beside it.
#[test]
fn names_outside_ascii_in_a_database_of_another_encoding_are_refused_cleanly() {
    let Database {
        name,
        client: mut c,
    } = empty_database_encoded("", "LATIN1");
    c.batch_execute(
        "CREATE EXTENSION pg_objectid;
         CREATE SCHEMA \"sé\";
         CREATE TABLE \"sé\".\"té\" (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), \"cé\" timestamptz NOT NULL DEFAULT now());
         INSERT INTO \"sé\".\"té\" SELECT gen_random_uuid(), now() FROM generate_series(1, 5);
         ALTER TABLE \"sé\".\"té\" ALTER COLUMN id SET DEFAULT uuidv7();
         CREATE TABLE plain (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now());
         INSERT INTO plain SELECT gen_random_uuid(), now() FROM generate_series(1, 5);
         ALTER TABLE plain ALTER COLUMN id SET DEFAULT uuidv7();",
    )
    .unwrap();
    for sql in [
        "SELECT count(*) FROM rekey_assess('\"sé\".\"té\"')",
        "SELECT count(*) FROM rekey_plan('\"sé\".\"té\"', 'cé')",
        "CALL rekey_run('\"sé\".\"té\"', 'cé')",
    ] {
        let message = expect_error(&mut c, sql, &SqlState::FEATURE_NOT_SUPPORTED);
        assert!(
            message.contains("does not yet support names with characters outside ASCII in a database of encoding LATIN1")
                && message.contains("\\xe9"),
            "{sql}: {message}"
        );
    }
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM \"sé\".\"té\" WHERE uuid_extract_version(id) = 4"
        ),
        5
    );
    c.batch_execute("CALL rekey_run('plain', 'at')").unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM plain WHERE uuid_extract_version(id) = 7"
        ),
        5
    );
    // The second review of this: a mapping table named so (rekey_translate), a materialized view
    // named so (refused before anything changes), a partition of another owner named so.
    c.batch_execute("ALTER TABLE plain_rekey_map RENAME TO \"mäp\"")
        .unwrap();
    let message = expect_error(
        &mut c,
        "SELECT rekey_translate('plain', (SELECT id FROM plain LIMIT 1))",
        &SqlState::FEATURE_NOT_SUPPORTED,
    );
    assert!(message.contains("m\\xe4p"), "{message}");
    c.batch_execute(
        "CREATE TABLE viewed (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now());
         INSERT INTO viewed SELECT gen_random_uuid(), now() FROM generate_series(1, 5);
         ALTER TABLE viewed ALTER COLUMN id SET DEFAULT uuidv7();
         CREATE MATERIALIZED VIEW \"vüe\" AS SELECT id FROM viewed;",
    )
    .unwrap();
    let message = expect_error(
        &mut c,
        "CALL rekey_run('viewed', 'at', refresh_materialized_views => true)",
        &SqlState::FEATURE_NOT_SUPPORTED,
    );
    assert!(message.contains("materialized views"), "{message}");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM viewed WHERE uuid_extract_version(id) = 4"
        ),
        5
    );
    c.batch_execute(
        "DROP ROLE IF EXISTS rekey_latin1_other; CREATE ROLE rekey_latin1_other;
         CREATE TABLE pt (id uuid NOT NULL DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                          PRIMARY KEY (id)) PARTITION BY HASH (id);
         CREATE TABLE pt0 PARTITION OF pt FOR VALUES WITH (MODULUS 2, REMAINDER 0);
         CREATE TABLE \"pt1é\" PARTITION OF pt FOR VALUES WITH (MODULUS 2, REMAINDER 1);
         INSERT INTO pt (at) SELECT now() FROM generate_series(1, 10);
         ALTER TABLE \"pt1é\" OWNER TO rekey_latin1_other;",
    )
    .unwrap();
    let message = expect_error(
        &mut c,
        "SELECT objectid_internal.rekey_read_as_owner('pt'::regclass, 'SELECT 1 AS one')",
        &SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(message.contains("pt1\\xe9"), "{message}");
    // assess reads the table as its owner, or refuses (as for a caller who may not act as it);
    // plan shows the problem.
    let message = expect_error(
        &mut c,
        "SELECT count(*) FROM rekey_assess('pt')",
        &SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(message.contains("pt1\\xe9"), "{message}");
    c.batch_execute("SELECT count(*) FROM rekey_plan('pt', 'at')")
        .unwrap();
    // A referencing table renamed so while a rekey is under way: the next batch refuses cleanly.
    c.batch_execute(
        "CREATE TABLE prog (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now());
         CREATE TABLE kid (prog_id uuid REFERENCES prog);
         CREATE INDEX ON kid (prog_id);
         INSERT INTO prog SELECT gen_random_uuid(), now() FROM generate_series(1, 20);
         INSERT INTO kid SELECT id FROM prog;
         ALTER TABLE prog ALTER COLUMN id SET DEFAULT uuidv7();",
    )
    .unwrap();
    c.batch_execute("CALL rekey_run('prog', 'at', batch_size => 5, max_batches => 1)")
        .unwrap();
    c.batch_execute("ALTER TABLE kid RENAME TO \"kïd\"")
        .unwrap();
    let message = expect_error(
        &mut c,
        "CALL rekey_run('prog', 'at', batch_size => 5)",
        &SqlState::FEATURE_NOT_SUPPORTED,
    );
    assert!(message.contains("k\\xefd"), "{message}");
    c.batch_execute("BEGIN; DECLARE \"cé\" CURSOR FOR SELECT 1")
        .unwrap();
    let message = expect_error(
        &mut c,
        "SELECT count(*) FROM rekey_plan('plain')",
        &SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(message.contains("cursor \"c\\xe9\" is open"), "{message}");
    c.batch_execute("ROLLBACK").unwrap();
    drop(c);
    let mut admin = connect_to("postgres");
    admin
        .batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)"))
        .unwrap();
    admin.batch_execute("DROP ROLE rekey_latin1_other").unwrap();
}
