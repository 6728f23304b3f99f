//! The planner's rewrite of time conditions (src/planner/): one regression test per problem it
//! once had, each named after what it guards, and the setting that turns it off. The broad
//! proof that it never changes a result is `differential.rs`.

use postgres::Client;

use crate::common::*;

/// Rows of `sql` as sorted text, with the rewrite on and off: they must be equal.
fn same_rows_on_and_off(c: &mut Client, sql: &str) -> Vec<String> {
    let run = |c: &mut Client| sorted_rows(c, sql).unwrap();
    c.batch_execute("SET pg_objectid.time_index_paths = on")
        .unwrap();
    let on = run(c);
    c.batch_execute("SET pg_objectid.time_index_paths = off")
        .unwrap();
    let off = run(c);
    c.batch_execute("RESET pg_objectid.time_index_paths")
        .unwrap();
    assert_eq!(on, off, "{sql}");
    on
}

/// A v7 table `u` of 2,000 rows one a minute back from now (n = 0…1999), plus one version-1 UUID
/// of the current time (n = -1), whose bytes do not sort by its time.
fn uuid_table_with_a_v1_row(c: &mut Client) {
    c.batch_execute(
        "CREATE TABLE u (id uuid PRIMARY KEY, n int); \
         INSERT INTO u SELECT public.uuidv7_at(now() - i * interval '1 min'), i \
           FROM generate_series(0, 1999) i; \
         INSERT INTO u SELECT ( \
           lpad(to_hex(t & 4294967295), 8, '0') || lpad(to_hex((t >> 32) & 65535), 4, '0') || \
           lpad(to_hex(((t >> 48) & 4095) | 4096), 4, '0') || '8000' || '000000000000')::uuid, -1 \
         FROM (SELECT ((extract(epoch FROM now())::int8 * 1000000 + 12219292800000000) * 10) AS t) s; \
         ANALYZE u",
    )
    .unwrap();
}

/// Issue 10, item 1: functions and operators are recognised by OID. A temporary function with
/// the name of ours and no arguments once crashed the server; a look-alike `uuid_extract_version`
/// or an operator named `=` that is not equality once convinced the planner that a column held
/// only v7 values, and the v1 row went missing.
#[test]
fn look_alike_functions_and_operators_are_not_taken_for_ours() {
    let mut c = database_with_extension("").client;
    uuid_table_with_a_v1_row(&mut c);
    c.batch_execute(
        "CREATE FUNCTION pg_temp.uuid_extract_version() RETURNS int LANGUAGE plpgsql STABLE \
           AS 'BEGIN RETURN 7; END'; \
         CREATE SCHEMA evil; \
         CREATE FUNCTION evil.uuid_extract_version(uuid) RETURNS int2 LANGUAGE sql IMMUTABLE \
           AS 'SELECT 7::int2'; \
         CREATE FUNCTION evil.always(int2, int4) RETURNS bool LANGUAGE sql IMMUTABLE \
           AS 'SELECT true'; \
         CREATE OPERATOR evil.= (LEFTARG = int2, RIGHTARG = int4, FUNCTION = evil.always); \
         CREATE FUNCTION evil.objectid_timestamp(objectid) RETURNS timestamptz LANGUAGE sql \
           IMMUTABLE AS 'SELECT ''2000-01-01''::timestamptz'; \
         CREATE FUNCTION evil.ts_lt(timestamptz, timestamptz) RETURNS bool LANGUAGE sql \
           IMMUTABLE AS 'SELECT $1 < $2'; \
         CREATE OPERATOR evil.>= (LEFTARG = timestamptz, RIGHTARG = timestamptz, \
           FUNCTION = evil.ts_lt); \
         CREATE TABLE ev (id objectid PRIMARY KEY, n int); \
         INSERT INTO ev SELECT gen_objectid_at(now() - i * interval '1 min'), i \
           FROM generate_series(0, 1999) i; \
         ANALYZE ev",
    )
    .unwrap();
    let time = "public.uuid_extract_timestamp(id) > now() - interval '1 hour'";
    for proof in [
        "pg_temp.uuid_extract_version() = 7",
        "evil.uuid_extract_version(id) = 7",
        "public.uuid_extract_version(id) OPERATOR(evil.=) 7",
    ] {
        let q = format!("SELECT n FROM u WHERE {proof} AND {time}");
        let plan = explain(&mut c, &q);
        assert!(!plan.contains("uuidv7_lower_bound"), "{proof}:\n{plan}");
        let rows = same_rows_on_and_off(&mut c, &q);
        assert!(
            rows.contains(&"-1".to_string()),
            "{proof}: the v1 row is found"
        );
    }
    // Conditions that only look like time conditions are left as written.
    for q in [
        "SELECT n FROM ev WHERE evil.objectid_timestamp(id) >= now() - interval '1 hour'",
        "SELECT n FROM ev WHERE objectid_timestamp(id) OPERATOR(evil.>=) now() - interval '1 hour'",
    ] {
        let plan = explain(&mut c, q);
        assert!(!plan.contains("objectid_first"), "{q}:\n{plan}");
        same_rows_on_and_off(&mut c, q);
    }
    // evil.>= is "earlier than": every row but the last hour's 60 or 61.
    let n = one_i64(
        &mut c,
        "SELECT count(*) FROM ev WHERE objectid_timestamp(id) OPERATOR(evil.>=) now() - interval '1 hour'",
    );
    assert!((1939..=1940).contains(&n), "{n}");
}

/// Issue 10, item 2: a partial index is used only where the query implies its predicate.
#[test]
fn partial_indexes_are_used_only_under_their_predicate() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE ev (id objectid, hot bool); \
         INSERT INTO ev SELECT gen_objectid_at(now() - i * interval '1 min'), i % 10 = 0 \
           FROM generate_series(0, 199999) i; \
         CREATE INDEX ON ev (id) WHERE hot; ANALYZE ev",
    )
    .unwrap();
    let all = "SELECT count(*) FROM ev WHERE objectid_timestamp(id) >= now() - interval '1 hour'";
    let n = same_rows_on_and_off(&mut c, all);
    assert!(n == ["60"] || n == ["61"], "{n:?}");
    let hot = format!("{all} AND hot");
    let n_hot = same_rows_on_and_off(&mut c, &hot);
    assert!(n_hot == ["6"] || n_hot == ["7"], "{n_hot:?}");
    assert!(
        explain(&mut c, &hot).contains("ev_id_idx"),
        "the partial index serves the hot rows"
    );
    c.batch_execute("SET enable_seqscan = off").unwrap();
    assert_eq!(same_rows_on_and_off(&mut c, all), n);
}

/// Issue 10, item 3: TABLESAMPLE is kept.
#[test]
fn tablesample_is_kept() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE ev (id objectid PRIMARY KEY, n int); \
         INSERT INTO ev SELECT gen_objectid_at(now() - i * interval '1 min'), i \
           FROM generate_series(0, 99999) i; ANALYZE ev",
    )
    .unwrap();
    let q = "SELECT count(*) FROM ev TABLESAMPLE SYSTEM (1) REPEATABLE (1) \
             WHERE objectid_timestamp(id) >= now() - interval '30 days'";
    let sampled: i64 = same_rows_on_and_off(&mut c, q)[0].parse().unwrap();
    assert!(
        sampled < 43_200 / 4,
        "{sampled} of 43,200 rows: the sample is applied"
    );
    let q = "SELECT count(*) FROM ev TABLESAMPLE BERNOULLI (5) REPEATABLE (7) \
             WHERE objectid_timestamp(id) < now() - interval '30 days'";
    same_rows_on_and_off(&mut c, q);
}

/// Issue 10, item 4: partitioned tables (their partitioned indexes have no cost estimator and
/// once crashed the server on 16+) get index scans on each partition, and range partitions on
/// the key are pruned by the time condition.
#[test]
fn partitioned_tables_scan_each_partition_by_its_index_and_prune() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE hv (id objectid PRIMARY KEY, n int) PARTITION BY HASH (id); \
         CREATE TABLE hv0 PARTITION OF hv FOR VALUES WITH (MODULUS 2, REMAINDER 0); \
         CREATE TABLE hv1 PARTITION OF hv FOR VALUES WITH (MODULUS 2, REMAINDER 1); \
         INSERT INTO hv SELECT gen_objectid_at(now() - i * interval '1 min'), i \
           FROM generate_series(0, 49999) i; ANALYZE hv; \
         CREATE TABLE rv (id objectid PRIMARY KEY, n int) PARTITION BY RANGE (id); \
         CREATE TABLE rv_old PARTITION OF rv \
           FOR VALUES FROM (MINVALUE) TO (objectid_from_time(now() - interval '10 days')); \
         CREATE TABLE rv_new PARTITION OF rv \
           FOR VALUES FROM (objectid_from_time(now() - interval '10 days')) TO (MAXVALUE); \
         INSERT INTO rv SELECT id, n FROM hv; ANALYZE rv",
    )
    .unwrap();
    let q = "SELECT n FROM hv WHERE objectid_timestamp(id) >= now() - interval '1 hour'";
    let plan = explain(&mut c, q);
    assert!(
        plan.contains("hv0_pkey") && plan.contains("hv1_pkey"),
        "{plan}"
    );
    let n = same_rows_on_and_off(&mut c, q).len();
    assert!((60..=61).contains(&n), "{n}");
    let q = "SELECT n FROM rv WHERE objectid_timestamp(id) >= now() - interval '1 hour'";
    let plan = explain(&mut c, q);
    assert!(
        plan.contains("rv_new_pkey")
            && !plan.contains("rv_old")
            && plan.contains("Subplans Removed: 1"),
        "pruned at executor start-up:\n{plan}"
    );
    let n = same_rows_on_and_off(&mut c, q).len();
    assert!((60..=61).contains(&n), "{n}");
    let old = one_string(&mut c, "SELECT (now() - interval '20 days')::text");
    let q = format!("SELECT count(*) FROM rv WHERE objectid_timestamp(id) < '{old}'");
    let plan = explain(&mut c, &q);
    assert!(!plan.contains("rv_new"), "pruned while planning:\n{plan}");
    same_rows_on_and_off(&mut c, &q);
}

/// Issue 19, item 2: tables partitioned by `objectid_timestamp(id)`, at any level, and children
/// whose CHECK constraints use it are pruned and excluded as with the rewrite off: pruning and
/// constraint exclusion match the condition as written, so it stays beside the rewritten one.
#[test]
fn partitions_and_children_by_the_time_function_are_pruned_and_excluded() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE pe (id objectid NOT NULL, k int) PARTITION BY RANGE (objectid_timestamp(id)); \
         CREATE TABLE pe_2020 PARTITION OF pe FOR VALUES FROM ('2020-01-01+00') TO ('2021-01-01+00'); \
         CREATE TABLE pe_2021 PARTITION OF pe FOR VALUES FROM ('2021-01-01+00') TO ('2022-01-01+00') \
           PARTITION BY RANGE (objectid_timestamp(id)); \
         CREATE TABLE pe_2021_h1 PARTITION OF pe_2021 FOR VALUES FROM ('2021-01-01+00') TO ('2021-07-01+00'); \
         CREATE TABLE pe_2021_h2 PARTITION OF pe_2021 FOR VALUES FROM ('2021-07-01+00') TO ('2022-01-01+00'); \
         CREATE TABLE pe_rest PARTITION OF pe DEFAULT; \
         CREATE INDEX ON pe (id); \
         INSERT INTO pe SELECT gen_objectid_at('2019-06-01+00'::timestamptz + i * interval '1 hour'), i \
           FROM generate_series(0, 40000) i; \
         CREATE TABLE ie (id objectid NOT NULL, k int); \
         CREATE TABLE ie_2020 (CHECK (objectid_timestamp(id) < '2021-01-01+00')) INHERITS (ie); \
         CREATE TABLE ie_2021 (CHECK (objectid_timestamp(id) >= '2021-01-01+00')) INHERITS (ie); \
         INSERT INTO ie_2020 SELECT id, k FROM pe WHERE objectid_timestamp(id) < '2021-01-01+00'; \
         INSERT INTO ie_2021 SELECT id, k FROM pe WHERE objectid_timestamp(id) >= '2021-01-01+00'; \
         CREATE INDEX ON ie_2020 (id); CREATE INDEX ON ie_2021 (id); \
         ANALYZE",
    )
    .unwrap();
    let march =
        "objectid_timestamp(id) >= '2021-03-01+00' AND objectid_timestamp(id) < '2021-04-01+00'";
    for (sql, scanned, not_scanned) in [
        (
            format!("SELECT count(*) FROM pe WHERE {march}"),
            "pe_2021_h1",
            &["pe_2020", "pe_2021_h2", "pe_rest"][..],
        ),
        (
            format!("SELECT count(*) FROM pe_2021 WHERE {march}"),
            "pe_2021_h1",
            &["pe_2021_h2"][..],
        ),
        (
            format!("SELECT count(*) FROM ie WHERE {march}"),
            "ie_2021",
            &["ie_2020"][..],
        ),
    ] {
        for setting in ["on", "off"] {
            c.batch_execute(&format!("SET pg_objectid.time_index_paths = {setting}"))
                .unwrap();
            let plan = explain(&mut c, &sql);
            assert!(plan.contains(scanned), "{setting}: {sql}\n{plan}");
            for other in not_scanned {
                assert!(
                    !plan.contains(other),
                    "{setting}: {sql} scans {other}\n{plan}"
                );
            }
        }
        c.batch_execute("RESET pg_objectid.time_index_paths")
            .unwrap();
        assert_eq!(same_rows_on_and_off(&mut c, &sql), ["744"], "{sql}");
    }
    // The tenth review: the function inside an inlined SQL function, which PostgreSQL simplifies
    // away before it prunes, excludes or matches an index, is found too.
    c.batch_execute(
        "CREATE FUNCTION ts(objectid) RETURNS timestamptz IMMUTABLE LANGUAGE sql \
           AS 'SELECT public.objectid_timestamp($1)'; \
         CREATE TABLE pw (id objectid NOT NULL, k int) PARTITION BY RANGE (ts(id)); \
         CREATE TABLE pw_2020 PARTITION OF pw FOR VALUES FROM ('2020-01-01+00') TO ('2021-01-01+00'); \
         CREATE TABLE pw_2021 PARTITION OF pw FOR VALUES FROM ('2021-01-01+00') TO ('2022-01-01+00'); \
         INSERT INTO pw SELECT id, k FROM pe WHERE objectid_timestamp(id) >= '2020-01-01+00' \
           AND objectid_timestamp(id) < '2022-01-01+00'; \
         CREATE TABLE iw (id objectid NOT NULL, k int); \
         CREATE TABLE iw_2020 (CHECK (ts(id) < '2021-01-01+00')) INHERITS (iw); \
         CREATE TABLE iw_2021 (CHECK (ts(id) >= '2021-01-01+00')) INHERITS (iw); \
         CREATE TABLE xw (id objectid NOT NULL, k int); \
         INSERT INTO xw SELECT id, k FROM pe; CREATE INDEX xw_ts ON xw (ts(id)); \
         ANALYZE",
    )
    .unwrap();
    for (sql, scanned, not_scanned) in [
        (
            format!("SELECT count(*) FROM pw WHERE {march}"),
            "pw_2021",
            "pw_2020",
        ),
        (
            format!("SELECT count(*) FROM iw WHERE {march}"),
            "iw_2021",
            "iw_2020",
        ),
        (
            "SELECT count(*) FROM xw WHERE ts(id) >= '2021-03-01+00' AND ts(id) < '2021-03-02+00'"
                .to_string(),
            "xw_ts",
            "Seq Scan",
        ),
    ] {
        for setting in ["on", "off"] {
            c.batch_execute(&format!(
                "SET pg_objectid.time_index_paths = {setting}; SET enable_seqscan = off"
            ))
            .unwrap();
            let plan = explain(&mut c, &sql);
            assert!(plan.contains(scanned), "{setting}: {sql}\n{plan}");
            assert!(!plan.contains(not_scanned), "{setting}: {sql}\n{plan}");
        }
        c.batch_execute("RESET pg_objectid.time_index_paths; RESET enable_seqscan")
            .unwrap();
        same_rows_on_and_off(&mut c, &sql);
    }
    // A partition queried by itself, with constraint exclusion on: its partition constraint
    // repeats its ancestors' keys, and excludes it.
    c.batch_execute("SET constraint_exclusion = on").unwrap();
    let plan = explain(
        &mut c,
        "SELECT count(*) FROM pe_2020 WHERE objectid_timestamp(id) >= '2021-03-01+00'",
    );
    // 19 names what a Result proved empty stands for: `Replaces: Scan on pe_2020`.
    assert!(
        !plan
            .lines()
            .any(|l| l.contains("pe_2020") && !l.trim_start().starts_with("Replaces:")),
        "{plan}"
    );
    // The rewrite still happens: the key's index serves the time range.
    let plan = explain(&mut c, &format!("SELECT k FROM pe WHERE {march}"));
    assert!(
        plan.contains("objectid_first_at_or_after") || plan.contains("id >="),
        "{plan}"
    );
}

/// Issue 10, item 7: without preloading, a session's very first query already gets the index,
/// for `uuid_extract_timestamp` on a v7-only column as for `objectid_timestamp`.
#[test]
fn a_sessions_first_query_uses_the_index_for_v7_uuids() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
    c.batch_execute(
        "CREATE TABLE u (id uuid PRIMARY KEY CHECK (public.uuid_extract_version(id) = 7), n int); \
         INSERT INTO u SELECT public.uuidv7_at(now() - i * interval '1 min'), i \
           FROM generate_series(0, 99999) i; ANALYZE u",
    )
    .unwrap();
    drop(c);
    let mut fresh = connect_to(&name);
    let preloaded = one_string(&mut fresh, "SHOW shared_preload_libraries");
    let plan = explain(
        &mut fresh,
        "SELECT n FROM u WHERE public.uuid_extract_timestamp(id) >= now() - interval '1 hour'",
    );
    assert!(plan.contains("u_pkey"), "preload: {preloaded:?}\n{plan}");
}

/// Issue 10, item 9: an index with another btree operator class over objectid (here one that
/// sorts backwards) gives the same rows; the rewritten condition uses the extension's own `>=`,
/// which such an index can only serve through its own operator family.
#[test]
fn indexes_of_other_operator_classes_give_the_same_rows() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE FUNCTION objectid_cmp_desc(objectid, objectid) RETURNS int LANGUAGE sql \
           IMMUTABLE STRICT AS 'SELECT -public.objectid_cmp($1, $2)'; \
         CREATE OPERATOR CLASS objectid_desc_ops FOR TYPE objectid USING btree AS \
           OPERATOR 1 >, OPERATOR 2 >=, OPERATOR 3 =, OPERATOR 4 <=, OPERATOR 5 <, \
           FUNCTION 1 objectid_cmp_desc(objectid, objectid); \
         CREATE TABLE ev (id objectid, n int); \
         INSERT INTO ev SELECT gen_objectid_at(now() - i * interval '1 min'), i \
           FROM generate_series(0, 49999) i; \
         CREATE INDEX ev_desc ON ev (id objectid_desc_ops); ANALYZE ev; \
         SET enable_seqscan = off",
    )
    .unwrap();
    for condition in [
        "objectid_timestamp(id) >= now() - interval '1 hour'",
        "objectid_timestamp(id) < now() - interval '34 days'",
        "objectid_timestamp(id) BETWEEN now() - interval '3 hours' AND now() - interval '2 hours'",
    ] {
        let rows = same_rows_on_and_off(&mut c, &format!("SELECT n FROM ev WHERE {condition}"));
        assert!(!rows.is_empty(), "{condition}");
    }
}

/// `pg_objectid.time_index_paths` is on by default, settable by any user per session, and off
/// leaves every condition as written.
#[test]
fn the_setting_turns_the_rewrite_off() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE ev (id objectid PRIMARY KEY, n int); \
         INSERT INTO ev SELECT gen_objectid_at(now() - i * interval '1 min'), i \
           FROM generate_series(0, 9999) i; ANALYZE ev; \
         DROP ROLE IF EXISTS plan_user; CREATE ROLE plan_user; \
         GRANT SELECT ON ev TO plan_user",
    )
    .unwrap();
    let q = "SELECT n FROM ev WHERE objectid_timestamp(id) >= now() - interval '1 hour'";
    assert!(explain(&mut c, q).contains("objectid_first_at_or_after("));
    c.batch_execute("SET ROLE plan_user; SET pg_objectid.time_index_paths = off")
        .unwrap();
    assert_eq!(
        one_string(&mut c, "SHOW pg_objectid.time_index_paths"),
        "off"
    );
    let plan = explain(&mut c, q);
    assert!(
        !plan.contains("objectid_first") && plan.contains("Seq Scan"),
        "{plan}"
    );
    c.batch_execute("RESET ROLE; RESET pg_objectid.time_index_paths")
        .unwrap();
    assert_eq!(
        one_string(&mut c, "SHOW pg_objectid.time_index_paths"),
        "on"
    );
}

/// A trusted extension's owner need not be a superuser, and can add functions of their own to
/// it (`ALTER EXTENSION … ADD`), such as the exact bounds that 0.1.0 lacks. Such functions must
/// never be put into other users' queries: once a way to make oneself superuser (a volatile
/// function run by the next superuser's query) and to crash the server (a function returning
/// int where an objectid was expected).
#[test]
fn functions_an_extension_owner_adds_are_not_taken_for_ours() {
    let Database {
        name: db,
        client: mut admin,
    } = empty_database("");
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS planter; CREATE ROLE planter LOGIN; \
             GRANT CREATE ON DATABASE {db} TO planter"
        ))
        .unwrap();
    let mut planter = postgres::Client::connect(
        &format!("{} dbname={db} user=planter", dsn()),
        postgres::NoTls,
    )
    .unwrap();
    planter
        .batch_execute(
            "CREATE SCHEMA m; \
             CREATE EXTENSION pg_objectid VERSION '0.1.0' SCHEMA m; \
             CREATE FUNCTION m.objectid_first_after(timestamptz) RETURNS m.objectid \
               LANGUAGE plpgsql VOLATILE AS $$ BEGIN \
                 IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN \
                   EXECUTE 'ALTER ROLE planter SUPERUSER'; END IF; \
                 RETURN m.objectid_lower_bound($1); END $$; \
             CREATE FUNCTION m.objectid_first_at_or_after(timestamptz) RETURNS int \
               LANGUAGE sql IMMUTABLE AS 'SELECT 12345'; \
             CREATE FUNCTION m.objectid_last_at_or_before(timestamptz) RETURNS int \
               LANGUAGE sql IMMUTABLE AS 'SELECT 12345'; \
             CREATE FUNCTION m.objectid_last_before(timestamptz) RETURNS m.objectid \
               LANGUAGE sql IMMUTABLE AS 'SELECT m.objectid_upper_bound_before($1)'; \
             ALTER EXTENSION pg_objectid ADD FUNCTION m.objectid_first_after(timestamptz); \
             ALTER EXTENSION pg_objectid ADD FUNCTION m.objectid_first_at_or_after(timestamptz); \
             ALTER EXTENSION pg_objectid ADD FUNCTION m.objectid_last_at_or_before(timestamptz); \
             ALTER EXTENSION pg_objectid ADD FUNCTION m.objectid_last_before(timestamptz); \
             GRANT USAGE ON SCHEMA m TO PUBLIC",
        )
        .unwrap();
    admin
        .batch_execute(
            "CREATE TABLE events (id m.objectid, n int); \
             INSERT INTO events SELECT m.gen_objectid_at(now() - i * interval '1 day'), i \
               FROM generate_series(0, 999) i; ANALYZE events",
        )
        .unwrap();
    for q in [
        "SELECT count(*) FROM events WHERE m.objectid_timestamp(id) > now() - interval '10 days'",
        "SELECT count(*) FROM events WHERE m.objectid_timestamp(id) >= now() - interval '10 days'",
        "SELECT count(*) FROM events WHERE m.objectid_timestamp(id) <= now() - interval '10 days'",
        "SELECT count(*) FROM events WHERE m.objectid_timestamp(id) = now() - interval '10 days'",
    ] {
        let plan = explain(&mut admin, q);
        assert!(
            !plan.contains("objectid_first") && !plan.contains("objectid_last"),
            "{q}:\n{plan}"
        );
        same_rows_on_and_off(&mut admin, q);
    }
    assert!(!is_superuser(&mut admin, "planter"));
    // Updated to the real version, the rewrite works again (the update script's CREATE
    // FUNCTION fails on the planted functions, so drop them first, as their owner).
    planter
        .batch_execute(
            "ALTER EXTENSION pg_objectid DROP FUNCTION m.objectid_first_after(timestamptz); \
             ALTER EXTENSION pg_objectid DROP FUNCTION m.objectid_first_at_or_after(timestamptz); \
             ALTER EXTENSION pg_objectid DROP FUNCTION m.objectid_last_at_or_before(timestamptz); \
             ALTER EXTENSION pg_objectid DROP FUNCTION m.objectid_last_before(timestamptz); \
             DROP FUNCTION m.objectid_first_after(timestamptz), \
               m.objectid_first_at_or_after(timestamptz), \
               m.objectid_last_at_or_before(timestamptz), m.objectid_last_before(timestamptz); \
             ALTER EXTENSION pg_objectid UPDATE",
        )
        .unwrap();
    let q =
        "SELECT count(*) FROM events WHERE m.objectid_timestamp(id) > now() - interval '10 days'";
    assert!(explain(&mut admin, q).contains("m.objectid_first_after("));
    assert_eq!(same_rows_on_and_off(&mut admin, q), vec!["10"]);
}

/// PostgreSQL does not enforce CHECK constraints on foreign tables, so a foreign table's (or a
/// foreign partition's) `uuid_extract_version(id) = 7` proves nothing: a v1 row once went
/// missing. Needs file_fdw (contrib), which the PostgreSQL 13 used here does not have.
#[test]
fn check_constraints_of_foreign_tables_prove_nothing() {
    let mut c = database_with_extension("").client;
    if one_i64(
        &mut c,
        "SELECT count(*) FROM pg_available_extensions WHERE name = 'file_fdw'",
    ) == 0
    {
        assert!(server_version(&mut c) < 140000, "file_fdw is missing");
        return;
    }
    let path = "/tmp/pg_objectid_test_foreign_uuids.csv";
    // A version-1 UUID of 2024-04-21 and a version-7 one of 2023-11-24.
    std::fs::write(
        path,
        "00000000-0000-11ef-8000-000000000000\n018c0000-0000-7000-8000-000000000000\n",
    )
    .unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    c.batch_execute(&format!(
        "CREATE EXTENSION file_fdw; CREATE SERVER files FOREIGN DATA WRAPPER file_fdw; \
         CREATE FOREIGN TABLE fu (id uuid CHECK (public.uuid_extract_version(id) = 7)) \
           SERVER files OPTIONS (filename '{path}'); \
         CREATE TABLE pu (id uuid CHECK (public.uuid_extract_version(id) = 7)) PARTITION BY RANGE (id); \
         CREATE TABLE pu_local PARTITION OF pu FOR VALUES FROM (MINVALUE) TO ('00000000-0000-0000-0000-000000000000'); \
         CREATE FOREIGN TABLE pu_files PARTITION OF pu \
           FOR VALUES FROM ('00000000-0000-0000-0000-000000000000') TO (MAXVALUE) \
           SERVER files OPTIONS (filename '{path}')"
    ))
    .unwrap();
    for table in ["fu", "pu"] {
        let q = format!(
            "SELECT id FROM {table} WHERE public.uuid_extract_timestamp(id) > '2001-01-01 00:00:00+00'"
        );
        assert_eq!(same_rows_on_and_off(&mut c, &q).len(), 2, "{table}");
    }
}

/// An administrator may revoke EXECUTE on a bound function; queries of other users must then
/// still run (the condition is left as written), not fail for lack of a privilege on a
/// function they never called.
#[test]
fn revoked_bound_functions_leave_the_condition_as_written() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE ev (id objectid PRIMARY KEY, n int); \
         INSERT INTO ev SELECT gen_objectid_at(now() - i * interval '1 min'), i \
           FROM generate_series(0, 999) i; ANALYZE ev; \
         REVOKE EXECUTE ON FUNCTION objectid_first_after(timestamptz) FROM PUBLIC; \
         DROP ROLE IF EXISTS plain_reader; CREATE ROLE plain_reader; \
         GRANT SELECT ON ev TO plain_reader; SET ROLE plain_reader",
    )
    .unwrap();
    let q = "SELECT count(*) FROM ev WHERE objectid_timestamp(id) > now() - interval '1 hour'";
    assert!(!explain(&mut c, q).contains("objectid_first_after"));
    let n = same_rows_on_and_off(&mut c, q);
    assert!(n == ["60"] || n == ["61"], "{n:?}");
    // The other bounds are still executable, and used.
    let q = "SELECT count(*) FROM ev WHERE objectid_timestamp(id) >= now() - interval '1 hour'";
    assert!(explain(&mut c, q).contains("objectid_first_at_or_after"));
    c.batch_execute("RESET ROLE").unwrap();
    // The ninth review: EXECUTE revoked on what the query itself calls (objectid_timestamp, or
    // the comparison's function) is refused with the rewrite on as with it off, although the
    // rewrite would drop the call.
    for revoked in [
        "objectid_timestamp(objectid)",
        "pg_catalog.timestamptz_ge(timestamptz, timestamptz)",
    ] {
        c.batch_execute(&format!(
            "REVOKE EXECUTE ON FUNCTION {revoked} FROM PUBLIC; SET ROLE plain_reader"
        ))
        .unwrap();
        for setting in ["on", "off"] {
            c.batch_execute(&format!("SET pg_objectid.time_index_paths = {setting}"))
                .unwrap();
            expect_error(
                &mut c,
                q,
                &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
            );
        }
        c.batch_execute(&format!(
            "RESET ROLE; RESET pg_objectid.time_index_paths; GRANT EXECUTE ON FUNCTION {revoked} TO PUBLIC"
        ))
        .unwrap();
    }
    // The tenth review: a generic plan the rewrite made while the comparison was executable is
    // made again after its REVOKE, built-in as it is (PostgreSQL records no dependency on
    // built-in functions by itself).
    for setting in ["on", "off"] {
        c.batch_execute(&format!(
            "SET pg_objectid.time_index_paths = {setting}; SET plan_cache_mode = force_generic_plan; \
             SET ROLE plain_reader; \
             PREPARE cached(timestamptz) AS SELECT count(*) FROM ev WHERE objectid_timestamp(id) >= $1"
        ))
        .unwrap();
        let n = one_i64(&mut c, "EXECUTE cached(now() - interval '1 hour')");
        assert!((60..=61).contains(&n), "{n}");
        c.batch_execute(
            "RESET ROLE; REVOKE EXECUTE ON FUNCTION pg_catalog.timestamptz_ge(timestamptz, timestamptz) FROM PUBLIC; \
             SET ROLE plain_reader",
        )
        .unwrap();
        expect_error(
            &mut c,
            "EXECUTE cached(now() - interval '1 hour')",
            &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
        );
        c.batch_execute(
            "RESET ROLE; GRANT EXECUTE ON FUNCTION pg_catalog.timestamptz_ge(timestamptz, timestamptz) TO PUBLIC; \
             DEALLOCATE cached; RESET plan_cache_mode; RESET pg_objectid.time_index_paths",
        )
        .unwrap();
    }
}

/// Issue 19, item 1: whether the current user may call the bound functions is known for the
/// role a plan is made for only. A generic plan cached under one role and run under another
/// (SET ROLE, a pooler, a SECURITY DEFINER function) must give that role the rows the query
/// gives it with the rewrite off, so such plans are made again for each role.
#[test]
fn a_plan_cached_under_one_role_gives_another_the_same_rows() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE o (id objectid PRIMARY KEY); \
         INSERT INTO o SELECT gen_objectid_at(now() - i * interval '1 hour') FROM generate_series(1, 1000) i; \
         DROP ROLE IF EXISTS cached_bob; CREATE ROLE cached_bob; GRANT SELECT ON o TO cached_bob; \
         REVOKE EXECUTE ON FUNCTION objectid_first_at_or_after(timestamptz) FROM PUBLIC; \
         SET plan_cache_mode = force_generic_plan; \
         PREPARE g(timestamptz) AS SELECT count(*) FROM o WHERE objectid_timestamp(id) >= $1",
    )
    .unwrap();
    let count = |c: &mut Client| one_i64(c, "EXECUTE g('2021-01-01')");
    for setting in ["on", "off"] {
        c.batch_execute(&format!(
            "RESET ROLE; SET pg_objectid.time_index_paths = {setting}"
        ))
        .unwrap();
        assert_eq!(count(&mut c), 1000, "as the superuser, rewrite {setting}");
        c.batch_execute("SET ROLE cached_bob").unwrap();
        assert_eq!(count(&mut c), 1000, "as cached_bob, rewrite {setting}");
        c.batch_execute("RESET ROLE").unwrap();
        assert_eq!(count(&mut c), 1000, "back as the superuser, {setting}");
    }
    // The same plan reached from inside a SECURITY DEFINER function owned by cached_bob, and the
    // superuser's plan still rewritten (the check is not simply skipped).
    c.batch_execute(
        "RESET pg_objectid.time_index_paths; \
         CREATE FUNCTION bobs_count(t timestamptz) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER \
           SET plan_cache_mode = force_generic_plan \
           AS $$ BEGIN RETURN (SELECT count(*) FROM public.o WHERE public.objectid_timestamp(id) >= t); END $$; \
         ALTER FUNCTION bobs_count(timestamptz) OWNER TO cached_bob",
    )
    .unwrap();
    for _ in 0..3 {
        assert_eq!(one_i64(&mut c, "SELECT bobs_count('2021-01-01')"), 1000);
        assert_eq!(count(&mut c), 1000);
    }
    let plan = explain(
        &mut c,
        "SELECT count(*) FROM o WHERE objectid_timestamp(id) >= now() - interval '1 day'",
    );
    assert!(plan.contains("objectid_first_at_or_after"), "{plan}");
}

/// An index on `objectid_timestamp(id)` of a child table or partition only (not of the parent)
/// keeps the condition as written, so that index is still used for a query on the parent.
#[test]
fn expression_indexes_of_children_stay_usable() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE ev (id objectid, n int); CREATE TABLE ev_child () INHERITS (ev); \
         INSERT INTO ev_child SELECT gen_objectid_at(now() - i * interval '1 min'), i \
           FROM generate_series(0, 9999) i; \
         CREATE INDEX ev_child_ts ON ev_child (objectid_timestamp(id)); ANALYZE ev, ev_child; \
         SET enable_seqscan = off",
    )
    .unwrap();
    let q = "SELECT n FROM ev WHERE objectid_timestamp(id) >= now() - interval '1 hour'";
    let plan = explain(&mut c, q);
    assert!(plan.contains("ev_child_ts"), "{plan}");
    same_rows_on_and_off(&mut c, q);
}

/// Issue 37: PostgreSQL 19 calls the hook the rewrite runs from (`build_simple_rel_hook`) for
/// every relation it builds, not only for tables as `get_relation_info_hook` was: a VALUES list,
/// a set-returning function, a CTE, a subquery kept as one, a table function, a trigger's
/// transition table (a named tuplestore) and the RTE_RESULT of a query without FROM (another
/// extension crashed on these). Each must plan and answer as with the rewrite off, on every
/// version, with the library loaded first, and a table beside them must still be rewritten.
#[test]
fn relations_that_are_not_tables_plan_as_before() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE ev (id objectid PRIMARY KEY, n int); \
         INSERT INTO ev SELECT gen_objectid_at(now() - i * interval '1 hour'), i \
           FROM generate_series(0, 999) i; \
         ANALYZE ev; \
         SELECT objectid_timestamp(gen_objectid())",
    )
    .unwrap();
    let day = "now() - interval '1 day'";
    let ids = "ARRAY[gen_objectid_at(now() - interval '3 days'), gen_objectid_at(now()), \
               '000000000000000000000000'::objectid]";
    let mut queries = vec![
        format!(
            "SELECT x FROM (VALUES ('000000000000000000000000'::objectid), \
               ('ffffffff0000000000000000'::objectid)) v(x) WHERE objectid_timestamp(x) >= {day}"
        ),
        format!("SELECT count(*) FROM unnest({ids}) x WHERE objectid_timestamp(x) >= {day}"),
        format!(
            "WITH c AS MATERIALIZED (SELECT id FROM ev) \
             SELECT count(*) FROM c WHERE objectid_timestamp(id) >= {day}"
        ),
        format!(
            "SELECT count(*) FROM (SELECT id FROM ev OFFSET 0) s WHERE objectid_timestamp(id) >= {day}"
        ),
        format!("SELECT 1 WHERE objectid_timestamp(gen_objectid()) >= {day}"),
        "SELECT 2 + 2".into(),
        format!(
            "SELECT count(*) FROM (VALUES (public.uuidv7()), ('00000000-0000-1000-8000-000000000000')) v(u) \
             WHERE public.uuid_extract_version(u) = 7 AND public.uuid_extract_timestamp(u) >= {day}"
        ),
        // A table joined to a function and a VALUES list: the table's condition is still
        // rewritten (checked below), the others' left alone.
        format!(
            "SELECT ev.n FROM ev JOIN unnest({ids}) x ON ev.id = x, (VALUES (1)) one(k) \
             WHERE objectid_timestamp(ev.id) >= {day} AND objectid_timestamp(x) >= {day} AND k = 1"
        ),
    ];
    if server_version(&mut c) >= 170000 {
        queries.push(format!(
            "SELECT count(*) FROM JSON_TABLE('[{{\"t\": 1}}, {{\"t\": 2}}]'::jsonb, '$[*]' \
               COLUMNS (t int PATH '$.t')) j, ev WHERE objectid_timestamp(ev.id) >= {day} AND j.t = 1"
        ));
    }
    for q in &queries {
        same_rows_on_and_off(&mut c, q);
    }
    let plan = explain(&mut c, &queries[queries.len() - 1]);
    assert!(
        plan.contains("objectid_first_at_or_after") || plan.contains("ev_pkey"),
        "{plan}"
    );

    // A named tuplestore: a statement trigger's transition table, read with a time condition.
    c.batch_execute(&format!(
        "CREATE TABLE seen (n bigint); \
         CREATE FUNCTION count_new() RETURNS trigger LANGUAGE plpgsql AS $$ \
           BEGIN INSERT INTO seen SELECT count(*) FROM new_rows \
             WHERE objectid_timestamp(id) >= {day}; RETURN NULL; END $$; \
         CREATE TRIGGER count_new AFTER INSERT ON ev REFERENCING NEW TABLE AS new_rows \
           FOR EACH STATEMENT EXECUTE FUNCTION count_new(); \
         INSERT INTO ev SELECT gen_objectid_at(now() - i * interval '1 hour'), 1000 + i \
           FROM generate_series(0, 47) i; \
         SET pg_objectid.time_index_paths = off; \
         INSERT INTO ev SELECT gen_objectid_at(now() - i * interval '1 hour'), 2000 + i \
           FROM generate_series(0, 47) i; \
         RESET pg_objectid.time_index_paths"
    ))
    .unwrap();
    assert_eq!(strings(&mut c, "SELECT n::text FROM seen"), ["24", "24"]);
    assert_log_clean("relations that are not tables");
}
