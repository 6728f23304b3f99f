//! A rekey batch reads what it needs from the catalogs again only once a catalog may have
//! changed (src/rekey/catalog_epoch.rs, rekey_batch_catalog.rs, implied_checks.rs). Here the
//! migrating session runs a batch, so that it holds what it read, and another session then
//! changes the catalogs in each way a batch depends on: the migrating session's next batch must
//! act on the change exactly as a session that never read anything would.

use std::thread;
use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::Client;

use crate::common::*;

/// A parent of 200 customers with a self-reference and a child of orders, in schema `shop`.
fn create(c: &mut Client) {
    c.batch_execute(
        "CREATE SCHEMA shop;
         CREATE TABLE shop.customers (
             id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
             created_at timestamptz NOT NULL,
             referred_by uuid REFERENCES shop.customers (id));
         CREATE INDEX ON shop.customers (referred_by);
         CREATE TABLE shop.orders (
             id bigserial PRIMARY KEY,
             customer_id uuid NOT NULL REFERENCES shop.customers (id));
         CREATE INDEX ON shop.orders (customer_id);
         INSERT INTO shop.customers (created_at)
             SELECT '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 hour' FROM generate_series(1, 200) i;
         UPDATE shop.customers c SET referred_by = (SELECT r.id FROM shop.customers r WHERE r.created_at < c.created_at
                                                     ORDER BY r.created_at DESC LIMIT 1);
         INSERT INTO shop.orders (customer_id) SELECT id FROM shop.customers, generate_series(1, 2);
         SELECT rekey_switch_default('shop.customers');",
    )
    .unwrap();
}

/// One batch of 20 keys, in the migrating session.
const ONE_BATCH: &str =
    "CALL rekey_run('shop.customers', 'created_at', batch_size => 20, max_batches => 1)";

/// Runs the whole rekey in one CALL, pausing a second between batches of 20 keys, while another
/// session makes `change` once the first batch has committed (in the pause after it or during the
/// second). The CALL's result.
fn run_through(db: &str, change: &str) -> Result<(), (SqlState, String)> {
    let mut migrating = connect_to(db);
    let running =
        thread::spawn(move || {
            migrating
            .batch_execute(
                "CALL rekey_run('shop.customers', 'created_at', batch_size => 20, pause => '1 s')",
            )
            .map_err(|e| {
                let db = e.as_db_error().unwrap_or_else(|| panic!("not a server error: {e}"));
                (db.code().clone(), db.message().to_owned())
            })
        });
    // The change must come after the first batch has read the catalogs: wait for its commit
    // rather than for a fixed time, which a loaded machine can outlast before the CALL has even
    // looked the table up.
    let mut other = connect_to(db);
    let started = Instant::now();
    while one_i64(
        &mut other,
        "SELECT coalesce(max(batches), 0)::bigint FROM rekey_status
          WHERE table_name = 'shop.customers'::regclass",
    ) < 1
    {
        if running.is_finished() {
            // Ended before its first batch committed: its own error says why.
            return running.join().unwrap();
        }
        if started.elapsed() >= Duration::from_secs(120) {
            // Once seen in CI (PostgreSQL 15, 2026-12-08) and not since: what the sessions of this
            // database were doing and waiting for, so that the next time says why.
            let sessions = one_string(
                &mut other,
                "SELECT coalesce(string_agg(format('%s %s %s:%s %s', a.pid, a.state, a.wait_event_type,
                                                   a.wait_event, left(a.query, 160)), E'\n'), 'none')
                   FROM pg_stat_activity a
                  WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()",
            );
            panic!(
                "the rekey's first batch did not commit within 120 s; the sessions:\n{sessions}"
            );
        }
        thread::sleep(Duration::from_millis(50));
    }
    other.batch_execute(change).unwrap();
    running.join().unwrap()
}

/// Every key is a version 7, every reference follows it, and rekey_verify finds nothing wrong
/// (a table made since the start has no count to compare with: "changed").
fn assert_done(c: &mut Client) {
    assert_eq!(
        one_i64(
            c,
            "SELECT count(*) FROM shop.customers WHERE uuid_extract_version(id) <> 7"
        ),
        0
    );
    assert_eq!(
        one_i64(
            c,
            "SELECT count(*) FROM shop.customers c WHERE c.referred_by IS NOT NULL
                AND NOT EXISTS (SELECT FROM shop.customers r WHERE r.id = c.referred_by)"
        ),
        0
    );
    assert_eq!(
        one_i64(
            c,
            "SELECT count(*) FROM shop.orders o
              WHERE uuid_extract_version(o.customer_id) <> 7
                 OR NOT EXISTS (SELECT FROM shop.customers r WHERE r.id = o.customer_id)"
        ),
        0
    );
    let bad = one_i64(
        c,
        "SELECT count(*) FROM rekey_verify('shop.customers')
          WHERE status <> 'ok' AND NOT (status = 'changed' AND detail LIKE 'no count rows at the start, %')",
    );
    assert_eq!(bad, 0);
}

/// A rule added by another session while the rekey runs stops its next batch (the problem it is,
/// 55000), though the run had read every catalog it needed already; once the rule is dropped, the
/// rekey goes on. A relation-cache invalidation.
#[test]
fn a_rule_added_between_batches_stops_the_next() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
    create(&mut c);
    let (state, message) = run_through(
        &name,
        "CREATE RULE orders_log AS ON UPDATE TO shop.orders DO ALSO NOTIFY orders_changed",
    )
    .expect_err("the batch after the rule came should have refused");
    assert_eq!(
        state,
        SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
        "{message}"
    );
    assert!(message.contains("rule orders_log"), "{message}");
    assert!(
        one_i64(
            &mut c,
            "SELECT keys_done FROM objectid_internal.rekey_state"
        ) >= 20
    );
    c.batch_execute("DROP RULE orders_log ON shop.orders")
        .unwrap();
    c.batch_execute("CALL rekey_run('shop.customers', 'created_at', batch_size => 20)")
        .unwrap();
    assert_done(&mut c);
}

/// A privilege the tables' owner loses while the rekey runs stops its next batch with the problem
/// it is (42501), before the batch's statements meet it: a change to a table's ACL.
#[test]
fn a_privilege_revoked_between_batches_stops_the_next() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
    create(&mut c);
    c.batch_execute(
        "DROP ROLE IF EXISTS t_rekey_cc_owner; CREATE ROLE t_rekey_cc_owner;
         ALTER SCHEMA shop OWNER TO t_rekey_cc_owner;
         ALTER TABLE shop.customers OWNER TO t_rekey_cc_owner;
         ALTER TABLE shop.orders OWNER TO t_rekey_cc_owner",
    )
    .unwrap();
    let (state, message) = run_through(&name, "REVOKE UPDATE ON shop.orders FROM t_rekey_cc_owner")
        .expect_err("the batch after the REVOKE should have refused");
    assert_eq!(state, SqlState::INSUFFICIENT_PRIVILEGE, "{message}");
    assert!(
        message.starts_with("cannot go on with the rekey"),
        "{message}"
    );
    c.batch_execute("GRANT UPDATE ON shop.orders TO t_rekey_cc_owner")
        .unwrap();
    c.batch_execute("CALL rekey_run('shop.customers', 'created_at', batch_size => 20)")
        .unwrap();
    assert_done(&mut c);
    c.batch_execute(
        "SELECT rekey_forget('shop.customers');
         DROP SCHEMA shop CASCADE; DROP ROLE t_rekey_cc_owner",
    )
    .unwrap();
}

/// The schema renamed by another session while the rekey runs, and another table made under the
/// old name: the statements the run read name the tables by their old schema, and must be read
/// again (a schema's own catalog-cache invalidation: no table's definition changed).
#[test]
fn a_schema_renamed_between_batches_is_followed() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
    create(&mut c);
    run_through(
        &name,
        "ALTER SCHEMA shop RENAME TO store; CREATE SCHEMA shop;
         CREATE TABLE shop.orders (id bigserial PRIMARY KEY, customer_id uuid)",
    )
    .unwrap();
    // The table made under the old name was never touched.
    assert_eq!(one_i64(&mut c, "SELECT count(*) FROM shop.orders"), 0);
    c.batch_execute("DROP TABLE shop.orders; DROP SCHEMA shop; ALTER SCHEMA store RENAME TO shop")
        .unwrap();
    assert_done(&mut c);
}

/// A table made by another session while the rekey runs, with a foreign key to the key: the next
/// batches follow it too.
#[test]
fn a_foreign_key_added_between_batches_is_followed() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
    create(&mut c);
    run_through(
        &name,
        "CREATE TABLE shop.invoices (id bigserial PRIMARY KEY,
                                     customer_id uuid NOT NULL REFERENCES shop.customers (id));
         CREATE INDEX ON shop.invoices (customer_id);
         INSERT INTO shop.invoices (customer_id) SELECT id FROM shop.customers",
    )
    .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM shop.invoices i
              WHERE uuid_extract_version(i.customer_id) <> 7
                 OR NOT EXISTS (SELECT FROM shop.customers r WHERE r.id = i.customer_id)"
        ),
        0
    );
    assert_done(&mut c);
}

/// A function the planner would fold, replaced by another session between two batches: no
/// table's definition changes, only the function (a catalog-cache invalidation of its own). The
/// batch that follows runs the new body, and what it does is the table owner's, in a
/// security-restricted operation: here it makes the rewrite refuse a key, which rolls the batch
/// back.
#[test]
fn a_function_replaced_between_batches_is_seen() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
    create(&mut c);
    c.batch_execute(
        "CREATE FUNCTION shop.ok(uuid) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
         ALTER TABLE shop.orders ADD CONSTRAINT orders_ok CHECK (shop.ok(customer_id))",
    )
    .unwrap();
    c.batch_execute(ONE_BATCH).unwrap();
    let mut other = connect_to(&name);
    other
        .batch_execute(
            "CREATE OR REPLACE FUNCTION shop.ok(uuid) RETURNS boolean LANGUAGE sql IMMUTABLE
                 AS 'SELECT $1 IS NULL OR objectid_internal.uuid_extract_version($1) = 4'",
        )
        .unwrap();
    let (state, message) = error_of(&mut c, ONE_BATCH);
    assert_eq!(state, SqlState::CHECK_VIOLATION, "{message}");
    other
        .batch_execute("CREATE OR REPLACE FUNCTION shop.ok(uuid) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true'")
        .unwrap();
    c.batch_execute("CALL rekey_run('shop.customers', 'created_at', batch_size => 20)")
        .unwrap();
    assert_done(&mut c);
}

/// `objectid_internal.rekey_batch_catalog` called directly reads what the catalogs say, as the
/// caller: the problems with their SQLSTATE, and NULL where there is nothing to read (a table that
/// does not exist, a NULL argument).
#[test]
fn direct_calls_read_what_the_catalogs_say() {
    let mut c = database_with_extension("").client;
    c.batch_execute("CREATE TABLE t (id uuid PRIMARY KEY, at timestamptz)")
        .unwrap();
    let read = |c: &mut Client, args: &str| -> Option<String> {
        c.query_one(
            &format!("SELECT objectid_internal.rekey_batch_catalog({args})"),
            &[],
        )
        .unwrap()
        .get(0)
    };
    let got = read(&mut c, "'t'::regclass, 'nope', 'UTC', 't'::regclass, false").unwrap();
    assert!(
        got.starts_with("(\"LOCK TABLE public.t IN ROW EXCLUSIVE MODE\","),
        "{got}"
    );
    assert!(
        got.contains("nope") && got.contains("does not exist in public.t"),
        "{got}"
    );
    assert!(
        got.contains("public.t exists and is not a rekey mapping table"),
        "{got}"
    );
    assert!(got.ends_with(",55000,,)"), "{got}");
    // Asked again with nothing changed: the same answer, kept.
    assert_eq!(
        read(&mut c, "'t'::regclass, 'nope', 'UTC', 't'::regclass, false"),
        Some(got)
    );
    assert_eq!(read(&mut c, "0, 'at', 'UTC', 0, false"), None);
    assert_eq!(read(&mut c, "NULL, 'at', 'UTC', 0, false"), None);
}

/// A table owner's code that calls the function inside a batch (as the owner, in a
/// security-restricted operation) keeps an answer of its own: the superuser's batches still see a
/// rule another session adds, and the owner gains nothing.
#[test]
fn an_owner_reading_the_kept_answer_inside_a_batch_changes_nothing() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
    create(&mut c);
    c.batch_execute(
        "DROP ROLE IF EXISTS t_rekey_cc_peeker; CREATE ROLE t_rekey_cc_peeker;
         ALTER SCHEMA shop OWNER TO t_rekey_cc_peeker;
         ALTER TABLE shop.customers OWNER TO t_rekey_cc_peeker;
         ALTER TABLE shop.orders OWNER TO t_rekey_cc_peeker;
         SET ROLE t_rekey_cc_peeker;
         CREATE FUNCTION shop.peek(uuid) RETURNS boolean LANGUAGE plpgsql AS $$
         BEGIN
             PERFORM objectid_internal.rekey_batch_catalog(s.relid, s.time_column::text, s.time_zone,
                                                           s.mapping_table, false)
                FROM objectid_internal.rekey_state s;
             RETURN true;
         END $$;
         ALTER TABLE shop.orders ADD CONSTRAINT orders_peek CHECK (shop.peek(customer_id));
         RESET ROLE",
    )
    .unwrap();
    let (state, message) = run_through(
        &name,
        "CREATE RULE orders_log AS ON UPDATE TO shop.orders DO ALSO NOTIFY orders_changed",
    )
    .expect_err("the batch after the rule came should have refused");
    assert_eq!(
        state,
        SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
        "{message}"
    );
    assert!(message.contains("rule orders_log"), "{message}");
    c.batch_execute("DROP RULE orders_log ON shop.orders")
        .unwrap();
    c.batch_execute("CALL rekey_run('shop.customers', 'created_at', batch_size => 20)")
        .unwrap();
    assert_done(&mut c);
    assert!(!is_superuser(&mut c, "t_rekey_cc_peeker"));
    c.batch_execute(
        "SELECT rekey_forget('shop.customers');
         DROP SCHEMA shop CASCADE; DROP ROLE t_rekey_cc_peeker",
    )
    .unwrap();
}
