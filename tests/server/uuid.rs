//! uuidv7(), uuidv4(), uuid_extract_*() and the v7 time helpers, called schema-qualified so that
//! on PostgreSQL 17 and 18 the extension's functions are tested, not the built-in ones.

use postgres::error::SqlState;

use crate::common::*;

#[test]
fn uuidv7_layout_and_clock() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(
            "SELECT count(*) FILTER (WHERE public.uuid_extract_version(u) <> 7), \
                    count(*) FILTER (WHERE get_byte(uuid_send(u), 8) >> 6 <> 2), \
                    count(*) FILTER (WHERE public.uuid_extract_timestamp(u) < date_trunc('milliseconds', before) \
                                        OR public.uuid_extract_timestamp(u) > after) \
             FROM (SELECT clock_timestamp() AS before, public.uuidv7() AS u, clock_timestamp() AS after \
                   FROM generate_series(1, 10000)) s",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 0, "version 7");
    assert_eq!(row.get::<_, i64>(1), 0, "variant 10");
    // Bracketed by clock readings just before and after, so a busy machine cannot fail it.
    assert_eq!(
        row.get::<_, i64>(2),
        0,
        "v7 times within the clock readings around each call"
    );
}

#[test]
fn a_million_uuidv7_strictly_increase() {
    let mut c = database_with_extension("").client;
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM (SELECT u, lag(u) OVER (ORDER BY n) AS p \
               FROM (SELECT n, public.uuidv7() AS u FROM generate_series(1, 1000000) n) s) t \
             WHERE p >= u"
        ),
        0
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(DISTINCT u) FROM (SELECT public.uuidv7() AS u FROM generate_series(1, 1000000)) s"
        ),
        1_000_000
    );
}

#[test]
fn shifted_uuidv7() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(
            "SELECT extract(epoch FROM now() - interval '1 day' - public.uuid_extract_timestamp(public.uuidv7(interval '-1 day')))::float8, \
                    public.uuid_extract_timestamp(public.uuidv7(interval '-56 years')) > '1970-01-01', \
                    public.uuid_extract_timestamp(public.uuidv7(interval '300 years')) > now() + interval '299 years', \
                    public.uuidv7(NULL::interval) IS NULL",
            &[],
        )
        .unwrap();
    let off: f64 = row.get(0);
    assert!(off.abs() < 1.0, "shift off by {off} s");
    assert!(row.get::<_, bool>(1) && row.get::<_, bool>(2) && row.get::<_, bool>(3));
    for shift in ["-100 years", "10000 years"] {
        let err = c
            .batch_execute(&format!("SELECT public.uuidv7(interval '{shift}')"))
            .unwrap_err();
        let db = err.as_db_error().unwrap();
        assert_eq!(db.code(), &SqlState::DATETIME_FIELD_OVERFLOW, "{shift}");
        assert_eq!(db.message(), "timestamp out of range for UUID version 7");
        assert_eq!(
            db.detail(),
            Some("UUID version 7 supports timestamps from 1970-01-01 to approximately year 10889.")
        );
    }
    if server_version(&mut c) >= 170000 {
        for shift in ["infinity", "-infinity"] {
            let err = c
                .batch_execute(&format!("SELECT public.uuidv7(interval '{shift}')"))
                .unwrap_err();
            let db = err.as_db_error().unwrap();
            assert_eq!(db.code(), &SqlState::DATETIME_FIELD_OVERFLOW);
            assert_eq!(db.message(), "interval out of range for UUID version 7");
            assert_eq!(
                db.detail(),
                Some("UUID version 7 does not support infinite intervals.")
            );
        }
    }
}

#[test]
fn same_errors_as_postgresql_18() {
    let mut c = database_with_extension("").client;
    if server_version(&mut c) < 180000 {
        return;
    }
    for call in [
        "uuidv7(interval '-100 years')",
        "uuidv7(interval '10000 years')",
        "uuidv7(interval 'infinity')",
    ] {
        let ours = c
            .batch_execute(&format!("SELECT public.{call}"))
            .unwrap_err();
        let theirs = c
            .batch_execute(&format!("SELECT pg_catalog.{call}"))
            .unwrap_err();
        let (o, t) = (ours.as_db_error().unwrap(), theirs.as_db_error().unwrap());
        assert_eq!(
            (o.code(), o.message(), o.detail()),
            (t.code(), t.message(), t.detail()),
            "{call}"
        );
    }
}

/// Issue 19, item 3: 18.6 counts the top of uuidv7(interval)'s range in microseconds, so of the
/// last 48-bit millisecond (10889-08-02 05:31:50.655 UTC) only the first microsecond is valid.
/// A shift aimed half a millisecond into it lands there or later whatever the call's latency, and
/// must be refused as 18.6 refuses it; one aimed 5 ms before the top still makes a value.
#[test]
fn uuidv7_interval_refuses_the_last_millisecond_past_its_first_microsecond() {
    let mut c = database_with_extension("").client;
    let builtin = server_version(&mut c) >= 180000;
    let into_last = "'10889-08-02 05:31:50.6555+00'::timestamptz - clock_timestamp()";
    let mut schemas = vec!["public"];
    if builtin {
        schemas.push("pg_catalog");
    }
    for schema in schemas {
        let message = expect_error(
            &mut c,
            &format!("SELECT {schema}.uuidv7({into_last})"),
            &SqlState::DATETIME_FIELD_OVERFLOW,
        );
        assert_eq!(
            message, "timestamp out of range for UUID version 7",
            "{schema}"
        );
    }
    let made = c
        .query_one(
            "SELECT public.uuid_extract_timestamp(public.uuidv7(\
                 '10889-08-02 05:31:50.650+00'::timestamptz - clock_timestamp())) \
                 BETWEEN '10889-08-02 05:31:50.650+00' AND '10889-08-02 05:31:50.655+00'",
            &[],
        )
        .unwrap();
    assert!(made.get::<_, bool>(0), "5 ms before the top");
}

/// Issue 19, item 4: 13-16 have no infinite intervals, so an interval whose fields hold the
/// values 17 gives infinity is finite there, and uuidv7() must say of it what that server's own
/// timestamptz + interval says, not that infinite intervals are unsupported.
#[test]
fn uuidv7_interval_before_17_reports_extreme_fields_as_timestamptz_plus_interval_does() {
    let mut c = database_with_extension("").client;
    if server_version(&mut c) >= 170000 {
        return;
    }
    for shift in [
        "'178956970 years 7 months 2147483647 days 2562047788:00:54.775807'::interval",
        "'-178956970 years -8 months -2147483648 days'::interval \
         - '2562047788:00:54.775807'::interval - '00:00:00.000001'::interval",
    ] {
        let theirs = c
            .batch_execute(&format!("SELECT now() + ({shift})"))
            .unwrap_err();
        let theirs = theirs.as_db_error().unwrap();
        let message = expect_error(
            &mut c,
            &format!("SELECT public.uuidv7({shift})"),
            theirs.code(),
        );
        assert_eq!(message, theirs.message(), "{shift}");
        assert!(!message.contains("infinite"), "{shift}: {message}");
    }
}

#[test]
fn uuidv4_is_random_version_4() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(
            "SELECT count(DISTINCT u), count(*) FILTER (WHERE public.uuid_extract_version(u) = 4), \
                    count(*) FILTER (WHERE public.uuid_extract_timestamp(u) IS NULL) \
             FROM (SELECT public.uuidv4() AS u FROM generate_series(1, 100000)) s",
            &[],
        )
        .unwrap();
    assert_eq!(
        (
            row.get::<_, i64>(0),
            row.get::<_, i64>(1),
            row.get::<_, i64>(2)
        ),
        (100000, 100000, 100000)
    );
}

#[test]
fn known_vectors() {
    let mut c = database_with_extension("").client;
    c.batch_execute("SET TimeZone = 'UTC'").unwrap();
    for (u, version, ts) in [
        // RFC 9562's examples.
        (
            "c232ab00-9414-11ec-b3c8-9f6bdeced846",
            Some(1i16),
            Some("2022-02-22 19:22:22+00"),
        ),
        (
            "017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
            Some(7),
            Some("2022-02-22 19:22:22+00"),
        ),
        ("919108f7-52d1-4320-9bac-f847db4148a8", Some(4), None),
        ("5df41881-3aed-3515-88a7-2f4a814cf09e", Some(3), None),
        (
            "018cc251-f47b-7000-8000-000000000000",
            Some(7),
            Some("2024-01-01 00:00:00.123+00"),
        ),
        // Not the RFC variant (Microsoft's 110, NCS's 0): no version, no time.
        ("017f22e2-79b0-7cc3-d8c4-dc0c0c07398f", None, None),
        ("017f22e2-79b0-7cc3-08c4-dc0c0c07398f", None, None),
        ("00000000-0000-0000-0000-000000000000", None, None),
    ] {
        let row = c
            .query_one(
                &format!(
                    "SELECT public.uuid_extract_version('{u}'), public.uuid_extract_timestamp('{u}')::text"
                ),
                &[],
            )
            .unwrap();
        assert_eq!(row.get::<_, Option<i16>>(0), version, "{u}");
        assert_eq!(row.get::<_, Option<String>>(1).as_deref(), ts, "{u}");
    }
}

#[test]
fn time_helpers() {
    let mut c = database_with_extension("").client;
    c.batch_execute("SET TimeZone = 'UTC'").unwrap();
    assert_eq!(
        one_string(
            &mut c,
            "SELECT public.uuidv7_from_time('2024-01-01 00:00:00.123456+00')::text"
        ),
        "018cc251-f47b-7000-8000-000000000000"
    );
    let row = c
        .query_one(
            "SELECT count(DISTINCT u), min(public.uuid_extract_timestamp(u))::text, \
                    max(public.uuid_extract_timestamp(u))::text, \
                    bool_and(u >= public.uuidv7_from_time('2024-01-01 00:00:00.123+00') \
                         AND u < public.uuidv7_from_time('2024-01-01 00:00:00.124+00')) \
             FROM (SELECT public.uuidv7_at('2024-01-01 00:00:00.123456+00') AS u \
                   FROM generate_series(1, 10000)) s",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 10000);
    assert_eq!(row.get::<_, String>(1), "2024-01-01 00:00:00.123+00");
    assert_eq!(row.get::<_, String>(2), "2024-01-01 00:00:00.123+00");
    assert!(row.get::<_, bool>(3));
    // The planner's bound for `< t`: never an error, and on a whole millisecond it ends the one
    // before.
    let row = c
        .query_one(
            "SELECT public.uuidv7_upper_bound_before('2024-01-01 00:00:00.123+00')::text, \
                    public.uuidv7_upper_bound_before('2024-01-01 00:00:00.123001+00')::text, \
                    public.uuidv7_upper_bound_before('-infinity')::text, \
                    public.uuidv7_upper_bound_before('infinity')::text, \
                    public.uuidv7_upper_bound_before(NULL) IS NULL",
            &[],
        )
        .unwrap();
    let got: Vec<String> = (0..4).map(|i| row.get(i)).collect();
    assert_eq!(
        got,
        vec![
            "018cc251-f47a-ffff-ffff-ffffffffffff",
            "018cc251-f47b-ffff-ffff-ffffffffffff",
            "00000000-0000-0000-0000-000000000000",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
        ]
    );
    assert!(row.get::<_, bool>(4));
    for f in ["uuidv7_from_time", "uuidv7_at"] {
        for at in [
            "1969-12-31 23:59:59.999+00",
            "10890-01-01 00:00:00+00",
            "infinity",
            "-infinity",
        ] {
            let err = c
                .batch_execute(&format!("SELECT public.{f}('{at}')"))
                .unwrap_err();
            let db = err.as_db_error().unwrap();
            assert_eq!(db.code(), &SqlState::DATETIME_FIELD_OVERFLOW, "{f}({at})");
            assert_eq!(db.message(), "timestamp out of range for UUID version 7");
        }
    }
}

/// On 17 and 18 an unqualified call reaches the built-in function; 17's extract knows v1 only.
#[test]
fn builtins_come_first_unless_the_path_says_otherwise() {
    let mut c = database_with_extension("").client;
    let version = server_version(&mut c);
    let v7 = "'017f22e2-79b0-7cc3-98c4-dc0c0c07398f'::uuid";
    let unqualified = format!("SELECT uuid_extract_timestamp({v7}) IS NOT NULL");
    let resolved = "SELECT p.oid::regprocedure::text FROM pg_proc p \
                    WHERE p.oid = 'uuid_extract_timestamp(uuid)'::regprocedure";
    match version {
        v if v >= 180000 => {
            assert_eq!(one_string(&mut c, resolved), "uuid_extract_timestamp(uuid)");
            assert!(one_bool(&mut c, &unqualified), "18's built-in knows v7");
        }
        v if v >= 170000 => {
            assert!(
                !one_bool(&mut c, &unqualified),
                "17's built-in knows only v1"
            );
            assert!(one_bool(
                &mut c,
                &format!("SELECT public.uuid_extract_timestamp({v7}) IS NOT NULL")
            ));
            c.batch_execute("SET search_path = public, pg_catalog")
                .unwrap();
            assert!(
                one_bool(&mut c, &unqualified),
                "with the extension's schema first"
            );
        }
        _ => assert!(one_bool(&mut c, &unqualified), "only ours exists"),
    }
    if version >= 180000 {
        // Ours and 18's agree on the time of every v7, whoever made it.
        assert_eq!(
            one_i64(
                &mut c,
                "SELECT count(*) FROM (SELECT pg_catalog.uuidv7() AS a, public.uuidv7() AS b \
                   FROM generate_series(1, 1000)) s \
                 WHERE public.uuid_extract_timestamp(a) IS DISTINCT FROM pg_catalog.uuid_extract_timestamp(a) \
                    OR public.uuid_extract_timestamp(b) IS DISTINCT FROM pg_catalog.uuid_extract_timestamp(b) \
                    OR public.uuid_extract_version(b) IS DISTINCT FROM pg_catalog.uuid_extract_version(b)"
            ),
            0
        );
    }
}

/// 200,000 v7 keys, one a minute going back from now, in table `name`.
fn v7_table(c: &mut postgres::Client, name: &str, check: &str) {
    c.batch_execute(&format!(
        "CREATE TABLE {name} (id uuid PRIMARY KEY {check}, n int); \
         INSERT INTO {name} SELECT public.uuidv7_at(now() - i * interval '1 minute'), i \
         FROM generate_series(0, 199999) i; \
         ANALYZE {name}"
    ))
    .unwrap();
}

fn ns(c: &mut postgres::Client, sql: &str) -> Vec<i32> {
    let mut v: Vec<i32> = c
        .query(sql, &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    v.sort();
    v
}

#[test]
fn time_conditions_use_the_key_where_it_holds_only_v7() {
    let mut c = database_with_extension("").client;
    v7_table(&mut c, "e", "CHECK (public.uuid_extract_version(id) = 7)");
    let conditions = [
        "public.uuid_extract_timestamp(id) >= now() - interval '1 hour'",
        "now() - interval '1 hour' < public.uuid_extract_timestamp(id)",
        "public.uuid_extract_timestamp(id) BETWEEN now() - interval '3 hours' AND now() - interval '2 hours'",
        "public.uuid_extract_timestamp(id) <= now() - interval '138 days 20 hours'",
    ];
    let mut all: Vec<String> = conditions.iter().map(|s| s.to_string()).collect();
    if server_version(&mut c) >= 180000 {
        // There an unqualified call is the built-in one, which reads v7 times just as ours.
        all.extend(conditions.iter().map(|s| s.replace("public.", "")));
    }
    for condition in &all {
        let q = format!("SELECT n FROM e WHERE {condition}");
        let plan = explain(&mut c, &q);
        assert!(
            plan.contains(" on e_pkey") || plan.contains(" using e_pkey"),
            "{condition}:\n{plan}"
        );
        assert!(
            plan.contains("Index Cond: (") && plan.contains("uuidv7_"),
            "{condition}:\n{plan}"
        );
        let with_index = ns(&mut c, &q);
        c.batch_execute("SET enable_indexscan = off; SET enable_bitmapscan = off")
            .unwrap();
        assert_eq!(ns(&mut c, &q), with_index, "{condition}");
        c.batch_execute("RESET ALL").unwrap();
        assert!(
            !with_index.is_empty() && with_index.len() < 1000,
            "{condition}: {}",
            with_index.len()
        );
    }
}

#[test]
fn time_conditions_stay_correct_where_other_versions_may_be() {
    let mut c = database_with_extension("").client;
    v7_table(&mut c, "e", "");
    // A version-1 UUID of the current time: its bytes do not sort by its time.
    c.batch_execute(
        "INSERT INTO e SELECT ( \
           lpad(to_hex(t & 4294967295), 8, '0') || lpad(to_hex((t >> 32) & 65535), 4, '0') || \
           lpad(to_hex(((t >> 48) & 4095) | 4096), 4, '0') || '8000' || '000000000000')::uuid, -1 \
         FROM (SELECT ((extract(epoch FROM now())::int8 * 1000000 + 12219292800000000) * 10) AS t) s; \
         ANALYZE e",
    )
    .unwrap();
    let q = "SELECT n FROM e WHERE public.uuid_extract_timestamp(id) >= now() - interval '1 hour'";
    let plan = explain(&mut c, q);
    assert!(
        !plan.contains("uuidv7_lower_bound"),
        "no v7 bound without proof:\n{plan}"
    );
    assert!(ns(&mut c, q).contains(&-1), "the v1 row is found");
    if server_version(&mut c) >= 180000 {
        let builtin = q.replace("public.", "");
        assert!(!explain(&mut c, &builtin).contains("uuidv7_lower_bound"));
        assert!(
            ns(&mut c, &builtin).contains(&-1),
            "18's own finds the v1 row too"
        );
    }
    // Restricting the query to v7 allows the bounded scan again.
    let q7 = format!("{q} AND public.uuid_extract_version(id) = 7");
    let plan = explain(&mut c, &q7);
    assert!(
        (plan.contains(" on e_pkey") || plan.contains(" using e_pkey"))
            && plan.contains("uuidv7_lower_bound"),
        "{plan}"
    );
    let mut expected = ns(&mut c, q);
    expected.retain(|&n| n != -1);
    assert_eq!(ns(&mut c, &q7), expected);
}

/// Times after 2262 (where nanoseconds overflow 64 bits) up to the end of the v7 range: the
/// bounds and `uuidv7_from_time` once overflowed there (an internal error in debug builds, a
/// wrong bound in release builds), and a time condition with such a bound failed.
#[test]
fn bounds_and_first_values_after_2262() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(
            "SELECT public.uuidv7_lower_bound('4000-01-01 00:00:00+00')::text, \
                    public.uuidv7_from_time('4000-01-01 00:00:00+00')::text, \
                    public.uuidv7_upper_bound('4000-01-01 00:00:00.0005+00')::text, \
                    public.uuid_extract_timestamp(public.uuidv7_from_time('10000-01-01 00:00:00+00'))::text",
            &[],
        )
        .unwrap();
    assert_eq!(
        row.get::<_, String>(0),
        "3a4344a3-b800-7000-8000-000000000000"
    );
    assert_eq!(
        row.get::<_, String>(1),
        "3a4344a3-b800-7000-8000-000000000000"
    );
    assert_eq!(
        row.get::<_, String>(2),
        "3a4344a3-b800-ffff-ffff-ffffffffffff"
    );
    assert_eq!(row.get::<_, String>(3), "10000-01-01 00:00:00+00");
    c.batch_execute(
        "CREATE TABLE e (id uuid PRIMARY KEY CHECK (public.uuid_extract_version(id) = 7)); \
         INSERT INTO e VALUES (public.uuidv7_from_time('4000-01-01 00:00:00+00')), \
                              (public.uuidv7_from_time('2026-01-01 00:00:00+00'))",
    )
    .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM e WHERE public.uuid_extract_timestamp(id) >= '3000-01-01 00:00:00+00'"
        ),
        1
    );
}

/// Issue 37: PostgreSQL 19 has casts `uuid::bytea` and `bytea::uuid` and the `base32hex`
/// encoding. The extension adds no cast of uuid on any version (a cast is global, and one of an
/// extension's on 13-18 would make a pg_upgrade to 19 fail on the duplicate), so on 19 the casts
/// are the server's, work beside the extension's values, and unqualified `uuidv7()` and
/// `uuid_extract_timestamp()` reach the server's functions; before 19 there is no such cast.
#[test]
fn nineteens_uuid_casts_and_names_are_the_servers() {
    let mut c = database_with_extension("").client;
    let version = server_version(&mut c);
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM pg_cast k JOIN pg_depend d \
               ON d.classid = 'pg_cast'::regclass AND d.objid = k.oid AND d.deptype = 'e' \
             WHERE 'uuid'::regtype IN (k.castsource, k.casttarget)"
        ),
        0,
        "the extension owns no cast of uuid"
    );
    let casts = one_i64(
        &mut c,
        "SELECT count(*) FROM pg_cast WHERE (castsource, casttarget) IN \
           (('uuid'::regtype, 'bytea'::regtype), ('bytea'::regtype, 'uuid'::regtype))",
    );
    if version < 190000 {
        assert_eq!(casts, 0, "no uuid/bytea cast before 19");
        return;
    }
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM pg_cast k JOIN pg_proc p ON p.oid = k.castfunc \
             WHERE (k.castsource, k.casttarget) IN \
               (('uuid'::regtype, 'bytea'::regtype), ('bytea'::regtype, 'uuid'::regtype)) \
               AND p.pronamespace = 'pg_catalog'::regnamespace"
        ),
        2,
        "19's two casts, by its own functions"
    );
    // The extension's v7 values through 19's casts and back, and 19's base32hex form of them
    // sorting as the uuids do.
    assert!(one_bool(
        &mut c,
        "WITH v AS (SELECT public.uuidv7_at(now() - i * interval '1 ms') AS u \
                    FROM generate_series(1, 500) i) \
         SELECT bool_and(u::bytea::uuid = u AND length(u::bytea) = 16 \
                         AND u::bytea = decode(replace(u::text, '-', ''), 'hex')) \
            AND array_agg(u ORDER BY u) = \
                array_agg(u ORDER BY rtrim(encode(u::bytea, 'base32hex'), '=') COLLATE \"C\") \
         FROM v"
    ));
    expect_error(
        &mut c,
        "SELECT '\\x0102'::bytea::uuid",
        &SqlState::INVALID_BINARY_REPRESENTATION,
    );
    for f in [
        "uuidv7()",
        "uuid_extract_timestamp(uuid)",
        "uuid_extract_version(uuid)",
        "uuidv4()",
    ] {
        assert!(
            one_bool(
                &mut c,
                &format!(
                    "SELECT to_regprocedure('{f}') = to_regprocedure('pg_catalog.{f}') \
                       AND to_regprocedure('public.{f}') IS NOT NULL"
                )
            ),
            "unqualified {f} is 19's"
        );
    }
}
