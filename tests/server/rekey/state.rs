//! A rekey's record, lock and status: idle holders of the lock, forgetting and starting again,
//! and one database's rekeys seen from another.

use std::thread;
use std::time::Duration;

use postgres::error::SqlState;

use super::{assert_verified, create_shop};
use crate::common::*;

/// A session left holding a table's rekey lock while it runs nothing (a cancel between two of a
/// run's statements, right after a COMMIT, can leave its session lock behind) does not stop
/// another session's run; one that is running a statement does (55006).
#[test]
fn an_idle_holder_of_the_lock_does_not_stop_a_run() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
    c.batch_execute(
        "CREATE TABLE t (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
         INSERT INTO t SELECT gen_random_uuid() FROM generate_series(1, 50)",
    )
    .unwrap();
    let mut holder = connect_to(&name);
    holder
        .batch_execute(
            "SELECT pg_advisory_lock((1919249273::bigint << 32) | 't'::regclass::oid::bigint)",
        )
        .unwrap();
    c.batch_execute("CALL rekey_run('t', 'at', batch_size => 20)")
        .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM t WHERE uuid_extract_version(id) = 4"
        ),
        0
    );
    c.batch_execute("INSERT INTO t SELECT gen_random_uuid() FROM generate_series(1, 5)")
        .unwrap();
    let busy = thread::spawn(move || holder.batch_execute("SELECT pg_sleep(3)"));
    thread::sleep(Duration::from_millis(500));
    let (got, message) = error_of(&mut c, "CALL rekey_run('t', 'at')");
    assert_eq!(got, SqlState::OBJECT_IN_USE, "{message}");
    busy.join().unwrap().unwrap();
}

/// Forgotten and started again, a rekey adopts its own mapping table and counts what it holds;
/// a recorded rekey whose table lost its primary key (as a dropped table whose OID came back would)
/// is refused until forgotten.
#[test]
fn forget_and_start_again() {
    let mut c = database_with_extension("").client;
    create_shop(&mut c, 300);
    c.batch_execute("SELECT rekey_switch_default('customers')")
        .unwrap();
    c.batch_execute(
        "CALL rekey_run('customers', 'created_at', batch_size => 50, max_batches => 2)",
    )
    .unwrap();
    assert!(one_string(&mut c, "SELECT rekey_forget('customers')").starts_with("forgot"));
    c.batch_execute("CALL rekey_run('customers', 'created_at', batch_size => 50)")
        .unwrap();
    assert_verified(&mut c, "customers");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT keys_done FROM objectid_internal.rekey_state"
        ),
        300
    );

    c.batch_execute(
        "ALTER TABLE orders DROP CONSTRAINT orders_customer_id_fkey;
         ALTER TABLE customers DROP CONSTRAINT customers_referred_by_fkey;
         ALTER TABLE customers DROP CONSTRAINT customers_pkey;
         ALTER TABLE customers ADD PRIMARY KEY (id)",
    )
    .unwrap();
    let (got, message) = error_of(
        &mut c,
        "SELECT rekey_translate('customers', gen_random_uuid())",
    );
    assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{message}");
    assert!(
        message.contains("was of another table with the same OID"),
        "{message}"
    );
    c.batch_execute("SELECT rekey_forget('customers')").unwrap();
}

/// Rekey locks are per database: a database copied from another (its tables have the same OIDs)
/// running a rekey does not show as running here, nor stop a rekey_forget here.
#[test]
fn status_is_per_database() {
    let Database {
        name: a_name,
        client: mut c,
    } = database_with_extension("a");
    create_shop(&mut c, 50);
    c.batch_execute("SELECT rekey_switch_default('customers')")
        .unwrap();
    c.batch_execute("CALL rekey_run('customers', 'created_at', max_batches => 0)")
        .unwrap();
    drop(c);
    let b_name = database_name("b");
    let mut admin = connect_to("postgres");
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {b_name} WITH (FORCE)"))
        .unwrap();
    // Waits (up to 5 s) for the session just closed to leave the template.
    admin
        .batch_execute(&format!("CREATE DATABASE {b_name} TEMPLATE {a_name}"))
        .unwrap();
    let mut b = connect_to(&b_name);
    b.batch_execute(
        "BEGIN; CALL rekey_run('customers', max_batches => 0, in_one_transaction => true)",
    )
    .unwrap();
    let mut a = connect_to(&a_name);
    assert_eq!(
        one_string(&mut a, "SELECT state FROM rekey_status"),
        "stopped"
    );
    assert_eq!(
        one_string(&mut b, "SELECT state FROM rekey_status"),
        "running"
    );
    a.batch_execute("SELECT rekey_forget('customers')").unwrap();
    b.batch_execute("ROLLBACK").unwrap();
}
