//! Issue 37: the tables being rekeyed, and the mapping table, rewritten under the run by
//! PostgreSQL 19's `REPACK` and `REPACK (CONCURRENTLY)`, which replace `VACUUM FULL` and `CLUSTER`
//! there (those before 19). A rewrite gives a table a new file but keeps its OID, which the
//! rekey's record, mapping table and catalog checks go by.

use std::thread;
use std::time::{Duration, Instant};

use postgres::error::SqlState;

use super::*;

/// The statements that rewrite `table` on this server: 19's REPACK, plain, concurrent and in an
/// index's order; before 19, VACUUM FULL and CLUSTER.
fn rewrites(version: i64, table: &str, index: &str) -> Vec<String> {
    if version >= 190000 {
        vec![
            format!("REPACK {table}"),
            format!("REPACK (CONCURRENTLY) {table}"),
            format!("REPACK {table} USING INDEX {index}"),
        ]
    } else {
        vec![
            format!("VACUUM FULL {table}"),
            format!("CLUSTER {table} USING {index}"),
        ]
    }
}

/// Between batches, and while a run goes on in another session, the key table, a referencing
/// table and the mapping table are rewritten, again and again: the run finishes (a rewrite's lock
/// only makes a batch wait or retry), every row and reference is right, the mapping complete,
/// and `rekey_verify` passes.
#[test]
fn tables_rewritten_by_repack_while_they_are_rekeyed() {
    let Database {
        name: db,
        client: mut c,
    } = database_with_extension("");
    create_shop(&mut c, 3_000);
    c.batch_execute(
        "CREATE TABLE old_customers AS SELECT name, id FROM customers;
         CREATE TABLE old_orders AS SELECT number, id FROM orders;
         SELECT rekey_switch_default('customers'), rekey_switch_default('orders')",
    )
    .unwrap();
    let content = one_string(&mut c, CONTENT);
    let before = counts(&mut c);
    let version = server_version(&mut c);

    // Three batches, then every rewrite of the three tables, then the rest.
    c.batch_execute(
        "CALL rekey_run('customers', 'created_at', batch_size => 300, max_batches => 3)",
    )
    .unwrap();
    let mut all = rewrites(version, "customers", "customers_pkey");
    all.extend(rewrites(version, "orders", "orders_pkey"));
    all.extend(rewrites(
        version,
        "customers_rekey_map",
        "customers_rekey_map_pkey",
    ));
    for sql in &all {
        c.batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM customers_rekey_map"),
        900
    );

    // The rest of customers and all of orders in another session, in small paced batches, while
    // this one keeps rewriting the tables it works on.
    let mut runner = connect_to(&db);
    let run = thread::spawn(move || {
        runner.batch_execute(
            "CALL rekey_run('customers', batch_size => 200, pause => '20ms', max_retries => 100)",
        )?;
        runner.batch_execute(
            "CALL rekey_run('orders', 'placed_at', batch_size => 500, pause => '20ms', max_retries => 100)",
        )
    });
    let started = Instant::now();
    let mut rewritten = 0;
    let mut deadlocks = 0;
    while !run.is_finished() {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the run did not finish"
        );
        let sql = &all[rewritten % all.len()];
        match c.batch_execute(sql) {
            Ok(()) => rewritten += 1,
            // A rewrite and a batch that wait for each other's locks: PostgreSQL cancels one of
            // them, as it would for any two sessions. The batch retries; the rewrite is tried
            // again (the batches' side is what the test is about).
            Err(e) if e.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED) => deadlocks += 1,
            Err(e) => panic!("{sql}: {e}"),
        }
        thread::sleep(Duration::from_millis(30));
    }
    run.join().unwrap().unwrap();
    assert!(
        rewritten >= all.len(),
        "only {rewritten} rewrites while the run went on ({deadlocks} cancelled by deadlocks)"
    );
    for sql in &all {
        c.batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    assert_all_keys_v7_with_their_times(&mut c);
    assert_eq!(one_string(&mut c, CONTENT), content);
    assert_eq!(counts(&mut c), before);
    assert_mapping_complete(&mut c);
    assert_verified(&mut c, "customers");
    assert_verified(&mut c, "orders");
}
