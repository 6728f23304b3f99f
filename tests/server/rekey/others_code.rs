//! Whose code runs: no one else's state, mapping table or functions stand in for the toolkit's,
//! and the tables' own code runs as their owner.

use std::thread;
use std::time::{Duration, Instant};

use postgres::error::SqlState;

use super::{assert_verified, create_shop, verify_statuses, EVERYTHING};
use crate::common::*;

/// The state and the mapping table cannot be supplied by anyone but the table's owner, and no
/// stored or given name is ever run as SQL: a mapping table made beforehand by another role, a
/// view, a table made for another table, or SQL in the mapping table's name are all refused.
#[test]
fn state_and_mapping_cannot_be_planted() {
    let mut c = database_with_extension("").client;
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

/// Nothing on the caller's search_path stands in for a built-in the toolkit uses: an aggregate
/// array_agg(uuid) and operators =(oid, regclass) and =(oid, integer) of another role, first on
/// the path of a superuser who plans, runs, watches, translates and verifies, are never called.
/// And nothing another role made runs either: a table that follows the key but belongs to
/// another role, a mapping table with a CHECK of its own, an advisory lock taken to fake a run,
/// a state row written by a role that bypasses row-level security, a batch run by a non-owner.
#[test]
fn no_one_elses_code_runs() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
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
        &format!("{} dbname={name} user=rekey_evil", dsn()),
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

/// With the attacker's schema before pg_catalog on a superuser's search_path, not even the
/// procedure's first expressions reach it; the tables' own code (a CHECK calling a function of
/// their owner) runs as their owner, not as the superuser who runs the rekey; and a run recorded
/// in the state shows as running and stops rekey_forget even while another role holds the lock.
#[test]
fn the_owner_runs_the_owners_code() {
    let Database {
        name,
        client: mut c,
    } = database_with_extension("");
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
        &format!("{} dbname={name} user=rekey_evil2", dsn()),
        postgres::NoTls,
    )
    .unwrap();
    evil.batch_execute(
        "SELECT pg_advisory_lock((1919249273::bigint << 32) | 'public.p'::regclass::oid::bigint)",
    )
    .unwrap();
    let mut runner = connect_to(&name);
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

/// The query that reads the session's temporary objects and cursors around every operation of a
/// table owner's code keeps its plan for the session: it still reads them right after the session
/// first gets a temporary schema, after `DISCARD ALL`, and on another search_path.
#[test]
fn the_session_state_read_survives_temporary_schemas_and_discard() {
    let mut c = database_with_extension("").client;
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
