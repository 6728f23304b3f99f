//! The rekey toolkit (sql/rekey/, docs/migration.md): a four-table schema with UUIDv4 keys is
//! assessed, planned, switched and rekeyed to UUIDv7, then checked against a snapshot taken
//! before; the same with the migrating session killed mid-batch, and with other sessions writing
//! all the while; and every wrong use refused before anything changes.
//!
//! One file per concern: `end_to_end` (whole runs, interrupted or written to meanwhile),
//! `options` (how a run is asked for), `refusals` (what is refused before anything changes),
//! `references` (foreign keys and partitions that follow the key), `state` (the record, lock and
//! status of a rekey), `names` (names of tables and schemas), `others_code` (whose code runs),
//! `around` (materialized views, rows without a time, translation before and after), `fast_path`
//! (the foreign-key checks left out, per table, on real schemas) and `repack`
//! (tables rewritten by REPACK, VACUUM FULL and CLUSTER under the run). This file holds the shop
//! they rekey and the checks of its result.

mod around;
mod end_to_end;
mod fast_path;
mod names;
mod options;
mod others_code;
mod references;
mod refusals;
mod repack;
mod state;

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

/// What rekey_verify says of `table`: (check, status, detail) for each of its checks.
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
