//! The rekey toolkit (sql/rekey/, docs/migration.md): a four-table schema with UUIDv4 keys is
//! assessed, planned, switched and rekeyed to UUIDv7, then checked against a snapshot taken
//! before; the same with the migrating session killed mid-batch, and with other sessions writing
//! all the while; and every wrong use refused before anything changes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::Client;

use crate::common::*;

/// A shop: customers (with a self-reference), their orders (ON DELETE CASCADE, a trigger, some
/// without a time), the orders' lines (a composite key, NO ACTION and not deferrable), and notes
/// on lines (a composite foreign key, so that rekeying orders reaches them through the lines);
/// a view over two of them. 13 rows per customer.
fn create_shop(c: &mut Client, customers: i32) {
    c.batch_execute(&format!(
        "CREATE TABLE customers (
             id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
             name text NOT NULL UNIQUE,
             note text,
             created_at timestamptz NOT NULL,
             referred_by uuid REFERENCES customers (id));
         CREATE INDEX ON customers (referred_by);
         CREATE TABLE orders (
             id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
             number integer NOT NULL UNIQUE,
             customer_id uuid NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
             placed_at timestamptz,
             total numeric NOT NULL,
             updated_at timestamptz);
         CREATE INDEX ON orders (customer_id);
         CREATE TABLE order_lines (
             order_id uuid NOT NULL REFERENCES orders (id),
             line_no integer NOT NULL,
             product text NOT NULL,
             PRIMARY KEY (order_id, line_no));
         CREATE TABLE line_notes (
             id bigserial PRIMARY KEY,
             order_id uuid NOT NULL,
             line_no integer NOT NULL,
             note text NOT NULL,
             FOREIGN KEY (order_id, line_no) REFERENCES order_lines ON DELETE CASCADE);
         CREATE INDEX ON line_notes (order_id, line_no);
         CREATE VIEW customer_orders AS
             SELECT c.name, o.number, o.placed_at, o.total FROM customers c JOIN orders o ON o.customer_id = c.id;
         CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql
             AS 'BEGIN NEW.updated_at := now(); RETURN NEW; END';
         CREATE TRIGGER orders_touch BEFORE UPDATE OF total ON orders FOR EACH ROW EXECUTE FUNCTION touch();

         INSERT INTO customers (name, created_at)
             SELECT 'c' || i, '2023-01-01 00:00:00+00'::timestamptz + i * interval '17 min 3.123456 s'
             FROM generate_series(1, {customers}) i;
         UPDATE customers c SET referred_by = r.id FROM customers r
          WHERE substr(c.name, 2)::int > 1 AND r.name = 'c' || (substr(c.name, 2)::int / 2);
         INSERT INTO orders (number, customer_id, placed_at, total)
             SELECT 3 * substr(c.name, 2)::int + j, c.id,
                    CASE WHEN (3 * substr(c.name, 2)::int + j) % 97 <> 0
                         THEN c.created_at + j * interval '1 day 1.000999 s' END,
                    j * 10.5
             FROM customers c, generate_series(0, 2) j;
         INSERT INTO order_lines SELECT o.id, l, 'p' || (o.number * 2 + l) FROM orders o, generate_series(1, 2) l;
         INSERT INTO line_notes (order_id, line_no, note)
             SELECT l.order_id, l.line_no, 'n' || l.product FROM order_lines l WHERE l.line_no = 1;
         ANALYZE"
    ))
    .unwrap();
}

/// Everything the shop holds, joined through its keys but told by its natural keys only, as one
/// digest: equal before and after a correct rekey, whatever the keys became.
const CONTENT: &str = "
    SELECT md5(string_agg(x::text, '|' ORDER BY x::text)) FROM (
        SELECT c.name, c.note, c.created_at, r.name AS referrer, o.number, o.placed_at, o.total,
               l.line_no, l.product, n.note AS line_note
          FROM customers c
          LEFT JOIN customers r ON r.id = c.referred_by
          LEFT JOIN orders o ON o.customer_id = c.id
          LEFT JOIN order_lines l ON l.order_id = o.id
          LEFT JOIN line_notes n ON n.order_id = l.order_id AND n.line_no = l.line_no
        UNION ALL
        SELECT v.name, NULL, v.placed_at, NULL, v.number, NULL, v.total, NULL, NULL, 'view'
          FROM customer_orders v) x";

/// The rows of every table, keys and all: equal before and after a run that must change nothing.
const EVERYTHING: &str = "
    SELECT md5(string_agg(x, '|' ORDER BY x)) FROM (
        SELECT c::text AS x FROM customers c UNION ALL SELECT o::text FROM orders o
        UNION ALL SELECT l::text FROM order_lines l UNION ALL SELECT n::text FROM line_notes n) s";

fn counts(c: &mut Client) -> Vec<i64> {
    let row = c
        .query_one(
            "SELECT (SELECT count(*) FROM customers), (SELECT count(*) FROM orders),
                    (SELECT count(*) FROM order_lines), (SELECT count(*) FROM line_notes),
                    (SELECT count(*) FROM customers c JOIN orders o ON o.customer_id = c.id),
                    (SELECT count(*) FROM order_lines l JOIN line_notes n USING (order_id, line_no))",
            &[],
        )
        .unwrap();
    (0..6).map(|i| row.get(i)).collect()
}

/// Runs `sql` and returns the error's SQLSTATE, message and detail.

fn verify_statuses(c: &mut Client, table: &str) -> Vec<(String, String, String)> {
    c.query(
        &format!("SELECT check_name, status, detail FROM rekey_verify('{table}')"),
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2)))
    .collect()
}

fn assert_verified(c: &mut Client, table: &str) {
    let checks = verify_statuses(c, table);
    let bad: Vec<_> = checks.iter().filter(|(_, s, _)| s != "ok").collect();
    assert!(bad.is_empty(), "rekey_verify('{table}'): {bad:#?}");
    assert!(checks.len() >= 8, "{checks:#?}");
}

/// Every key of both rekeyed tables is a v7 carrying its row's time to the millisecond (the
/// fallback, 1970-01-01, where an order has none), and no referencing column holds a v4.
fn assert_all_keys_v7_with_their_times(c: &mut Client) {
    assert_eq!(
        one_i64(
            c,
            "SELECT count(*) FROM customers
              WHERE uuid_extract_version(id) <> 7
                 OR uuid_extract_timestamp(id) <> date_trunc('milliseconds', created_at)"
        ),
        0
    );
    assert_eq!(
        one_i64(
            c,
            "SELECT count(*) FROM orders
              WHERE uuid_extract_version(id) <> 7 OR uuid_extract_version(customer_id) <> 7
                 OR uuid_extract_timestamp(id)
                    <> coalesce(date_trunc('milliseconds', placed_at), '1970-01-01 00:00:00+00')"
        ),
        0
    );
    assert!(one_i64(c, "SELECT count(*) FROM orders WHERE placed_at IS NULL") > 0);
    assert_eq!(
        one_i64(
            c,
            "SELECT (SELECT count(*) FROM order_lines WHERE uuid_extract_version(order_id) <> 7)
                  + (SELECT count(*) FROM line_notes WHERE uuid_extract_version(order_id) <> 7)
                  + (SELECT count(*) FROM customers WHERE uuid_extract_version(referred_by) <> 7)"
        ),
        0
    );
}

/// The mapping of each table is complete: every old key (kept in old_customers / old_orders
/// before the run) translates to the key its row has now.
fn assert_mapping_complete(c: &mut Client) {
    assert_eq!(
        one_i64(
            c,
            "SELECT count(*) FROM old_customers o LEFT JOIN customers c USING (name)
              WHERE rekey_translate('customers', o.id) IS DISTINCT FROM c.id"
        ),
        0
    );
    assert_eq!(
        one_i64(
            c,
            "SELECT count(*) FROM old_orders o LEFT JOIN orders x USING (number)
              WHERE rekey_translate('orders', o.id) IS DISTINCT FROM x.id"
        ),
        0
    );
    assert_eq!(
        one_i64(
            c,
            "SELECT (SELECT count(*) FROM customers_rekey_map) - (SELECT count(*) FROM old_customers)"
        ),
        0
    );
}

#[test]
fn assess_plan_switch_rekey_verify() {
    let mut c = fresh_db("t_rekey_end_to_end");
    create_shop(&mut c, 20_000);
    c.batch_execute(
        "CREATE TABLE old_customers AS SELECT name, id FROM customers;
         CREATE TABLE old_orders AS SELECT number, id FROM orders",
    )
    .unwrap();
    let content = one_string(&mut c, CONTENT);
    let before = counts(&mut c);
    assert_eq!(before[0..4].iter().sum::<i64>(), 260_000);

    // Assess: versions, order, references, time columns.
    let a = c
        .query_one(
            "SELECT total_rows, v4_keys, v7_keys, key_correlation IS NOT NULL, key_index::text,
                    foreign_keys, time_columns::text[]
               FROM rekey_assess('customers')",
            &[],
        )
        .unwrap();
    assert_eq!(a.get::<_, i64>(0), 20_000);
    assert_eq!(a.get::<_, i64>(1), 20_000);
    assert_eq!(a.get::<_, i64>(2), 0);
    assert!(a.get::<_, bool>(3));
    assert_eq!(a.get::<_, String>(4), "customers_pkey");
    assert_eq!(
        a.get::<_, Vec<String>>(5),
        vec![
            "public.customers(referred_by) -> public.customers(id) ON UPDATE NO ACTION ON DELETE NO ACTION, indexed",
            "public.orders(customer_id) -> public.customers(id) ON UPDATE NO ACTION ON DELETE CASCADE, indexed",
        ]
    );
    assert_eq!(a.get::<_, Vec<String>>(6), vec!["created_at"]);
    let refs: Vec<(i32, String, Vec<String>)> = c
        .query(
            "SELECT depth, referencing_table::text, rekeyed_columns::text[] FROM rekey_references('orders')",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        refs,
        vec![
            (1, "order_lines".to_string(), vec!["order_id".to_string()]),
            (2, "line_notes".to_string(), vec!["order_id".to_string()]),
        ]
    );
    let schema: Vec<String> = c
        .query(
            "SELECT table_name::text FROM rekey_assess_schema('public')",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(schema, vec!["customers", "orders"]);

    // Plan: no problem, the exact counts, nothing changed.
    let plan: Vec<String> = c
        .query(
            "SELECT * FROM rekey_plan('orders', 'placed_at', batch_size => 5000)",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let text = plan.join("\n");
    assert!(text.contains("Problems that stop it: none"), "{text}");
    assert!(
        text.contains("keys: 60000 rows, 60000 version 4 to rekey"),
        "{text}"
    );
    assert!(
        text.contains("    public.order_lines (order_id): 120000 rows"),
        "{text}"
    );
    assert!(
        text.contains("    public.line_notes (order_id): 60000 rows"),
        "{text}"
    );
    assert!(
        text.contains("then 12 windows of up to 5000 keys but version-7 ones"),
        "{text}"
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM pg_class WHERE relname LIKE '%rekey_map'"
        ),
        0
    );

    // Switch, then rekey both tables.
    assert_eq!(
        one_string(&mut c, "SELECT rekey_switch_default('customers')"),
        "ALTER TABLE public.customers ALTER COLUMN id SET DEFAULT public.uuidv7()"
    );
    assert!(
        one_string(&mut c, "SELECT rekey_switch_default('customers')").starts_with("unchanged")
    );
    c.batch_execute("SELECT rekey_switch_default('orders')")
        .unwrap();
    c.batch_execute("CALL rekey_run('customers', 'created_at', batch_size => 4000)")
        .unwrap();
    c.batch_execute("CALL rekey_run('orders', 'placed_at', batch_size => 5000)")
        .unwrap();

    assert_all_keys_v7_with_their_times(&mut c);
    assert_eq!(one_string(&mut c, CONTENT), content);
    assert_eq!(counts(&mut c), before);
    assert_mapping_complete(&mut c);
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND NOT convalidated"
        ),
        0
    );
    assert_verified(&mut c, "customers");
    assert_verified(&mut c, "orders");
    let status = c
        .query_one(
            "SELECT state, keys_done, keys_total, percent_done::text, batches
               FROM rekey_status WHERE table_name = 'orders'::regclass",
            &[],
        )
        .unwrap();
    assert_eq!(status.get::<_, String>(0), "finished");
    assert_eq!(status.get::<_, i64>(1), 60_000);
    assert_eq!(status.get::<_, i64>(2), 60_000);
    assert_eq!(status.get::<_, String>(3), "100.0");
    assert_eq!(status.get::<_, i64>(4), 12);

    // New rows get v7 keys; the keys are now in time order, so the key follows the insert order.
    c.batch_execute(
        "INSERT INTO customers (name, created_at) VALUES ('new', now()); ANALYZE customers",
    )
    .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT uuid_extract_version(id)::int8 FROM customers WHERE name = 'new'"
        ),
        7
    );
    let after = c
        .query_one(
            "SELECT v4_keys, v7_keys FROM rekey_assess('customers')",
            &[],
        )
        .unwrap();
    assert_eq!(
        (after.get::<_, i64>(0), after.get::<_, i64>(1)),
        (0, 20_001)
    );

    // A second run changes nothing.
    // A second run changes nothing. (Each CALL on its own: two in one query string would share
    // an implicit transaction, where a CALL cannot commit.)
    let everything = one_string(&mut c, EVERYTHING);
    c.batch_execute("CALL rekey_run('customers')").unwrap();
    c.batch_execute("CALL rekey_run('orders')").unwrap();
    assert_eq!(one_string(&mut c, EVERYTHING), everything);
    assert_verified(&mut c, "orders");
}

/// The migrating session is terminated while a batch waits for a row lock: nothing of that batch
/// stays, the status says how far it got, a second runner is refused meanwhile, and the next run
/// resumes and ends as an uninterrupted one would; a third run changes nothing.
#[test]
fn terminated_mid_batch_then_resumed() {
    let db = "t_rekey_terminated";
    let mut c = fresh_db(db);
    create_shop(&mut c, 5_000);
    c.batch_execute(
        "CREATE TABLE old_customers AS SELECT name, id FROM customers;
         CREATE TABLE old_orders AS SELECT number, id FROM orders;
         SELECT rekey_switch_default('customers'), rekey_switch_default('orders')",
    )
    .unwrap();
    let content = one_string(&mut c, CONTENT);
    let before = counts(&mut c);

    // Another session holds a row lock on an order of the customer 2,750th in key order: batch 6
    // of 500 keys waits for it, after 5 committed.
    let mut blocker = connect_to(db);
    blocker
        .batch_execute(
            "BEGIN; SELECT 1 FROM orders WHERE customer_id =
                 (SELECT id FROM customers ORDER BY id OFFSET 2749 LIMIT 1) LIMIT 1 FOR UPDATE",
        )
        .unwrap();
    let mut runner = connect_to(db);
    let pid = backend_pid(&mut runner);
    let run = thread::spawn(move || {
        runner.batch_execute(
            "CALL rekey_run('customers', 'created_at', batch_size => 500, lock_timeout => '10min')",
        )
    });
    wait_until_waiting_for_a_lock(
        &mut c,
        pid,
        Duration::from_secs(120),
        "the runner never waited",
    );
    let status = c
        .query_one(
            "SELECT state, keys_done, runner_pid FROM rekey_status WHERE table_name = 'customers'::regclass",
            &[],
        )
        .unwrap();
    assert_eq!(status.get::<_, String>(0), "running");
    assert_eq!(status.get::<_, i64>(1), 2_500);
    assert_eq!(status.get::<_, Option<i32>>(2), Some(pid));
    let (state, message) = error_of(&mut c, "CALL rekey_run('customers')");
    assert_eq!(state, SqlState::OBJECT_IN_USE, "{message}");
    assert!(message.contains(&format!("process {pid}")), "{message}");

    c.batch_execute(&format!("SELECT pg_terminate_backend({pid})"))
        .unwrap();
    let ended = run.join().unwrap();
    assert!(ended.is_err(), "the terminated run reported success");
    blocker.batch_execute("ROLLBACK").unwrap();
    // The terminated batch left nothing: 5 batches, 2,500 keys, in the data as in the state.
    let started = Instant::now();
    while one_string(
        &mut c,
        "SELECT state FROM rekey_status WHERE table_name = 'customers'::regclass",
    ) != "stopped"
    {
        assert!(started.elapsed() < Duration::from_secs(30), "still running");
        thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM customers WHERE uuid_extract_version(id) = 7"
        ),
        2_500
    );
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM customers_rekey_map"),
        2_500
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT keys_done FROM objectid_internal.rekey_state WHERE relid = 'customers'::regclass"
        ),
        2_500
    );

    c.batch_execute("CALL rekey_run('customers', batch_size => 500)")
        .unwrap();
    c.batch_execute("CALL rekey_run('orders', 'placed_at', batch_size => 2000)")
        .unwrap();
    assert_all_keys_v7_with_their_times(&mut c);
    assert_eq!(one_string(&mut c, CONTENT), content);
    assert_eq!(counts(&mut c), before);
    assert_mapping_complete(&mut c);
    assert_verified(&mut c, "customers");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT runs::int8 FROM objectid_internal.rekey_state WHERE relid = 'customers'::regclass"
        ),
        2
    );

    let everything = one_string(&mut c, EVERYTHING);
    c.batch_execute("CALL rekey_run('customers')").unwrap();
    c.batch_execute("CALL rekey_run('orders')").unwrap();
    assert_eq!(one_string(&mut c, EVERYTHING), everything);
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM customers_rekey_map"),
        5_000
    );
}

/// What one writer committed, to look for afterwards.
#[derive(Default)]
struct Written {
    notes: Vec<(String, String)>,
    new_customers: Vec<String>,
    new_orders: Vec<(i32, String)>,
    deleted_orders: Vec<i32>,
}

/// Retries a write that lost a race with a batch (a foreign key whose parent was rekeyed under
/// it, a deadlock, an update that found its row rekeyed): what a well-behaved application does.
fn with_retries(
    c: &mut Client,
    f: impl Fn(&mut postgres::Transaction) -> Result<u64, postgres::Error>,
) -> u64 {
    for _ in 0..20 {
        let mut tx = c.transaction().unwrap();
        match f(&mut tx) {
            Ok(0) => {
                tx.rollback().unwrap();
            }
            Ok(n) => match tx.commit() {
                Ok(()) => return n,
                Err(_) => continue,
            },
            Err(e) => {
                let code = e.code().cloned();
                assert!(
                    code == Some(SqlState::FOREIGN_KEY_VIOLATION)
                        || code == Some(SqlState::T_R_DEADLOCK_DETECTED)
                        || code == Some(SqlState::T_R_SERIALIZATION_FAILURE),
                    "unexpected error from a writer: {e}"
                );
            }
        }
        thread::sleep(Duration::from_millis(5));
    }
    panic!("a write failed 20 times");
}

fn writer(db: &str, who: i32, stop: Arc<AtomicBool>) -> Written {
    let mut c = connect_to(db);
    let mut w = Written::default();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) || i < 20 {
        i += 1;
        // Each writer owns the customers whose number is who mod 3, so that the last note each
        // committed is the one to find.
        let customer = format!("c{}", (i * 37 + who) % 2000 * 3 + who + 3);
        let note = format!("w{who}-{i}");
        let (cust, nt) = (customer.clone(), note.clone());
        // An update by an old key, as a cache or URL would hold it, translated first.
        with_retries(&mut c, |tx| {
            tx.execute(
                "UPDATE customers SET note = $2
                  WHERE id = rekey_translate('customers', (SELECT id FROM old_customers WHERE name = $1))",
                &[&cust, &nt],
            )
        });
        w.notes.push((customer.clone(), note));

        // A new customer (a v7 key from the default) referred by an old key; now and then one
        // inserted with an explicit v4 key, as an application not yet switched would.
        let name = format!("new-{who}-{i}");
        let explicit_v4 = i % 5 == 0;
        let (n2, c2) = (name.clone(), customer.clone());
        let insert = if explicit_v4 {
            "INSERT INTO customers (id, name, created_at, referred_by)
             SELECT gen_random_uuid(), $1, clock_timestamp(),
                    rekey_translate('customers', (SELECT id FROM old_customers WHERE name = $2))"
        } else {
            "INSERT INTO customers (name, created_at, referred_by)
             SELECT $1, clock_timestamp(),
                    rekey_translate('customers', (SELECT id FROM old_customers WHERE name = $2))"
        };
        with_retries(&mut c, |tx| tx.execute(insert, &[&n2, &c2]));
        w.new_customers.push(name);

        // An order, with a line, for an existing customer reached by its old key.
        let number = 1_000_000 + who * 100_000 + i;
        let c3 = customer.clone();
        with_retries(&mut c, |tx| {
            let n = tx.execute(
                "INSERT INTO orders (number, customer_id, placed_at, total)
                 VALUES ($1, rekey_translate('customers', (SELECT id FROM old_customers WHERE name = $2)),
                         clock_timestamp(), 1)",
                &[&number, &c3],
            )?;
            tx.execute(
                "INSERT INTO order_lines SELECT id, 1, 'x' FROM orders WHERE number = $1",
                &[&number],
            )?;
            Ok(n)
        });
        w.new_orders.push((number, customer.clone()));

        // A delete of an old order (its lines and notes cascade... the lines are NO ACTION, so
        // they go first).
        let old_number = 3 * ((i * 53 + who) % 2000 * 3 + who + 3);
        with_retries(&mut c, |tx| {
            tx.execute(
                "DELETE FROM line_notes WHERE order_id = (SELECT id FROM orders WHERE number = $1)",
                &[&old_number],
            )?;
            tx.execute(
                "DELETE FROM order_lines WHERE order_id = (SELECT id FROM orders WHERE number = $1)",
                &[&old_number],
            )?;
            let n = tx.execute("DELETE FROM orders WHERE number = $1", &[&old_number])?;
            // Already deleted by an earlier round: nothing to retry.
            Ok(n.max(1))
        });
        w.deleted_orders.push(old_number);
    }
    w
}

/// Three sessions update, insert and delete rows of every table while the rekey runs: every
/// write they committed is there afterwards, the rows they inserted have v7 keys, and every old
/// key they used is mapped to its row's new key.
#[test]
fn writes_during_the_rekey_are_kept() {
    let db = "t_rekey_concurrent";
    let mut c = fresh_db(db);
    create_shop(&mut c, 6_100);
    c.batch_execute(
        "CREATE TABLE old_customers AS SELECT name, id FROM customers;
         CREATE UNIQUE INDEX ON old_customers (name);
         SELECT rekey_switch_default('customers')",
    )
    .unwrap();
    // The mapping table exists from the start, for the writers' rekey_translate.
    c.batch_execute("CALL rekey_run('customers', 'created_at', max_batches => 0)")
        .unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|who| {
            let stop = stop.clone();
            thread::spawn(move || writer(db, who, stop))
        })
        .collect();
    let mut runner = connect_to(db);
    runner
        .batch_execute(
            "CALL rekey_run('customers', batch_size => 200, pause => '10ms', lock_timeout => '200ms', max_retries => 100)",
        )
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let written: Vec<Written> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    // A sweep for the v4 keys the writers inserted after the run passed them.
    runner.batch_execute("CALL rekey_run('customers')").unwrap();

    eprintln!(
        "writes during the rekey: {:?} rounds per writer",
        written.iter().map(|w| w.notes.len()).collect::<Vec<_>>()
    );
    for w in &written {
        assert!(w.notes.len() >= 20);
        // The last note each customer got.
        let mut last = std::collections::HashMap::new();
        for (customer, note) in &w.notes {
            last.insert(customer.clone(), note.clone());
        }
        for (customer, note) in last {
            let got: Option<String> = c
                .query_one("SELECT note FROM customers WHERE name = $1", &[&customer])
                .unwrap()
                .get(0);
            assert_eq!(got.as_deref(), Some(note.as_str()), "note of {customer}");
        }
        for name in &w.new_customers {
            let row = c
                .query_one(
                    "SELECT uuid_extract_version(c.id)::int4, r.name
                       FROM customers c JOIN customers r ON r.id = c.referred_by WHERE c.name = $1",
                    &[name],
                )
                .unwrap();
            assert_eq!(row.get::<_, i32>(0), 7, "{name}");
        }
        for (number, customer) in &w.new_orders {
            let owner: String = c
                .query_one(
                    "SELECT c.name FROM orders o JOIN customers c ON c.id = o.customer_id
                      JOIN order_lines l ON l.order_id = o.id WHERE o.number = $1",
                    &[number],
                )
                .unwrap()
                .get(0);
            assert_eq!(&owner, customer, "order {number}");
        }
        for number in &w.deleted_orders {
            assert_eq!(
                c.query_one("SELECT count(*) FROM orders WHERE number = $1", &[number])
                    .unwrap()
                    .get::<_, i64>(0),
                0,
                "order {number} was deleted"
            );
        }
    }
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM customers WHERE uuid_extract_version(id) <> 7"
        ),
        0
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM old_customers o LEFT JOIN customers c USING (name)
              WHERE rekey_translate('customers', o.id) IS DISTINCT FROM c.id"
        ),
        0
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM customers c JOIN customers_rekey_map m ON m.new_key = c.id
              WHERE uuid_extract_timestamp(c.id) <> date_trunc('milliseconds', c.created_at)"
        ),
        0
    );
    let checks = verify_statuses(&mut c, "customers");
    let failed: Vec<_> = checks
        .iter()
        .filter(|(_, s, _)| s == "failed" || s == "not finished")
        .collect();
    assert!(failed.is_empty(), "{checks:#?}");
    // The writers changed the counts, and verify says so rather than failing.
    assert!(
        checks
            .iter()
            .any(|(n, s, _)| n == "rows of public.customers" && s == "changed"),
        "{checks:#?}"
    );
}

#[test]
fn wrong_use_is_refused_before_anything_changes() {
    let mut c = fresh_db("t_rekey_wrong_use");
    create_shop(&mut c, 300);
    c.batch_execute(
        "CREATE TABLE numbered (id bigint PRIMARY KEY);
         CREATE TABLE keyless (id uuid, created_at timestamptz);
         CREATE TABLE pair (a uuid, b uuid, PRIMARY KEY (a, b));
         CREATE TABLE by_time (id uuid, at timestamptz, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
         CREATE TABLE by_time_rest PARTITION OF by_time DEFAULT;
         CREATE TABLE coded (id uuid PRIMARY KEY DEFAULT uuidv7(), code text UNIQUE, created_at timestamptz);
         CREATE TABLE coded_ref (c text REFERENCES coded (code) ON UPDATE CASCADE)",
    )
    .unwrap();
    let untouched = one_string(&mut c, EVERYTHING);
    let nothing_changed = |c: &mut Client| {
        assert_eq!(one_string(c, EVERYTHING), untouched);
        assert_eq!(
            one_i64(
                c,
                "SELECT count(*) FROM pg_class WHERE relname LIKE '%rekey_map'"
            ),
            0
        );
        assert_eq!(
            one_i64(c, "SELECT count(*) FROM objectid_internal.rekey_state"),
            0
        );
    };

    for (sql, state, words) in [
        (
            "SELECT * FROM rekey_plan('numbered', 'x')",
            SqlState::DATATYPE_MISMATCH,
            "the primary key column id of public.numbered is of type bigint, not uuid",
        ),
        (
            "SELECT * FROM rekey_assess('keyless')",
            SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
            "table public.keyless has no primary key",
        ),
        (
            "CALL rekey_run('pair', 'x')",
            SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
            "the primary key of public.pair has 2 columns (a, b), not one",
        ),
        // Partitioned by a time column, which is then in the key: said so, with what to do.
        (
            "SELECT * FROM rekey_assess('by_time')",
            SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
            "the primary key of public.by_time has 2 columns (id, at), not one: it includes the partition key",
        ),
        // A foreign key to another column of the table, whose action would run as whoever
        // changed it.
        (
            "CALL rekey_run('coded', 'created_at')",
            SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
            "foreign key coded_ref_c_fkey of public.coded_ref references columns of public.coded other than the key, ON UPDATE CASCADE",
        ),
        // Before the default is switched.
        (
            "CALL rekey_run('customers', 'created_at')",
            SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
            "the default of public.customers.id does not make version-7 keys",
        ),
        (
            "SELECT * FROM rekey_plan('customers', 'created_at', batch_size => 0)",
            SqlState::INVALID_PARAMETER_VALUE,
            "batch_size must be at least 1, not 0",
        ),
    ] {
        let (got, message) = error_of(&mut c, sql);
        assert_eq!(got, state, "{sql}: {message}");
        assert!(message.contains(words), "{sql}: {message}");
    }
    nothing_changed(&mut c);

    c.batch_execute("SELECT rekey_switch_default('customers')")
        .unwrap();
    let untouched = one_string(&mut c, EVERYTHING);
    let nothing_changed = |c: &mut Client| {
        assert_eq!(one_string(c, EVERYTHING), untouched);
        assert_eq!(
            one_i64(
                c,
                "SELECT count(*) FROM pg_class WHERE relname LIKE '%rekey_map'"
            ),
            0
        );
        assert_eq!(
            one_i64(c, "SELECT count(*) FROM objectid_internal.rekey_state"),
            0
        );
    };
    for (sql, state, words) in [
        ("CALL rekey_run('customers')", SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
         "no time column: name the column that holds each row's creation time (candidates: created_at)"),
        ("CALL rekey_run('customers', 'created')", SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
         "time column \"created\" does not exist in public.customers"),
        ("CALL rekey_run('customers', 'name')", SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
         "time column \"name\" of public.customers is of type text, not timestamptz, timestamp or date"),
        ("BEGIN; CALL rekey_run('customers', 'created_at')", SqlState::ACTIVE_SQL_TRANSACTION,
         "rekey_run must be called by a CALL of its own, outside a transaction block"),
        ("DO $$BEGIN CALL rekey_run('customers', 'created_at'); EXCEPTION WHEN division_by_zero THEN NULL; END$$",
         SqlState::ACTIVE_SQL_TRANSACTION, "outside a transaction block"),
        ("CALL rekey_run('customers', 'created_at', mapping_table => 'numbered')",
         SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
         "public.numbered exists and is not a rekey mapping table"),
    ] {
        let (got, message) = error_of(&mut c, sql);
        c.batch_execute("ROLLBACK").ok();
        assert_eq!(got, state, "{sql}: {message}");
        assert!(message.contains(words), "{sql}: {message}");
        nothing_changed(&mut c);
    }

    // A referencing column without an index, a trigger that would fire on the rewrite, a rule:
    // listed by the plan, refused by the run, all in one error.
    c.batch_execute(
        "CREATE TABLE visits (customer_id uuid REFERENCES customers (id), at timestamptz);
         CREATE TABLE audit (id uuid, at timestamptz);
         CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql
             AS 'BEGIN INSERT INTO public.audit VALUES (NEW.id, now()); RETURN NEW; END';
         CREATE TRIGGER customers_audit AFTER UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION audit()",
    )
    .unwrap();
    let plan = c
        .query("SELECT * FROM rekey_plan('customers', 'created_at')", &[])
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n");
    let unindexed =
        "public.visits.customer_id references the key but no btree index starts with it: \
                     CREATE INDEX CONCURRENTLY ON public.visits (customer_id)";
    let trigger =
        "trigger customers_audit on public.customers would fire on the rewrite of every row: \
                   disable it, or pass fire_triggers => true";
    assert!(
        plan.contains(&format!(
            "Problems that stop it:\n  - {unindexed}\n  - {trigger}"
        )),
        "{plan}"
    );
    let (got, message) = error_of(&mut c, "CALL rekey_run('customers', 'created_at')");
    assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE);
    assert!(
        message.contains(unindexed) && message.contains(trigger),
        "{message}"
    );
    nothing_changed(&mut c);
    c.batch_execute("CREATE INDEX ON visits (customer_id)")
        .unwrap();
    let (_, message) = error_of(&mut c, "CALL rekey_run('customers', 'created_at')");
    assert!(
        !message.contains(unindexed) && message.contains(trigger),
        "{message}"
    );
    nothing_changed(&mut c);

    // Insufficient privileges: a role that may update customers, but is not its owner and may not
    // update orders, which follows.
    c.batch_execute(
        "DROP ROLE IF EXISTS rekey_clerk; CREATE ROLE rekey_clerk;
         GRANT SELECT, UPDATE ON customers TO rekey_clerk; GRANT SELECT ON orders TO rekey_clerk;
         GRANT CREATE ON SCHEMA public TO rekey_clerk",
    )
    .unwrap();
    // SET ROLE apart from the CALL: one query string is one implicit transaction, where a CALL
    // cannot commit.
    c.batch_execute("SET ROLE rekey_clerk").unwrap();
    let (got, message) = error_of(
        &mut c,
        "CALL rekey_run('customers', 'created_at', fire_triggers => true)",
    );
    assert_eq!(got, SqlState::INSUFFICIENT_PRIVILEGE, "{message}");
    assert!(
        message.contains(
            "cannot rekey public.customers: permission denied: only the owner of public.customers (postgres) \
             or a member of its role may rekey it"
        ),
        "{message}"
    );
    let (got, message) = error_of(&mut c, "SELECT rekey_switch_default('orders')");
    assert_eq!(got, SqlState::INSUFFICIENT_PRIVILEGE, "{message}");
    // Nor can it write the state of the table, which it may update, behind the toolkit's back.
    let (got, message) = error_of(
        &mut c,
        "INSERT INTO objectid_internal.rekey_state (relid, key_constraint, key_column, time_column, time_zone, fallback_time,
                                  mapping_table, keys_total, started_at, run_started_at, snapshot)
         VALUES ('customers'::regclass, 0, 'id', 'created_at', 'UTC', now(), 'customers'::regclass, 0, now(), now(), '{}')",
    );
    assert_eq!(got, SqlState::INSUFFICIENT_PRIVILEGE, "{message}");
    assert!(
        message.contains("only the owner of the table") || message.contains("row-level security"),
        "{message}"
    );
    c.batch_execute("RESET ROLE").unwrap();
    nothing_changed(&mut c);

    // The owner can run it, with the trigger acknowledged and update rights on the tables that
    // follow; the mapping table is the owner's. It sees its own rekey in rekey_status; a role that
    // may not read customers does not, and cannot change or forget it.
    c.batch_execute(
        "ALTER TABLE customers OWNER TO rekey_clerk; ALTER TABLE orders OWNER TO rekey_clerk;
         ALTER TABLE visits OWNER TO rekey_clerk; GRANT INSERT ON audit TO rekey_clerk;
         SET ROLE rekey_clerk",
    )
    .unwrap();
    c.batch_execute("CALL rekey_run('customers', 'created_at', fire_triggers => true)")
        .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM rekey_status WHERE state = 'finished'"
        ),
        1
    );
    c.batch_execute("RESET ROLE").unwrap();
    assert_eq!(
        one_string(
            &mut c,
            "SELECT tableowner::text FROM pg_tables WHERE tablename = 'customers_rekey_map'"
        ),
        "rekey_clerk"
    );
    assert_eq!(one_i64(&mut c, "SELECT count(*) FROM audit"), 300);
    assert_verified(&mut c, "customers");
    c.batch_execute(
        "DROP ROLE IF EXISTS rekey_outsider; CREATE ROLE rekey_outsider; SET ROLE rekey_outsider",
    )
    .unwrap();
    assert_eq!(one_i64(&mut c, "SELECT count(*) FROM rekey_status"), 0);
    let (got, _) = error_of(&mut c, "SELECT rekey_forget('customers')");
    assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE);
    assert_eq!(
        c.execute(
            "UPDATE objectid_internal.rekey_state SET keys_done = 0",
            &[]
        )
        .unwrap(),
        0
    );
    c.batch_execute("RESET ROLE").unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT keys_done FROM objectid_internal.rekey_state WHERE relid = 'customers'::regclass"
        ),
        300
    );
}

/// Asked to, it rekeys everything in the caller's transaction, which can still roll it all back.
#[test]
fn in_one_transaction_when_asked() {
    let mut c = fresh_db("t_rekey_one_transaction");
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
    let mut c = fresh_db("t_rekey_batch_sized");
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
    let mut c = fresh_database("t_rekey_docs_plan");
    c.batch_execute(&docs_block("<!-- example-schema -->"))
        .unwrap();
    let want = docs_block("<!-- example-plan");
    let got: Vec<String> = c
        .query("SELECT * FROM rekey_plan('orders', 'created_at')", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(got.join("\n") + "\n", want);
}

/// The single-statement rewrite needs nothing from the constraints: with every ON UPDATE action,
/// deferrable or not, initially deferred or not, a foreign key to a unique constraint that
/// includes the key, and a child in another schema, every reference follows and none is nulled,
/// defaulted or refused.
#[test]
fn every_on_update_action_follows() {
    let mut c = fresh_db("t_rekey_actions");
    c.batch_execute(
        "CREATE TABLE parent (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int NOT NULL,
                              created_at timestamptz NOT NULL, UNIQUE (id, n));
         CREATE SCHEMA other;
         CREATE TABLE other.\"Child Table\" (
             \"No Action\" uuid REFERENCES parent ON UPDATE NO ACTION,
             restricted uuid REFERENCES parent ON UPDATE RESTRICT,
             cascaded uuid REFERENCES parent ON UPDATE CASCADE,
             nulled uuid REFERENCES parent ON UPDATE SET NULL,
             defaulted uuid DEFAULT '00000000-0000-4000-8000-000000000000' REFERENCES parent ON UPDATE SET DEFAULT,
             deferred uuid REFERENCES parent DEFERRABLE INITIALLY DEFERRED,
             pair_id uuid, pair_n int, FOREIGN KEY (pair_id, pair_n) REFERENCES parent (id, n),
             n int NOT NULL);
         CREATE INDEX ON other.\"Child Table\" (\"No Action\");
         CREATE INDEX ON other.\"Child Table\" (restricted);
         CREATE INDEX ON other.\"Child Table\" (cascaded);
         CREATE INDEX ON other.\"Child Table\" (nulled);
         CREATE INDEX ON other.\"Child Table\" (defaulted);
         CREATE INDEX ON other.\"Child Table\" (deferred);
         CREATE INDEX ON other.\"Child Table\" (pair_id, pair_n);
         INSERT INTO parent VALUES ('00000000-0000-4000-8000-000000000000', 0, '2020-01-01 00:00:00+00');
         INSERT INTO parent (n, created_at)
             SELECT i, '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 s' FROM generate_series(1, 2000) i;
         INSERT INTO other.\"Child Table\"
             SELECT p.id, p.id, p.id, p.id, p.id, p.id, p.id, p.n, p.n FROM parent p WHERE p.n > 0;
         SELECT rekey_switch_default('parent')",
    )
    .unwrap();
    let refs = one_i64(&mut c, "SELECT count(*) FROM rekey_references('parent')");
    assert_eq!(refs, 7);
    c.batch_execute("CALL rekey_run('parent', 'created_at', batch_size => 300)")
        .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM other.\"Child Table\" t JOIN parent p ON p.n = t.n
              WHERE (t.\"No Action\", t.restricted, t.cascaded, t.nulled, t.defaulted, t.deferred, t.pair_id)
                    IS DISTINCT FROM (p.id, p.id, p.id, p.id, p.id, p.id, p.id)
                 OR uuid_extract_version(p.id) <> 7"
        ),
        0
    );
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM other.\"Child Table\""),
        2000
    );
    assert_verified(&mut c, "parent");
}

/// ON UPDATE CASCADE foreign keys of every shape follow through the batch's own statement, which
/// rewrites their rows too (PostgreSQL's cascade then finds nothing to do): a child, a
/// self-reference, a child referenced in turn, a key of two columns with a NULL in the other
/// (MATCH SIMPLE: never cascaded to), a child of a partitioned key table, and a child whose BEFORE
/// trigger keeps the old value, whose foreign key's check then refuses the batch (a cascaded row
/// that looks unchanged is not checked).
#[test]
fn cascading_foreign_keys_follow_in_every_shape() {
    let mut c = fresh_db("t_rekey_cascade");
    c.batch_execute(
        "CREATE TABLE parent (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int NOT NULL UNIQUE,
                              created_at timestamptz NOT NULL,
                              up uuid REFERENCES parent ON UPDATE CASCADE, UNIQUE (id, n));
         CREATE TABLE leaf (p_id uuid REFERENCES parent ON UPDATE CASCADE, n int NOT NULL);
         CREATE TABLE mixed (p_id uuid REFERENCES parent ON UPDATE CASCADE, n int NOT NULL,
                             FOREIGN KEY (p_id, n) REFERENCES parent (id, n));
         CREATE TABLE line (p_id uuid REFERENCES parent ON UPDATE CASCADE, line int NOT NULL,
                            PRIMARY KEY (p_id, line));
         CREATE TABLE pair (p_id uuid, n int, FOREIGN KEY (p_id, n) REFERENCES parent (id, n) ON UPDATE CASCADE);
         CREATE TABLE guarded (p_id uuid REFERENCES parent ON UPDATE CASCADE, n int NOT NULL, seen int NOT NULL DEFAULT 0);
         CREATE FUNCTION keep_p_id() RETURNS trigger LANGUAGE plpgsql AS
             'BEGIN NEW.p_id := OLD.p_id; NEW.seen := OLD.seen + 1; RETURN NEW; END';
         CREATE TRIGGER keep_p_id BEFORE UPDATE ON guarded FOR EACH ROW EXECUTE FUNCTION keep_p_id();
         CREATE TABLE note (p_id uuid, line int, FOREIGN KEY (p_id, line) REFERENCES line);
         CREATE TABLE hashed (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz NOT NULL)
             PARTITION BY HASH (id);
         CREATE TABLE hashed_0 PARTITION OF hashed FOR VALUES WITH (MODULUS 2, REMAINDER 0);
         CREATE TABLE hashed_1 PARTITION OF hashed FOR VALUES WITH (MODULUS 2, REMAINDER 1);
         CREATE TABLE hashed_ref (h_id uuid REFERENCES hashed ON UPDATE CASCADE ON DELETE CASCADE);
         INSERT INTO parent (n, created_at)
             SELECT i, '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 s' FROM generate_series(1, 300) i;
         UPDATE parent p SET up = q.id FROM parent q WHERE q.n = p.n / 2;
         INSERT INTO leaf SELECT id, n FROM parent;
         INSERT INTO mixed SELECT id, n FROM parent;
         INSERT INTO line SELECT id, j FROM parent, generate_series(1, 2) j;
         -- MATCH SIMPLE: a row with a NULL in n is not checked, nor cascaded to.
         INSERT INTO pair SELECT id, CASE WHEN n % 2 = 0 THEN n END FROM parent;
         INSERT INTO guarded SELECT id, n FROM parent;
         INSERT INTO note SELECT p_id, line FROM line;
         INSERT INTO hashed (created_at)
             SELECT '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 s' FROM generate_series(1, 200) i;
         INSERT INTO hashed_ref SELECT id FROM hashed;
         CREATE INDEX ON parent (up); CREATE INDEX ON leaf (p_id); CREATE INDEX ON mixed (p_id);
         CREATE INDEX ON note (p_id, line); CREATE INDEX ON hashed_ref (h_id);
         CREATE INDEX ON pair (p_id); CREATE INDEX ON guarded (p_id);
         SELECT rekey_switch_default('parent'); SELECT rekey_switch_default('hashed')",
    )
    .unwrap();
    let rewrite = |c: &mut Client, table: &str| -> String {
        c.query_one(
            &format!(
                "SELECT (objectid_internal.rekey_statements('{table}', 'created_at', 'UTC',
                                                             'public.{table}_rekey_map')).rewrite_query"
            ),
            &[],
        )
        .unwrap()
        .get(0)
    };
    let statement = rewrite(&mut c, "parent");
    for rewritten in [
        "public.leaf",
        "public.line",
        "public.note",
        "public.mixed",
        "public.pair",
        "public.guarded",
    ] {
        assert!(
            statement.contains(&format!("UPDATE ONLY {rewritten} t")),
            "{rewritten}: {statement}"
        );
    }
    assert!(
        statement.contains("up = objectid_internal.rekey_new_key(t.up, $1, $2)"),
        "{statement}"
    );
    let statement = rewrite(&mut c, "hashed");
    assert!(statement.contains("public.hashed_ref"), "{statement}");

    // The trigger that keeps the old reference makes the batch fail its foreign key check:
    // refused, nothing kept. Without it, every reference follows.
    let (got, message) = error_of(
        &mut c,
        "CALL rekey_run('parent', 'created_at', batch_size => 70, fire_triggers => true, max_retries => 0)",
    );
    assert_eq!(got, SqlState::FOREIGN_KEY_VIOLATION, "{message}");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM parent WHERE uuid_extract_version(id) = 7"
        ),
        0
    );
    c.batch_execute("DROP TRIGGER keep_p_id ON guarded")
        .unwrap();
    c.batch_execute("CALL rekey_run('parent', 'created_at', batch_size => 70)")
        .unwrap();
    // Before 15, rows moving between the key table's partitions are refused (their foreign keys'
    // actions would run as a DELETE): the table stays as it was.
    let moves = server_version(&mut c) >= 150000;
    if moves {
        c.batch_execute("CALL rekey_run('hashed', 'created_at', batch_size => 70)")
            .unwrap();
    } else {
        let (got, message) = error_of(
            &mut c,
            "CALL rekey_run('hashed', 'created_at', batch_size => 70)",
        );
        assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{message}");
        assert!(
            message.contains("rows would move between partitions"),
            "{message}"
        );
    }
    let hashed_v7 = if moves { 200 } else { 0 };
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT (SELECT count(*) FROM parent p JOIN parent q ON q.id = p.up WHERE q.n = p.n / 2)
                  + (SELECT count(*) FROM leaf l JOIN parent p USING (n) WHERE l.p_id = p.id)
                  + (SELECT count(*) FROM mixed m JOIN parent p USING (n) WHERE m.p_id = p.id)
                  + (SELECT count(*) FROM note n JOIN line l USING (p_id, line) JOIN parent p ON p.id = l.p_id)
                  + (SELECT count(*) FROM hashed_ref r JOIN hashed h ON h.id = r.h_id)
                  + (SELECT count(*) FROM pair r JOIN parent p ON p.id = r.p_id WHERE r.n IS NOT DISTINCT FROM
                                                                       CASE WHEN p.n % 2 = 0 THEN p.n END)
                  + (SELECT count(*) FROM guarded g JOIN parent p ON p.id = g.p_id AND p.n = g.n)
                  + (SELECT count(*) FROM parent WHERE uuid_extract_version(id) = 7)
                  + (SELECT count(*) FROM hashed WHERE uuid_extract_version(id) = 7)"
        ),
        299 + 300 + 300 + 600 + 200 + 300 + 300 + 300 + hashed_v7
    );
    assert_verified(&mut c, "parent");
    if moves {
        assert_verified(&mut c, "hashed");
    }
}

/// The state and the mapping table cannot be supplied by anyone but the table's owner, and no
/// stored or given name is ever run as SQL: a mapping table made beforehand by another role, a
/// view, a table made for another table, or SQL in the mapping table's name are all refused.
#[test]
fn state_and_mapping_cannot_be_planted() {
    let mut c = fresh_db("t_rekey_planted");
    create_shop(&mut c, 200);
    c.batch_execute(
        "SELECT rekey_switch_default('customers');
         DROP ROLE IF EXISTS rekey_mallory; CREATE ROLE rekey_mallory;
         GRANT SELECT, UPDATE (note) ON customers TO rekey_mallory;
         GRANT CREATE ON SCHEMA public TO rekey_mallory;
         SET ROLE rekey_mallory;
         CREATE TABLE customers_rekey_map (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE, batch bigint NOT NULL);
         GRANT ALL ON customers_rekey_map TO PUBLIC;
         RESET ROLE",
    )
    .unwrap();
    let untouched = one_string(&mut c, EVERYTHING);
    let (got, message) = error_of(&mut c, "CALL rekey_run('customers', 'created_at')");
    assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{message}");
    assert!(
        message.contains(
            "public.customers_rekey_map is owned by rekey_mallory, not by postgres, the owner of public.customers"
        ),
        "{message}"
    );
    c.batch_execute("DROP TABLE customers_rekey_map").unwrap();
    c.batch_execute(
        "CREATE VIEW fake_map AS SELECT NULL::uuid AS old_key, NULL::uuid AS new_key, NULL::bigint AS batch",
    )
    .unwrap();
    let (_, message) = error_of(
        &mut c,
        "CALL rekey_run('customers', 'created_at', mapping_table => 'fake_map')",
    );
    assert!(
        message.contains("public.fake_map is not a plain table"),
        "{message}"
    );
    // A name is only ever a name.
    let (_, message) = error_of(
        &mut c,
        "CALL rekey_run('customers', 'created_at', mapping_table => 'x; DROP TABLE orders')",
    );
    assert!(
        message.contains("invalid name syntax")
            || message.contains("string is not a valid identifier"),
        "{message}"
    );
    assert_eq!(one_string(&mut c, EVERYTHING), untouched);
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM objectid_internal.rekey_state"),
        0
    );

    // The mapping table of another table is not adopted either.
    c.batch_execute(
        "CREATE TABLE other_t (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
         INSERT INTO other_t DEFAULT VALUES",
    )
    .unwrap();
    c.batch_execute("CALL rekey_run('other_t', 'at', mapping_table => 'shared_map')")
        .unwrap();
    let (_, message) = error_of(
        &mut c,
        "CALL rekey_run('customers', 'created_at', mapping_table => 'shared_map')",
    );
    assert!(
        message
            .contains("public.shared_map exists and is not the mapping table of public.customers"),
        "{message}"
    );
    assert_eq!(one_string(&mut c, EVERYTHING), untouched);
}

/// Long table names that share their first 53 characters get distinct mapping tables or a clear
/// refusal, never a shared one; and a rekey begun under one search_path resumes, translates and
/// verifies under another with the same tables.
#[test]
fn names_hold_whatever_the_search_path() {
    let mut c = fresh_db("t_rekey_names");
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

/// Refused before anything changes and before the lock is taken: a time that a UUIDv7 cannot
/// carry as the fallback, or one other than the recorded; an isolation level under which a retried
/// batch could never see what blocked it; a COMMIT refused for a reason rekey_can_commit cannot
/// see (a loop over a cursor that is not read-only); parameters out of range on a finished rekey.
#[test]
fn refused_before_the_lock() {
    let mut c = fresh_db("t_rekey_refused");
    create_shop(&mut c, 100);
    c.batch_execute(
        "SELECT rekey_switch_default('customers'); CREATE TABLE q (n int); INSERT INTO q VALUES (1)",
    )
    .unwrap();
    let untouched = one_string(&mut c, EVERYTHING);
    let own_locks =
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()";
    for (sql, state, words) in [
        (
            "CALL rekey_run('customers', 'created_at', fallback_time => 'infinity')",
            SqlState::INVALID_PARAMETER_VALUE,
            "fallback_time infinity is not a time a UUIDv7 can carry",
        ),
        (
            "CALL rekey_run('customers', 'created_at', lock_timeout => '30 days')",
            SqlState::INVALID_PARAMETER_VALUE,
            "lock_timeout (under 24 days)",
        ),
        (
            "DO $$DECLARE r record; BEGIN FOR r IN UPDATE q SET n = n + 1 RETURNING n LOOP \
             CALL rekey_run('customers', 'created_at'); END LOOP; END$$",
            // 55000 from PostgreSQL 14 on, 2D000 on 13: compared below as either.
            SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
            "cannot perform transaction commands inside a cursor loop that is not read-only",
        ),
    ] {
        let (got, message) = error_of(&mut c, sql);
        assert!(
            got == state
                || (state == SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE
                    && got == SqlState::INVALID_TRANSACTION_TERMINATION),
            "{sql}: {got:?} {message}"
        );
        assert!(message.contains(words), "{sql}: {message}");
        assert_eq!(one_i64(&mut c, own_locks), 0, "{sql}");
    }
    c.batch_execute("SET default_transaction_isolation = 'repeatable read'")
        .unwrap();
    let (got, message) = error_of(&mut c, "CALL rekey_run('customers', 'created_at')");
    assert_eq!(got, SqlState::INVALID_TRANSACTION_STATE, "{message}");
    assert!(
        message.contains("needs the READ COMMITTED isolation level"),
        "{message}"
    );
    c.batch_execute("RESET default_transaction_isolation")
        .unwrap();
    assert_eq!(one_string(&mut c, EVERYTHING), untouched);
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM objectid_internal.rekey_state"),
        0
    );

    c.batch_execute("CALL rekey_run('customers', 'created_at', fallback_time => '2001-01-01 UTC')")
        .unwrap();
    let (got, message) = error_of(
        &mut c,
        "CALL rekey_run('customers', fallback_time => '2002-01-01 UTC')",
    );
    assert_eq!(got, SqlState::INVALID_PARAMETER_VALUE, "{message}");
    let (got, _) = error_of(&mut c, "CALL rekey_run('customers', max_batches => -1)");
    assert_eq!(got, SqlState::INVALID_PARAMETER_VALUE);
    assert_eq!(
        one_string(&mut c, "SELECT state FROM rekey_status"),
        "finished"
    );
}

/// A BEFORE UPDATE trigger that keeps the old key (acknowledged with fire_triggers) stops the
/// batch: never a mapping to keys that exist nowhere.
#[test]
fn a_trigger_keeping_the_key_stops_the_batch() {
    let mut c = fresh_db("t_rekey_trigger_keeps");
    c.batch_execute(
        "CREATE TABLE t (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL);
         INSERT INTO t SELECT gen_random_uuid(), now() FROM generate_series(1, 10);
         CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN NEW.id := OLD.id; RETURN NEW; END';
         CREATE TRIGGER keep BEFORE UPDATE ON t FOR EACH ROW EXECUTE FUNCTION keep()",
    )
    .unwrap();
    let (got, message) = error_of(
        &mut c,
        "CALL rekey_run('t', 'at', fire_triggers => true, max_retries => 0)",
    );
    assert_eq!(got, SqlState::TRIGGERED_ACTION_EXCEPTION, "{message}");
    assert_eq!(one_i64(&mut c, "SELECT count(*) FROM t_rekey_map"), 0);
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM t WHERE uuid_extract_version(id) = 4"
        ),
        10
    );
}

/// Forgotten and started again, a rekey adopts its own mapping table and counts what it holds;
/// a recorded rekey whose table lost its primary key (as a dropped table whose OID came back would)
/// is refused until forgotten.
/// A session left holding a table's rekey lock while it runs nothing (a cancel between two of a
/// run's statements, right after a COMMIT, can leave its session lock behind) does not stop
/// another session's run; one that is running a statement does (55006).
#[test]
fn an_idle_holder_of_the_lock_does_not_stop_a_run() {
    let mut c = fresh_db("t_rekey_idle_holder");
    c.batch_execute(
        "CREATE TABLE t (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
         INSERT INTO t SELECT gen_random_uuid() FROM generate_series(1, 50)",
    )
    .unwrap();
    let mut holder = connect_to("t_rekey_idle_holder");
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

#[test]
fn forget_and_start_again() {
    let mut c = fresh_db("t_rekey_forget");
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
    let mut c = fresh_db("t_rekey_db_a");
    create_shop(&mut c, 50);
    c.batch_execute("SELECT rekey_switch_default('customers')")
        .unwrap();
    c.batch_execute("CALL rekey_run('customers', 'created_at', max_batches => 0)")
        .unwrap();
    drop(c);
    let mut admin = connect_to("postgres");
    admin
        .batch_execute("DROP DATABASE IF EXISTS t_rekey_db_b WITH (FORCE)")
        .unwrap();
    // Waits (up to 5 s) for the session just closed to leave the template.
    admin
        .batch_execute("CREATE DATABASE t_rekey_db_b TEMPLATE t_rekey_db_a")
        .unwrap();
    let mut b = connect_to("t_rekey_db_b");
    b.batch_execute(
        "BEGIN; CALL rekey_run('customers', max_batches => 0, in_one_transaction => true)",
    )
    .unwrap();
    let mut a = connect_to("t_rekey_db_a");
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

/// Nothing on the caller's search_path stands in for a built-in the toolkit uses: an aggregate
/// array_agg(uuid) and operators =(oid, regclass) and =(oid, integer) of another role, first on
/// the path of a superuser who plans, runs, watches, translates and verifies, are never called.
/// And nothing another role made runs either: a table that follows the key but belongs to
/// another role, a mapping table with a CHECK of its own, an advisory lock taken to fake a run,
/// a state row written by a role that bypasses row-level security, a batch run by a non-owner.
#[test]
fn no_one_elses_code_runs() {
    let mut c = fresh_db("t_rekey_hostile");
    create_shop(&mut c, 300);
    c.batch_execute(
        "DROP ROLE IF EXISTS rekey_evil; CREATE ROLE rekey_evil LOGIN BYPASSRLS;
         CREATE SCHEMA evil AUTHORIZATION rekey_evil;
         CREATE TABLE evil.calls (what text); GRANT INSERT ON evil.calls TO PUBLIC;
         SET ROLE rekey_evil;
         CREATE FUNCTION evil.agg_step(uuid[], uuid) RETURNS uuid[] LANGUAGE plpgsql
             AS 'BEGIN INSERT INTO evil.calls VALUES (''array_agg''); RETURN $1 || $2; END';
         CREATE AGGREGATE evil.array_agg(uuid) (SFUNC = evil.agg_step, STYPE = uuid[]);
         CREATE FUNCTION evil.eq_oid_regclass(oid, regclass) RETURNS boolean LANGUAGE plpgsql
             AS 'BEGIN INSERT INTO evil.calls VALUES (''=''); RETURN $1 OPERATOR(pg_catalog.=) $2::oid; END';
         CREATE OPERATOR evil.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = evil.eq_oid_regclass);
         CREATE FUNCTION evil.eq_oid_int(oid, integer) RETURNS boolean LANGUAGE plpgsql
             AS 'BEGIN INSERT INTO evil.calls VALUES (''=''); RETURN $1 OPERATOR(pg_catalog.=) $2::oid; END';
         CREATE OPERATOR evil.= (LEFTARG = oid, RIGHTARG = integer, FUNCTION = evil.eq_oid_int);
         RESET ROLE;
         SELECT rekey_switch_default('customers');
         SET search_path = evil, public",
    )
    .unwrap();
    for sql in [
        "SELECT count(*) FROM rekey_plan('customers', 'created_at')",
        "SELECT count(*) FROM rekey_assess('customers')",
        "CALL rekey_run('customers', 'created_at', batch_size => 100)",
        "SELECT count(*) FROM rekey_status",
        "SELECT count(*) FROM rekey_verify('customers')",
        "SELECT rekey_translate('customers', gen_random_uuid())",
    ] {
        c.batch_execute(sql).unwrap();
    }
    c.batch_execute("RESET search_path").unwrap();
    assert_eq!(one_i64(&mut c, "SELECT count(*) FROM evil.calls"), 0);
    assert_verified(&mut c, "customers");

    // A role that bypasses row-level security still cannot touch the record; a non-owner cannot
    // run a batch; an advisory lock of another role neither fakes a run nor stops one.
    c.batch_execute("SET ROLE rekey_evil").unwrap();
    let (got, _) = error_of(
        &mut c,
        "UPDATE objectid_internal.rekey_state SET keys_done = 0",
    );
    assert_eq!(got, SqlState::INSUFFICIENT_PRIVILEGE);
    let (got, _) = error_of(
        &mut c,
        "SELECT objectid_internal.rekey_batch('customers', 10, false)",
    );
    assert_eq!(got, SqlState::INSUFFICIENT_PRIVILEGE);
    c.batch_execute("RESET ROLE").unwrap();
    let mut evil = postgres::Client::connect(
        &format!("{} dbname=t_rekey_hostile user=rekey_evil", dsn()),
        postgres::NoTls,
    )
    .unwrap();
    evil.batch_execute(
        "SELECT pg_advisory_lock((1919249273::bigint << 32) | 'public.customers'::regclass::oid::bigint)",
    )
    .unwrap();
    assert_eq!(
        one_string(&mut c, "SELECT state FROM rekey_status"),
        "finished"
    );
    c.batch_execute("CALL rekey_run('customers')").unwrap();
    c.batch_execute("SELECT rekey_forget('customers')").unwrap();
    drop(evil);

    // A table that follows the key but is another role's, which the key's owner may not act as,
    // and a mapping table with code of its own.
    c.batch_execute(
        "DO $$ BEGIN
             IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'rekey_t_owner') THEN
                 CREATE ROLE rekey_t_owner;
             END IF;
         END $$;
         CREATE TABLE t (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
         INSERT INTO t SELECT gen_random_uuid() FROM generate_series(1, 5);
         GRANT SELECT, REFERENCES ON t TO rekey_evil; GRANT USAGE ON SCHEMA public TO rekey_evil;
         SET ROLE rekey_evil;
         CREATE TABLE evil.child (t_id uuid REFERENCES public.t);
         CREATE INDEX ON evil.child (t_id);
         GRANT ALL ON evil.child TO PUBLIC;
         RESET ROLE;
         ALTER TABLE t OWNER TO rekey_t_owner;
         GRANT CREATE ON SCHEMA public TO rekey_t_owner",
    )
    .unwrap();
    c.batch_execute("SET ROLE rekey_t_owner").unwrap();
    let (got, message) = error_of(&mut c, "CALL rekey_run('t', 'at')");
    assert_eq!(got, SqlState::INSUFFICIENT_PRIVILEGE, "{message}");
    assert!(
        message.contains(
            "evil.child is owned by rekey_evil, not by rekey_t_owner, the owner of public.t: only a role that may act as both"
        ),
        "{message}"
    );
    c.batch_execute("RESET ROLE").unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM t WHERE uuid_extract_version(id) = 4"
        ),
        5
    );
    c.batch_execute(
        "DROP TABLE evil.child; ALTER TABLE t OWNER TO postgres; REVOKE CREATE ON SCHEMA public FROM rekey_t_owner",
    )
    .unwrap();
    c.batch_execute("CALL rekey_run('t', 'at', max_batches => 0)")
        .unwrap();
    c.batch_execute("ALTER TABLE t_rekey_map ADD CHECK (batch > 0)")
        .unwrap();
    let (got, message) = error_of(&mut c, "CALL rekey_run('t')");
    assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{message}");
    assert!(
        message.contains("has a trigger, rule, constraint"),
        "{message}"
    );
}

/// A table with two columns holding keys (a self-reference) rewrites, in each, only the keys of
/// the batch: an old key inserted again after its row was rekeyed, referenced by a new row,
/// neither wedges the run nor is remapped.
#[test]
fn self_reference_rewrites_only_the_batch() {
    let mut c = fresh_db("t_rekey_self_ref");
    c.batch_execute(
        "CREATE TABLE node (id uuid PRIMARY KEY DEFAULT uuidv7(), up uuid REFERENCES node,
                            at timestamptz NOT NULL);
         CREATE INDEX ON node (up);
         INSERT INTO node (id, at) SELECT gen_random_uuid(), '2020-01-01 00:00:00+00'::timestamptz + i * interval '1 h'
           FROM generate_series(1, 50) i;
         UPDATE node SET up = (SELECT min(id::text)::uuid FROM node)",
    )
    .unwrap();
    c.batch_execute("CALL rekey_run('node', 'at', batch_size => 10, max_batches => 1)")
        .unwrap();
    // The application inserts one of the old keys again, and a row referencing it.
    c.batch_execute(
        "INSERT INTO node (id, at) SELECT old_key, '2030-01-01 00:00:00+00' FROM node_rekey_map ORDER BY old_key LIMIT 1;
         INSERT INTO node (id, up, at) SELECT gen_random_uuid(), old_key, '2030-01-02 00:00:00+00'
           FROM node_rekey_map ORDER BY old_key LIMIT 1",
    )
    .unwrap();
    c.batch_execute("CALL rekey_run('node', batch_size => 10)")
        .unwrap();
    // The row inserted again keeps its (old) key, as does the reference to it.
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM node n JOIN node_rekey_map m ON m.old_key = n.id
              WHERE n.at = '2030-01-01 00:00:00+00'"
        ),
        1
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM node n JOIN node p ON p.id = n.up WHERE n.at = '2030-01-02 00:00:00+00'
               AND p.at = '2030-01-01 00:00:00+00'"
        ),
        1
    );
    let checks = verify_statuses(&mut c, "node");
    let keys = checks
        .iter()
        .find(|(n, _, _)| n == "version-4 keys in public.node.id")
        .unwrap();
    assert_eq!(keys.1, "failed", "{checks:#?}");
    assert!(
        keys.2
            .contains("an old key, inserted again after its row was rekeyed"),
        "{checks:#?}"
    );
}

/// With the attacker's schema before pg_catalog on a superuser's search_path, not even the
/// procedure's first expressions reach it; the tables' own code (a CHECK calling a function of
/// their owner) runs as their owner, not as the superuser who runs the rekey; and a run recorded
/// in the state shows as running and stops rekey_forget even while another role holds the lock.
#[test]
fn the_owner_runs_the_owners_code() {
    let mut c = fresh_db("t_rekey_owner_code");
    c.batch_execute(
        "DROP ROLE IF EXISTS rekey_owner2; CREATE ROLE rekey_owner2;
         DROP ROLE IF EXISTS rekey_evil2; CREATE ROLE rekey_evil2 LOGIN;
         CREATE TABLE calls (who text, what text); GRANT INSERT ON calls TO PUBLIC;
         CREATE SCHEMA evil AUTHORIZATION rekey_evil2;
         SET ROLE rekey_evil2;
         CREATE FUNCTION evil.shl(bigint, integer) RETURNS bigint LANGUAGE plpgsql
             AS 'BEGIN INSERT INTO public.calls VALUES (current_user, ''<<''); RETURN $1 OPERATOR(pg_catalog.<<) $2; END';
         CREATE OPERATOR evil.<< (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = evil.shl);
         CREATE FUNCTION evil.current_setting(text) RETURNS text LANGUAGE plpgsql
             AS 'BEGIN INSERT INTO public.calls VALUES (current_user, ''current_setting''); RETURN pg_catalog.current_setting($1); END';
         CREATE FUNCTION evil.set_config(text, text, boolean) RETURNS text LANGUAGE plpgsql
             AS 'BEGIN INSERT INTO public.calls VALUES (current_user, ''set_config''); RETURN pg_catalog.set_config($1, $2, $3); END';
         RESET ROLE;
         CREATE FUNCTION checked(uuid) RETURNS boolean LANGUAGE plpgsql
             AS 'BEGIN INSERT INTO public.calls VALUES (current_user, ''check''); RETURN true; END';
         ALTER FUNCTION checked(uuid) OWNER TO rekey_owner2;
         CREATE TABLE p (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
         CREATE TABLE k (p_id uuid REFERENCES p CHECK (checked(p_id)));
         CREATE INDEX ON k (p_id);
         ALTER TABLE p OWNER TO rekey_owner2; ALTER TABLE k OWNER TO rekey_owner2;
         INSERT INTO p SELECT gen_random_uuid() FROM generate_series(1, 300);
         INSERT INTO k SELECT id FROM p;
         DELETE FROM calls",
    )
    .unwrap();
    c.batch_execute("SET search_path = evil, pg_catalog, public")
        .unwrap();
    c.batch_execute("CALL rekey_run('public.p', 'at', batch_size => 100)")
        .unwrap_or(());
    c.batch_execute("RESET search_path").unwrap();
    // The default was not switched: refused, but only after its first expressions ran.
    c.batch_execute("SELECT rekey_switch_default('p')").unwrap();
    c.batch_execute("SET search_path = evil, pg_catalog, public")
        .unwrap();
    c.batch_execute("CALL rekey_run('public.p', 'at', batch_size => 100)")
        .unwrap();
    c.batch_execute("RESET search_path").unwrap();
    let calls: Vec<(String, String)> = c
        .query(
            "SELECT who, what FROM calls GROUP BY 1, 2 ORDER BY 1, 2",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        calls,
        vec![("rekey_owner2".to_string(), "check".to_string())]
    );
    assert_verified(&mut c, "p");

    // A run recorded in the state, slowed down by its pauses, while another role holds the lock.
    c.batch_execute(
        "INSERT INTO p SELECT gen_random_uuid() FROM generate_series(1, 300);
         INSERT INTO k SELECT id FROM p WHERE uuid_extract_version(id) = 4",
    )
    .unwrap();
    let mut evil = postgres::Client::connect(
        &format!("{} dbname=t_rekey_owner_code user=rekey_evil2", dsn()),
        postgres::NoTls,
    )
    .unwrap();
    evil.batch_execute(
        "SELECT pg_advisory_lock((1919249273::bigint << 32) | 'public.p'::regclass::oid::bigint)",
    )
    .unwrap();
    let mut runner = connect_to("t_rekey_owner_code");
    let run = thread::spawn(move || {
        runner.batch_execute("CALL rekey_run('p', batch_size => 30, pause => '300ms')")
    });
    let started = Instant::now();
    while one_i64(
        &mut c,
        "SELECT keys_done FROM objectid_internal.rekey_state",
    ) == 300
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the run never started"
        );
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        one_string(&mut c, "SELECT state FROM rekey_status"),
        "running"
    );
    let (got, _) = error_of(&mut c, "SELECT rekey_forget('p')");
    assert_eq!(got, SqlState::OBJECT_IN_USE);
    run.join().unwrap().unwrap();
    drop(evil);
    // Rows were added since the start: counts are "changed", nothing failed.
    let checks = verify_statuses(&mut c, "p");
    assert!(
        checks.iter().all(|(_, s, _)| s == "ok" || s == "changed"),
        "{checks:#?}"
    );
}

/// Around the rekey itself: a materialized view that reads the key through a view, and one that
/// reads that one, are listed by assess and plan and refreshed at the end when asked; rows whose
/// time is NULL or beyond what a UUIDv7 carries are counted by assess and plan and get the fallback
/// time; rekey_translate answers before the rekey starts (every key its own) and after
/// rekey_forget (from the mapping table it finds by its comment).
#[test]
fn materialized_views_untimed_rows_and_translate_around_the_rekey() {
    let mut c = fresh_db("t_rekey_around");
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

/// Partitioned tables are rewritten through their root: a child partitioned by time, whose
/// partitions hold the references; a key table partitioned by the key itself, whose rows move
/// between partitions as their keys change (on 15 and later; refused on 13 and 14, which run a
/// moved row's foreign-key actions as a DELETE), with a child whose ON DELETE CASCADE must not
/// fire. A partition of another owner, a trigger on one partition, and a partition named instead
/// of its root are refused before anything changes.
#[test]
fn partitioned_tables_are_rekeyed_through_their_root() {
    let mut c = fresh_db("t_rekey_partitions");
    let version = server_version(&mut c);
    c.batch_execute(
        "CREATE TABLE acc (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL);
         CREATE TABLE ev (acc_id uuid NOT NULL REFERENCES acc, at timestamptz NOT NULL, n int)
             PARTITION BY RANGE (at);
         CREATE TABLE ev_1 PARTITION OF ev FOR VALUES FROM ('2020-01-01') TO ('2024-03-01');
         CREATE TABLE ev_2 PARTITION OF ev FOR VALUES FROM ('2024-03-01') TO ('2030-01-01')
             PARTITION BY LIST (n);
         CREATE TABLE ev_2a PARTITION OF ev_2 FOR VALUES IN (1);
         CREATE TABLE ev_2b PARTITION OF ev_2 DEFAULT;
         CREATE INDEX ON ev (acc_id);
         INSERT INTO acc SELECT gen_random_uuid(), '2024-01-01'::timestamptz + i * interval '1 hour'
           FROM generate_series(1, 3000) i;
         INSERT INTO ev SELECT id, at, 1 FROM acc;
         INSERT INTO ev SELECT id, at + interval '1 day', 2 FROM acc;

         CREATE TABLE hk (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL) PARTITION BY HASH (id);
         CREATE TABLE hk_0 PARTITION OF hk FOR VALUES WITH (MODULUS 3, REMAINDER 0);
         CREATE TABLE hk_1 PARTITION OF hk FOR VALUES WITH (MODULUS 3, REMAINDER 1);
         CREATE TABLE hk_2 PARTITION OF hk FOR VALUES WITH (MODULUS 3, REMAINDER 2);
         CREATE TABLE hkc (hk_id uuid REFERENCES hk ON DELETE CASCADE ON UPDATE NO ACTION, x int);
         CREATE INDEX ON hkc (hk_id);
         INSERT INTO hk SELECT gen_random_uuid(), '2024-01-01'::timestamptz + i * interval '1 minute'
           FROM generate_series(1, 2000) i;
         INSERT INTO hkc SELECT id, 1 FROM hk;
         ANALYZE",
    )
    .unwrap();

    // Refusals first, each before anything changes.
    c.batch_execute(
        "DROP ROLE IF EXISTS rekey_part_other; CREATE ROLE rekey_part_other;
         ALTER TABLE ev_2b OWNER TO rekey_part_other",
    )
    .unwrap();
    let (got, message) = error_of(&mut c, "CALL rekey_run('acc', 'at')");
    assert_eq!(got, SqlState::INSUFFICIENT_PRIVILEGE, "{message}");
    assert!(
        message.contains("partition public.ev_2b of public.ev is owned by rekey_part_other"),
        "{message}"
    );
    // The plan shows the problem, with the partitioned child's rows not counted, and the owner's
    // read of that child refuses, naming both owners.
    let plan = one_string(
        &mut c,
        "SELECT string_agg(line, E'\\n') FROM rekey_plan('acc', 'at') line",
    );
    assert!(
        plan.contains("partition public.ev_2b of public.ev is owned by rekey_part_other")
            && plan.contains("ev (acc_id): unknown rows"),
        "{plan}"
    );
    let (got, message) = error_of(
        &mut c,
        "SELECT objectid_internal.rekey_read_as_owner('ev'::regclass, 'SELECT 1 AS one')",
    );
    assert_eq!(got, SqlState::INSUFFICIENT_PRIVILEGE, "{message}");
    assert!(
        message.contains("ev (owned by postgres) have other owners: ")
            && message.contains("ev_2b (owned by rekey_part_other)"),
        "{message}"
    );
    c.batch_execute(
        "ALTER TABLE ev_2b OWNER TO postgres;
         CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN NEW.n := NEW.n + 1; RETURN NEW; END';
         CREATE TRIGGER bump BEFORE UPDATE ON ev_2a FOR EACH ROW EXECUTE FUNCTION bump()",
    )
    .unwrap();
    let (got, message) = error_of(&mut c, "CALL rekey_run('acc', 'at')");
    assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{message}");
    assert!(
        message.contains("trigger bump on public.ev_2a"),
        "{message}"
    );
    c.batch_execute("DROP TRIGGER bump ON ev_2a").unwrap();
    let (got, message) = error_of(&mut c, "CALL rekey_run('hk_0', 'at')");
    assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{message}");
    assert!(
        message.contains("public.hk_0 is a partition of public.hk: rekey the partitioned table"),
        "{message}"
    );
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM objectid_internal.rekey_state"),
        0
    );

    // A partitioned child follows its parent's keys, in every partition.
    c.batch_execute("CALL rekey_run('acc', 'at', batch_size => 500)")
        .unwrap();
    assert_verified(&mut c, "acc");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM ev e JOIN acc a ON a.id = e.acc_id
              WHERE public.uuid_extract_version(a.id) = 7
                AND public.uuid_extract_timestamp(a.id) = date_trunc('milliseconds', a.at)"
        ),
        6000
    );
    // The references are in all three leaf partitions.
    assert_eq!(
        one_i64(&mut c, "SELECT count(DISTINCT tableoid) FROM ev"),
        3
    );

    // A key table partitioned by its key: rows move between partitions.
    if version < 150000 {
        let (got, message) = error_of(&mut c, "CALL rekey_run('hk', 'at')");
        assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{message}");
        assert!(
            message.contains("rekey it on PostgreSQL 15 or later"),
            "{message}"
        );
        assert_eq!(
            one_i64(
                &mut c,
                "SELECT count(*) FROM hk WHERE public.uuid_extract_version(id) = 4"
            ),
            2000
        );
        return;
    }
    let before: Vec<(String, i64)> = c
        .query(
            "SELECT tableoid::regclass::text, count(*) FROM hk GROUP BY 1 ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    c.batch_execute("CALL rekey_run('hk', 'at', batch_size => 300)")
        .unwrap();
    assert_verified(&mut c, "hk");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM hkc c JOIN hk h ON h.id = c.hk_id
              WHERE public.uuid_extract_version(h.id) = 7"
        ),
        2000,
        "every child follows, none deleted"
    );
    // Each row is in the partition its new key hashes to (the partitions' constraints hold), and
    // some moved.
    let after: Vec<(String, i64)> = c
        .query(
            "SELECT tableoid::regclass::text, count(*) FROM hk GROUP BY 1 ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(after.iter().map(|r| r.1).sum::<i64>(), 2000);
    assert_ne!(before, after);
}

/// A trigger on UPDATE OF a generated column made from the key fires whenever the key changes
/// (review 6): without fire_triggers it stops the rekey, as one on the key itself does.
#[test]
fn a_trigger_on_a_generated_column_of_the_key_is_a_problem() {
    let mut c = fresh_db("t_rekey_generated_trigger");
    c.batch_execute(
        "CREATE TABLE g (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                         h text GENERATED ALWAYS AS (id::text) STORED);
         CREATE FUNCTION g_t() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
         CREATE TRIGGER g_h AFTER UPDATE OF h ON g FOR EACH ROW EXECUTE FUNCTION g_t();
         INSERT INTO g DEFAULT VALUES",
    )
    .unwrap();
    let plan = strings(&mut c, "SELECT * FROM rekey_plan('g', 'at')");
    assert!(
        plan.iter()
            .any(|l| l.contains("trigger g_h on public.g would fire on the rewrite of every row")),
        "{plan:#?}"
    );
    c.batch_execute("ALTER TABLE g DISABLE TRIGGER g_h")
        .unwrap();
    let plan = strings(&mut c, "SELECT * FROM rekey_plan('g', 'at')");
    assert!(
        plan.iter().any(|l| l == "Problems that stop it: none"),
        "{plan:#?}"
    );
}

/// In a database whose encoding is not UTF-8, names with characters outside ASCII are refused
/// cleanly (0A000, not yet supported), by assess, plan and run alike, and the error quotes the
/// statement with those bytes escaped; names in ASCII rekey there as anywhere, and a cursor with
/// such a name is named in the refusal to run beside it.
#[test]
fn names_outside_ascii_in_a_database_of_another_encoding_are_refused_cleanly() {
    let name = "t_rekey_latin1";
    let mut c = fresh_database_encoded(name, "LATIN1");
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

/// The query that reads the session's temporary objects and cursors around every operation of a
/// table owner's code keeps its plan for the session: it still reads them right after the session
/// first gets a temporary schema, after `DISCARD ALL`, and on another search_path.
#[test]
fn the_session_state_read_survives_temporary_schemas_and_discard() {
    let mut c = fresh_db("t_rekey_session_plan");
    c.batch_execute(
        "CREATE TABLE t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now());
         INSERT INTO t SELECT gen_random_uuid(), now() FROM generate_series(1, 5);",
    )
    .unwrap();
    let plan = "SELECT count(*) FROM rekey_plan('public.t', 'at')";
    let first = one_i64(&mut c, plan);
    assert!(first > 5, "{first}");
    for step in [
        "CREATE TEMP TABLE scratch (x int)",
        "DISCARD ALL",
        "CREATE SCHEMA elsewhere; SET search_path = elsewhere, public",
    ] {
        c.batch_execute(step).unwrap();
        assert_eq!(one_i64(&mut c, plan), first, "{step}");
    }
    // Still refused with an idle cursor open, whose name the kept statement read.
    c.batch_execute("BEGIN; DECLARE kept_plan_cursor CURSOR FOR SELECT 1")
        .unwrap();
    let message = expect_error(&mut c, plan, &SqlState::INSUFFICIENT_PRIVILEGE);
    assert!(message.contains("kept_plan_cursor"), "{message}");
    c.batch_execute("ROLLBACK").unwrap();
}
