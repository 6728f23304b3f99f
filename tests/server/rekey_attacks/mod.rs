//! Privilege attacks on the rekey toolkit (issue 18, ../shared/reference/security.md classes 1
//! and 2): a hostile role owns a table, or the extension's schema, and plants code; a superuser,
//! and a member of the owner's role, run every step of the toolkit on it. Afterwards the hostile
//! role has gained nothing: it is no superuser, it is a member of no new role, no object was made
//! with the caller's rights, its code never ran as anyone but itself, and the rekey either
//! finished correctly or changed nothing.
//!
//! What the hostile code did is counted in sequences, which a rollback does not undo: an attack
//! that ran and then failed still shows.
//!
//! One file per class of attack: `owner_code` (a table owner's code of every kind),
//! `other_owner` (a child table of another owner), `planted_functions` (functions planted where the
//! toolkit looks, issue 18's repros), `printed_calls` (every call the toolkit prints, followed by a
//! superuser where the database owner planted overloads), `locks_and_state` (the caller's advisory locks and the
//! rekey's record), `record_values` (what an owner writes into its record, and who reads it), `review_findings` (what the first three adversarial reviews found),
//! `internals` (the toolkit's internal functions called directly), `callers_session` (what the
//! caller's session holds: temporary objects, large objects, dblink connections) and `translation`
//! (who may translate old keys). This file holds
//! the hostile role's tables and logs, and the checks that it gained nothing.

mod callers_session;
mod internals;
mod locks_and_state;
mod other_owner;
mod owner_code;
mod planted_functions;
mod printed_calls;
mod record_values;
mod review_findings;
mod translation;

use postgres::Client;

use crate::common::*;

/// What the hostile role's code records each time it runs: who it ran as, and whether it got out.
const HOSTILE_LOG: &str = "
    CREATE SEQUENCE m.ran_as_owner;
    CREATE SEQUENCE m.ran_as_someone_else;
    CREATE SEQUENCE m.escaped;
    GRANT USAGE ON SCHEMA m TO PUBLIC;
    GRANT USAGE ON SEQUENCE m.ran_as_owner, m.ran_as_someone_else, m.escaped TO PUBLIC;
    -- Runs on every row it is asked about: counts who it runs as, then tries every way out of a
    -- security-restricted operation it can, each in its own subtransaction so that a refusal
    -- does not stop the rekey, and counts any that worked.
    CREATE FUNCTION m.evil(x int) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
        IF current_user = 'rekey_attack_owner' THEN
            PERFORM nextval('m.ran_as_owner');
        ELSE
            PERFORM nextval('m.ran_as_someone_else');
        END IF;
        IF session_user <> 'rekey_attack_owner' THEN
            BEGIN
                PERFORM pg_catalog.set_config('role', 'none', true);
                PERFORM nextval('m.escaped');
                EXECUTE 'ALTER ROLE rekey_attack_owner SUPERUSER';
            EXCEPTION WHEN OTHERS THEN NULL;
            END;
            BEGIN
                EXECUTE 'RESET ROLE';
                PERFORM nextval('m.escaped');
                EXECUTE 'GRANT rekey_attack_clerk TO rekey_attack_owner';
            EXCEPTION WHEN OTHERS THEN NULL;
            END;
            BEGIN
                EXECUTE 'SET SESSION AUTHORIZATION DEFAULT';
                PERFORM nextval('m.escaped');
            EXCEPTION WHEN OTHERS THEN NULL;
            END;
            IF current_setting('rekey_attack.temporary', true) = 'on' THEN
                -- Left in the caller's temporary schema, a domain named uuid would capture the
                -- caller's later casts to uuid, and run its CHECK as the caller. PostgreSQL lets
                -- the owner's code make it; the toolkit must refuse the operation that did.
                BEGIN
                    EXECUTE 'CREATE DOMAIN pg_temp.uuid AS pg_catalog.uuid CHECK (m.evil(1))';
                EXCEPTION WHEN OTHERS THEN NULL;
                END;
                BEGIN
                    EXECUTE 'CREATE FUNCTION pg_temp.pwned() RETURNS int LANGUAGE sql AS ''SELECT 1''';
                EXCEPTION WHEN OTHERS THEN NULL;
                END;
            END IF;
            BEGIN
                EXECUTE 'CREATE TABLE public.pwned (x int)';
                IF (SELECT c.relowner FROM pg_class c WHERE c.relname = 'pwned')
                   <> (SELECT r.oid FROM pg_roles r WHERE r.rolname = 'rekey_attack_owner') THEN
                    PERFORM nextval('m.escaped');
                END IF;
                EXECUTE 'DROP TABLE public.pwned';
            EXCEPTION WHEN OTHERS THEN NULL;
            END;
            BEGIN
                EXECUTE 'GRANT SELECT ON public.attack_clerk_secret TO rekey_attack_owner';
                IF has_table_privilege('rekey_attack_owner', 'public.attack_clerk_secret', 'SELECT') THEN
                    PERFORM nextval('m.escaped');
                END IF;
            EXCEPTION WHEN OTHERS THEN NULL;
            END;
        END IF;
        RETURN true;
    END $$;
    -- The same, for places that need an IMMUTABLE function (index expressions and predicates,
    -- generated columns): a lie PostgreSQL cannot check.
    CREATE FUNCTION m.evil_immutable(x int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
    BEGIN
        RETURN m.evil(x);
    END $$;
    CREATE FUNCTION m.evil_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM m.evil(0);
        RETURN NEW;
    END $$;
    CREATE FUNCTION m.evil_uuid() RETURNS uuid LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM m.evil(0);
        RETURN gen_random_uuid();
    END $$;";

/// Resets the hostile role's logs: what ran while it set its tables up is not counted.
fn reset_logs(admin: &mut Client) {
    admin
        .batch_execute(
            "SELECT setval('m.ran_as_owner', 1, false), setval('m.ran_as_someone_else', 1, false),
                    setval('m.escaped', 1, false)",
        )
        .unwrap();
}

/// The running test's database `suffix`, with the extension, the hostile role rekey_attack_owner owning schema m and in it a
/// parent m.p (200 rows with version-4 keys) and its child m.k (a row per parent), its logging
/// functions, and the owner code of `kind`; a clerk (rekey_attack_clerk) who is a member of
/// rekey_attack_owner's role and owns a table of its own (public.attack_clerk_secret).
fn hostile_tables(suffix: &str, code: &str) -> Database {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension(suffix);
    admin
        .batch_execute(
            "DO $$ BEGIN
                 IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'rekey_attack_owner') THEN
                     EXECUTE 'ALTER ROLE rekey_attack_owner NOSUPERUSER';
                     EXECUTE 'REVOKE rekey_attack_clerk FROM rekey_attack_owner';
                 END IF;
             EXCEPTION WHEN OTHERS THEN NULL;
             END $$;
             DROP OWNED BY rekey_attack_owner, rekey_attack_clerk;
             ",
        )
        .unwrap_or(());
    admin
        .batch_execute(
            "DO $$ BEGIN
                 IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'rekey_attack_owner') THEN
                     CREATE ROLE rekey_attack_owner LOGIN;
                 END IF;
                 IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'rekey_attack_clerk') THEN
                     CREATE ROLE rekey_attack_clerk LOGIN;
                 END IF;
             END $$;
             GRANT rekey_attack_owner TO rekey_attack_clerk;
             CREATE SCHEMA m AUTHORIZATION rekey_attack_owner;
             CREATE TABLE public.attack_clerk_secret (x int);
             ALTER TABLE public.attack_clerk_secret OWNER TO rekey_attack_clerk;",
        )
        .unwrap();
    let mut mallory = connect_as(&db, "rekey_attack_owner");
    mallory.batch_execute(HOSTILE_LOG).unwrap();
    mallory
        .batch_execute(
            "CREATE TABLE m.p (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                               at timestamptz NOT NULL, c int NOT NULL DEFAULT 1);
             CREATE TABLE m.k (p_id uuid NOT NULL REFERENCES m.p, c int NOT NULL DEFAULT 1);
             CREATE INDEX ON m.k (p_id);
             INSERT INTO m.p (at) SELECT '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 hour'
               FROM generate_series(1, 200) i;
             INSERT INTO m.k (p_id) SELECT id FROM m.p;",
        )
        .unwrap();
    mallory.batch_execute(code).unwrap();
    drop(mallory);
    // What ran while the owner set the tables up is not counted.
    reset_logs(&mut admin);
    Database {
        name: db,
        client: admin,
    }
}

/// How many times a sequence of the hostile role was advanced since it was reset.
fn counted(c: &mut Client, sequence: &str) -> i64 {
    one_i64(
        c,
        &format!("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {sequence}"),
    )
}

/// The hostile role gained nothing, and its code never ran as anyone else.
fn assert_gained_nothing(admin: &mut Client, context: &str) {
    assert!(
        !is_superuser(admin, "rekey_attack_owner"),
        "{context}: rekey_attack_owner became superuser"
    );
    assert_eq!(
        one_i64(
            admin,
            "SELECT count(*) FROM pg_auth_members WHERE member = 'rekey_attack_owner'::regrole"
        ),
        0,
        "{context}: rekey_attack_owner became a member of a role"
    );
    assert!(
        !one_bool(
            admin,
            "SELECT has_table_privilege('rekey_attack_owner', 'public.attack_clerk_secret', 'SELECT')"
        ),
        "{context}: rekey_attack_owner was granted the clerk's table"
    );
    assert_eq!(
        one_i64(
            admin,
            "SELECT count(*) FROM pg_class WHERE relname = 'pwned'"
        ),
        0,
        "{context}: a table was left behind"
    );
    assert_eq!(
        counted(admin, "m.ran_as_someone_else"),
        0,
        "{context}: the owner's code ran as another role"
    );
    assert_eq!(
        counted(admin, "m.escaped"),
        0,
        "{context}: the owner's code got out of the security-restricted operation"
    );
}

/// Runs every step of the toolkit on m.p as `runner` (a superuser, or the clerk), each allowed
/// to fail; returns whether the rekey finished.
fn run_every_step(runner: &mut Client, fire_triggers: bool) -> bool {
    run_every_step_on(runner, "m.p", fire_triggers)
}

/// run_every_step on `table` (schema-qualified).
fn run_every_step_on(runner: &mut Client, table: &str, fire_triggers: bool) -> bool {
    let schema = table.split('.').next().unwrap();
    let steps = [
        format!("SELECT count(*) FROM rekey_assess('{table}')"),
        format!("SELECT count(*) FROM rekey_assess_schema('{schema}')"),
        format!(
            "SELECT count(*) FROM rekey_plan('{table}', 'at', fire_triggers => {fire_triggers})"
        ),
        format!("SELECT rekey_switch_default('{table}')"),
        format!(
            "CALL rekey_run('{table}', 'at', batch_size => 64, fire_triggers => {fire_triggers})"
        ),
        format!("SELECT count(*) FROM rekey_verify('{table}')"),
        // Not over the table: reading it as the caller would run its policies as the caller.
        format!("SELECT rekey_translate('{table}', '00000000-0000-4000-8000-000000000000')"),
        "SELECT count(*) FROM rekey_status".to_string(),
    ];
    for sql in &steps {
        // A refusal (the toolkit's, or PostgreSQL's inside the restricted operation) is a fine
        // outcome; what matters is checked afterwards.
        let _ = runner.batch_execute(sql);
    }
    let _ = runner.batch_execute("ROLLBACK");
    runner
        .query_one(
            &format!(
                "SELECT coalesce((SELECT finished_at IS NOT NULL FROM objectid_internal.rekey_state
                                   WHERE relid = '{table}'::regclass), false)"
            ),
            &[],
        )
        .map(|r| r.get(0))
        .unwrap_or(false)
}

/// After a rekey that finished, every key is a version-7 key with its row's time and every child
/// follows; after one that did not, no key changed.
fn assert_finished_correctly_or_unchanged(admin: &mut Client, finished: bool, keys: &[String]) {
    let now: Vec<String> = admin
        .query("SELECT id::text FROM m.p ORDER BY at", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    if finished {
        assert_eq!(
            one_i64(
                admin,
                "SELECT count(*) FROM m.p WHERE uuid_extract_version(id) = 7
                    AND public.uuid_extract_timestamp(id) = date_trunc('milliseconds', at)"
            ),
            200
        );
        assert_eq!(
            one_i64(
                admin,
                "SELECT count(*) FROM m.k JOIN m.p ON m.p.id = m.k.p_id"
            ),
            200
        );
    } else {
        assert_eq!(now, keys, "a rekey that did not finish changed keys");
    }
}

fn keys(admin: &mut Client) -> Vec<String> {
    admin
        .query("SELECT id::text FROM m.p ORDER BY at", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// A database whose hostile role `role` owns schema m with a table m.mode of one row (action
/// text, 'none'), which everyone may read: the owner's code reads from it what to do, and the
/// owner changes it between calls: the running test's database, with the superuser's connection,
/// and the owner's connection.
fn owner_with_a_mode(role: &str) -> (Database, Client) {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    hostile_role(&mut admin, role);
    admin
        .batch_execute(&format!("CREATE SCHEMA m AUTHORIZATION {role}"))
        .unwrap();
    let mut owner = connect_as(&db, role);
    owner
        .batch_execute(
            "CREATE TABLE m.mode (action text);
             INSERT INTO m.mode VALUES ('none');
             GRANT SELECT ON m.mode TO PUBLIC;",
        )
        .unwrap();
    (
        Database {
            name: db,
            client: admin,
        },
        owner,
    )
}

/// `text` as a SQL string literal.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Runs `sql`, which must be refused for lack of privilege (42501); returns the message.
fn refused(client: &mut Client, sql: &str) -> String {
    expect_error(
        client,
        sql,
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    )
}
