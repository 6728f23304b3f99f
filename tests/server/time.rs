//! objectid_timestamp() and objectid_from_time().

use postgres::error::SqlState;

use crate::common::*;

#[test]
fn timestamp_reads_unsigned_seconds() {
    let mut c = database_with_extension("").client;
    c.batch_execute("SET TimeZone = 'UTC'").unwrap();
    for (id, want) in [
        ("000000000000000000000000", "1970-01-01 00:00:00+00"),
        ("7fffffff0000000000000000", "2038-01-19 03:14:07+00"),
        ("800000000000000000000000", "2038-01-19 03:14:08+00"),
        ("ffffffffffffffffffffffff", "2106-02-07 06:28:15+00"),
        ("507f1f77bcf86cd799439011", "2012-10-17 21:13:27+00"),
    ] {
        assert_eq!(
            one_string(&mut c, &format!("SELECT objectid_timestamp('{id}')::text")),
            want,
            "{id}"
        );
    }
    assert!(one_bool(&mut c, "SELECT objectid_timestamp(NULL) IS NULL"));
}

#[test]
fn from_time_is_the_smallest_id_of_the_second() {
    let mut c = database_with_extension("").client;
    for (at, want) in [
        ("1970-01-01 00:00:00+00", "000000000000000000000000"),
        ("2012-10-17 21:13:27.999999+00", "507f1f770000000000000000"),
        ("2012-10-17 23:13:27+02", "507f1f770000000000000000"),
        ("2038-01-19 03:14:08+00", "800000000000000000000000"),
        ("2106-02-07 06:28:15.5+00", "ffffffff0000000000000000"),
    ] {
        assert_eq!(
            one_string(&mut c, &format!("SELECT objectid_from_time('{at}')::text")),
            want,
            "{at}"
        );
    }
    // Half-open ranges of seconds select exactly the ids of those seconds.
    c.batch_execute(
        "CREATE TABLE t AS SELECT (lpad(to_hex(s), 8, '0') || '0000000000' || lpad(to_hex(s % 4096), 6, '0'))::objectid AS id \
         FROM generate_series(1350508400, 1350508420) s",
    )
    .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM t WHERE id >= objectid_from_time('2012-10-17 21:13:27+00') \
                                     AND id < objectid_from_time('2012-10-17 21:13:30+00')"
        ),
        3
    );
    // Through the timestamp and back: the first id of the same second, never above the id.
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM t WHERE objectid_from_time(objectid_timestamp(id)) > id \
                OR objectid_timestamp(objectid_from_time(objectid_timestamp(id))) <> objectid_timestamp(id) \
                OR substr(objectid_from_time(objectid_timestamp(id))::bytea, 1, 4) <> substr(id::bytea, 1, 4)"
        ),
        0
    );
}

#[test]
fn times_outside_the_range_are_errors() {
    let mut c = database_with_extension("").client;
    c.batch_execute("SET TimeZone = 'UTC'").unwrap();
    for (at, shown) in [
        ("1969-12-31 23:59:59+00", "1969-12-31 23:59:59+00"),
        ("2106-02-07 06:28:16+00", "2106-02-07 06:28:16+00"),
        ("infinity", "infinity"),
        ("-infinity", "-infinity"),
    ] {
        let err = c
            .batch_execute(&format!("SELECT objectid_from_time('{at}')"))
            .unwrap_err();
        let db = err.as_db_error().unwrap();
        assert_eq!(db.code(), &SqlState::DATETIME_FIELD_OVERFLOW, "{at}");
        assert_eq!(
            db.message(),
            format!("timestamp out of range for type objectid: \"{shown}\"")
        );
        assert_eq!(
            db.detail(),
            Some(
                "An objectid carries times from 1970-01-01 00:00:00+00 to 2106-02-07 06:28:15+00."
            )
        );
    }
}

#[test]
fn bounds_never_fail_and_bracket_the_second() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(
            "SELECT objectid_lower_bound('2012-10-17 21:13:27.5+00')::text, \
                    objectid_upper_bound('2012-10-17 21:13:27.5+00')::text, \
                    objectid_lower_bound('-infinity')::text, objectid_upper_bound('1900-01-01')::text, \
                    objectid_lower_bound('3000-01-01')::text, objectid_upper_bound('infinity')::text",
            &[],
        )
        .unwrap();
    let got: Vec<String> = (0..6).map(|i| row.get(i)).collect();
    assert_eq!(
        got,
        vec![
            "507f1f770000000000000000",
            "507f1f77ffffffffffffffff",
            "000000000000000000000000",
            "000000000000000000000000",
            "ffffffffffffffffffffffff",
            "ffffffffffffffffffffffff",
        ]
    );
}

#[test]
fn bound_before_stops_at_the_previous_second() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(
            "SELECT objectid_upper_bound_before('2012-10-17 21:13:27+00')::text, \
                    objectid_upper_bound_before('2012-10-17 21:13:27.000001+00')::text, \
                    objectid_upper_bound_before('1970-01-01 00:00:00+00')::text, \
                    objectid_upper_bound_before('-infinity')::text, \
                    objectid_upper_bound_before('infinity')::text",
            &[],
        )
        .unwrap();
    let got: Vec<String> = (0..5).map(|i| row.get(i)).collect();
    assert_eq!(
        got,
        vec![
            "507f1f76ffffffffffffffff",
            "507f1f77ffffffffffffffff",
            "000000000000000000000000",
            "000000000000000000000000",
            "ffffffffffffffffffffffff",
        ]
    );
}

/// A table of 200,000 ids, one a minute going back from now (about 139 days).
fn events_table(c: &mut postgres::Client, schema: &str) {
    c.batch_execute(&format!(
        "CREATE TABLE events (id {schema}objectid PRIMARY KEY, n int); \
         INSERT INTO events \
         SELECT (lpad(to_hex(extract(epoch FROM now())::int8 - i * 60), 8, '0') \
                 || substr(md5(i::text), 1, 16))::{schema}objectid, i \
         FROM generate_series(0, 199999) i; \
         ANALYZE events"
    ))
    .unwrap();
}

fn sorted_ns(c: &mut postgres::Client, condition: &str) -> Vec<i32> {
    let mut v: Vec<i32> = c
        .query(&format!("SELECT n FROM events WHERE {condition}"), &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    v.sort();
    v
}

#[test]
fn time_conditions_use_the_primary_key() {
    let mut c = database_with_extension("").client;
    events_table(&mut c, "");
    let cases = [
        ("objectid_timestamp(id) >= now() - interval '1 hour'", 61, vec![">= objectid_first_at_or_after("]),
        ("objectid_timestamp(id) > now() - interval '1 hour'", 60, vec![">= objectid_first_after("]),
        ("now() - interval '1 hour' <= objectid_timestamp(id)", 61, vec![">= objectid_first_at_or_after("]),
        (
            "objectid_timestamp(id) BETWEEN now() - interval '3 hours' AND now() - interval '2 hours'",
            61,
            vec![">= objectid_first_at_or_after(", "<= objectid_last_at_or_before("],
        ),
        (
            "objectid_timestamp(id) = date_trunc('second', now()) - interval '10 minutes'",
            1,
            vec![">= objectid_first_at_or_after(", "<= objectid_last_at_or_before("],
        ),
        ("objectid_timestamp(id) < now() - interval '138 days 23 hours'", 0, vec!["<= objectid_last_before("]),
        ("objectid_timestamp(id) <= now() - interval '138 days'", -1, vec!["<= objectid_last_at_or_before("]),
        ("now() - interval '138 days' > objectid_timestamp(id)", -1, vec!["<= objectid_last_before("]),
    ];
    let expected_old = one_i64(
        &mut c,
        "SELECT count(*) FROM events WHERE n >= (extract(epoch FROM interval '138 days') / 60)::int",
    );
    for (condition, rows, bounds) in cases {
        let plan = explain(&mut c, &format!("SELECT n FROM events WHERE {condition}"));
        assert!(
            plan.contains("Index Scan using events_pkey on events"),
            "{condition}:\n{plan}"
        );
        for b in bounds {
            assert!(
                plan.contains("Index Cond: (") && plan.contains(b),
                "{condition}: no {b}\n{plan}"
            );
        }
        // The bounds are exact, so the condition is not rechecked on each row.
        assert!(!plan.contains("Filter: "), "{condition}:\n{plan}");
        let with_index = sorted_ns(&mut c, condition);
        c.batch_execute("SET enable_indexscan = off; SET enable_bitmapscan = off")
            .unwrap();
        assert!(
            explain(&mut c, &format!("SELECT n FROM events WHERE {condition}"))
                .contains("Seq Scan")
        );
        let without = sorted_ns(&mut c, condition);
        c.batch_execute("RESET enable_indexscan; RESET enable_bitmapscan")
            .unwrap();
        assert_eq!(with_index, without, "{condition}");
        match rows {
            -1 => assert!(
                (expected_old - 2..=expected_old + 2).contains(&(with_index.len() as i64)),
                "{condition}: {} rows",
                with_index.len()
            ),
            n => assert!(
                (n - 1..=n + 1).contains(&(with_index.len() as i32)),
                "{condition}: {} rows, expected about {n}",
                with_index.len()
            ),
        }
    }
}

#[test]
fn the_first_query_of_a_session_already_uses_the_index() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
    events_table(&mut c, "");
    drop(c);
    // A new backend has not loaded the library yet; planning this query must load it in time.
    let mut fresh = connect_to(&name);
    let plan = explain(
        &mut fresh,
        "SELECT n FROM events WHERE objectid_timestamp(id) >= now() - interval '1 hour'",
    );
    assert!(plan.contains("Index Scan using events_pkey"), "{plan}");
}

#[test]
fn time_conditions_in_another_schema() {
    let mut c = empty_database("").client;
    c.batch_execute("CREATE SCHEMA ids; CREATE EXTENSION pg_objectid SCHEMA ids")
        .unwrap();
    events_table(&mut c, "ids.");
    let plan = explain(
        &mut c,
        "SELECT n FROM events WHERE ids.objectid_timestamp(id) >= now() - interval '1 hour'",
    );
    assert!(
        plan.contains("Index Scan using events_pkey")
            && plan.contains("ids.objectid_first_at_or_after("),
        "{plan}"
    );
    // One id a minute: 61 in the last hour, give or take the seconds since the table was made.
    let n = one_i64(
        &mut c,
        "SELECT count(*) FROM events WHERE ids.objectid_timestamp(id) >= now() - interval '1 hour'",
    );
    assert!((59..=62).contains(&n), "{n} rows");
}

/// A range between two constant times scans exactly its seconds' keys, with bounds folded to
/// constants like explicit ones, and from the index alone when nothing else is needed.
#[test]
fn constant_time_ranges_scan_only_their_keys_from_the_index() {
    let mut c = database_with_extension("").client;
    events_table(&mut c, "");
    c.batch_execute("VACUUM events").unwrap();
    let from = one_string(
        &mut c,
        "SELECT date_trunc('second', now() - interval '3 hours')::text",
    );
    let to = one_string(
        &mut c,
        "SELECT date_trunc('second', now() - interval '1 hour')::text",
    );
    let condition =
        format!("objectid_timestamp(id) >= '{from}' AND objectid_timestamp(id) < '{to}'");
    let q = format!("SELECT count(*) FROM events WHERE {condition}");
    let plan = explain(&mut c, &q);
    let lower = one_string(
        &mut c,
        &format!("SELECT objectid_lower_bound('{from}')::text"),
    );
    let upper = one_string(
        &mut c,
        &format!("SELECT objectid_upper_bound_before('{to}')::text"),
    );
    assert!(plan.contains("Index Only Scan using events_pkey"), "{plan}");
    assert!(
        plan.contains(&format!("id >= '{lower}'::objectid"))
            && plan.contains(&format!("id <= '{upper}'::objectid")),
        "{plan}"
    );
    // Nothing of the second `to` is read only to be filtered out again.
    let analyzed = explain_analyze(&mut c, &q);
    assert!(!analyzed.contains("Rows Removed by Filter"), "{analyzed}");
    let count = one_i64(&mut c, &q);
    assert_eq!(count, 120, "one id a minute for two hours");
    c.batch_execute(
        "SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = off",
    )
    .unwrap();
    assert_eq!(one_i64(&mut c, &q), count);
}
