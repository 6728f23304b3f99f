//! How a run is asked for: in one transaction, with batches sized by time, and the plan as
//! docs/migration.md shows it.

use super::{assert_mapping_complete, assert_verified, counts, create_shop, EVERYTHING};
use crate::common::*;

/// Asked to, it rekeys everything in the caller's transaction, which can still roll it all back.
#[test]
fn in_one_transaction_when_asked() {
    let mut c = database_with_extension("").client;
    create_shop(&mut c, 500);
    c.batch_execute("SELECT rekey_switch_default('customers')")
        .unwrap();
    let untouched = one_string(&mut c, EVERYTHING);
    c.batch_execute(
        "BEGIN; CALL rekey_run('customers', 'created_at', batch_size => 100, in_one_transaction => true)",
    )
    .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM customers WHERE uuid_extract_version(id) = 7"
        ),
        500
    );
    c.batch_execute("ROLLBACK").unwrap();
    assert_eq!(one_string(&mut c, EVERYTHING), untouched);
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM objectid_internal.rekey_state"),
        0
    );
    c.batch_execute(
        "BEGIN; CALL rekey_run('customers', 'created_at', batch_size => 100, in_one_transaction => true); COMMIT",
    )
    .unwrap();
    assert_verified(&mut c, "customers");
}

/// Without a batch size, rekey_run sizes each batch from the time the last one took
/// (objectid_internal.rekey_batch_size): the rule at its edges, then a run that uses it, planned
/// and verified like any other.
#[test]
fn batches_sized_by_time_without_a_batch_size() {
    let mut c = database_with_extension("").client;
    for (args, want) in [
        ("NULL, NULL, NULL", 1000),
        // About half a second, at most twice or half the last, within 100 .. 50000.
        ("1000, 1000, 0.25", 2000),
        ("1000, 1000, 0.1", 2000),
        ("1000, 1000, 1.0", 500),
        ("1000, 1000, 10", 500),
        ("1000, 500, 0.5", 1000),
        ("1000, 1000, 0", 2000),
        // A window without a key to rekey: the time says nothing, it doubles.
        ("1000, 0, 0.01", 2000),
        ("1000, 0, 30", 2000),
        ("40000, 40000, 0.1", 50000),
        ("50000, 1, 0.0001", 50000),
        ("150, 150, 5", 100),
        ("100, 100, 1000", 100),
    ] {
        assert_eq!(
            one_i64(
                &mut c,
                &format!("SELECT next_size::int8 FROM objectid_internal.rekey_batch_size({args})")
            ),
            want,
            "rekey_batch_size({args})"
        );
    }

    create_shop(&mut c, 2500);
    c.batch_execute(
        "CREATE TABLE old_customers AS SELECT name, id FROM customers;
         CREATE TABLE old_orders AS SELECT number, id FROM orders",
    )
    .unwrap();
    let plan: Vec<String> = c
        .query("SELECT * FROM rekey_plan('customers', 'created_at')", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let text = plan.join("\n");
    assert!(
        text.contains("then windows of keys but version-7 ones sized to take about 0.5 s each (100 to 50000 keys, 1000 first), in key order"),
        "{text}"
    );
    let before = counts(&mut c);
    c.batch_execute("SELECT rekey_switch_default('customers')")
        .unwrap();
    c.batch_execute("CALL rekey_run('customers', 'created_at')")
        .unwrap();
    assert_eq!(counts(&mut c), before);
    assert_mapping_complete(&mut c);
    assert_verified(&mut c, "customers");
    // 2500 keys: 1000 first, then no more than twice the last.
    assert!(
        one_i64(
            &mut c,
            "SELECT batches FROM rekey_status WHERE table_name = 'customers'::regclass"
        ) >= 2
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM customers WHERE uuid_extract_version(id) <> 7"
        ),
        0
    );
}

/// The fenced block that follows `marker` in docs/migration.md.
fn docs_block(marker: &str) -> String {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/migration.md")).unwrap();
    let after = &docs[docs
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in the docs"))..];
    let open = after.find("```").unwrap();
    let body = &after[open..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].to_string()
}

/// docs/migration.md shows the plan of its example as rekey_plan prints it, line for line.
#[test]
fn the_plan_in_the_docs_is_what_rekey_plan_prints() {
    let mut c = empty_database("").client;
    c.batch_execute(&docs_block("<!-- example-schema -->"))
        .unwrap();
    let want = docs_block("<!-- example-plan");
    let got: Vec<String> = c
        .query(
            "SELECT * FROM public.rekey_plan('orders'::regclass, time_column => 'created_at'::name)",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(got.join("\n") + "\n", want);
}

/// Issue 36: under a statement_timeout, which times the whole CALL as one statement, rekey_run
/// warns at its start, with how to lift it; without one it says nothing of it.
#[test]
fn a_run_under_a_statement_timeout_warns() {
    use std::str::FromStr;
    use std::sync::{Arc, Mutex};
    let Database {
        name: db,
        client: mut setup,
    } = database_with_extension("");
    create_shop(&mut setup, 50);
    setup
        .batch_execute("SELECT public.rekey_switch_default('customers'::regclass)")
        .unwrap();
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let kept = warnings.clone();
    let mut c = postgres::Config::from_str(&format!("{} dbname={db}", dsn()))
        .unwrap()
        .notice_callback(move |n| {
            if n.severity() == "WARNING" {
                kept.lock().unwrap().push(format!(
                    "{} {}",
                    n.message(),
                    n.hint().unwrap_or_default()
                ));
            }
        })
        .connect(postgres::NoTls)
        .unwrap();
    let run = "CALL public.rekey_run('customers'::regclass, time_column => 'created_at'::name, max_batches => 1,
                                     batch_size => 10)";
    c.batch_execute(run).unwrap();
    assert!(warnings.lock().unwrap().is_empty(), "{warnings:?}");
    c.batch_execute("SET statement_timeout = '10min'").unwrap();
    c.batch_execute(run).unwrap();
    let got = warnings.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("statement_timeout (10min) counts the whole CALL")
            && got[0].contains("SET statement_timeout = 0"),
        "{got:?}"
    );
}
