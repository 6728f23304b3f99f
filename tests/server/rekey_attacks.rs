//! Privilege attacks on the rekey toolkit (issue 18, ../shared/reference/security.md classes 1
//! and 2): a hostile role owns a table, or the extension's schema, and plants code; a superuser,
//! and a member of the owner's role, run every step of the toolkit on it. Afterwards the hostile
//! role has gained nothing: it is no superuser, it is a member of no new role, no object was made
//! with the caller's rights, its code never ran as anyone but itself, and the rekey either
//! finished correctly or changed nothing.
//!
//! What the hostile code did is counted in sequences, which a rollback does not undo: an attack
//! that ran and then failed still shows.

use std::thread;
use std::time::{Duration, Instant};

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

/// Each kind of owner code a table of the set can carry, as the DDL its owner runs after making
/// the parent m.p (key id, time at, a column c) and its child m.k (p_id referencing it, c).
const OWNER_CODE: &[(&str, &str)] = &[
    (
        "check",
        "ALTER TABLE m.p ADD CHECK (m.evil(c)); ALTER TABLE m.k ADD CHECK (m.evil(c))",
    ),
    (
        "index_expression",
        "CREATE INDEX ON m.p ((m.evil_immutable(c))); CREATE INDEX ON m.k ((m.evil_immutable(c)))",
    ),
    (
        "partial_index",
        "CREATE INDEX ON m.p (c) WHERE m.evil_immutable(c); CREATE INDEX ON m.k (c) WHERE m.evil_immutable(c)",
    ),
    (
        "generated_column",
        // Of the key, so that the rewrite recomputes it (15 and later recompute only the
        // generated columns whose inputs change).
        "ALTER TABLE m.p ADD COLUMN g boolean GENERATED ALWAYS AS (m.evil_immutable(length(id::text))) STORED;
         ALTER TABLE m.k ADD COLUMN g boolean GENERATED ALWAYS AS (m.evil_immutable(length(p_id::text))) STORED",
    ),
    (
        "column_default",
        "ALTER TABLE m.p ADD COLUMN d uuid DEFAULT m.evil_uuid(); ALTER TABLE m.k ALTER COLUMN c SET DEFAULT 1",
    ),
    (
        "domain_check",
        "CREATE DOMAIN m.checked_int AS int CHECK (m.evil(VALUE));
         ALTER TABLE m.p ADD COLUMN dc m.checked_int DEFAULT 1; ALTER TABLE m.k ADD COLUMN dc m.checked_int DEFAULT 1",
    ),
    (
        "trigger",
        "CREATE TRIGGER evil BEFORE UPDATE ON m.p FOR EACH ROW EXECUTE FUNCTION m.evil_trigger();
         CREATE TRIGGER evil AFTER UPDATE ON m.k FOR EACH ROW EXECUTE FUNCTION m.evil_trigger();
         CREATE CONSTRAINT TRIGGER evil_deferred AFTER UPDATE ON m.k DEFERRABLE INITIALLY DEFERRED
             FOR EACH ROW EXECUTE FUNCTION m.evil_trigger()",
    ),
    (
        "policy",
        "ALTER TABLE m.p ENABLE ROW LEVEL SECURITY; CREATE POLICY evil ON m.p USING (m.evil(c));
         ALTER TABLE m.k ENABLE ROW LEVEL SECURITY; CREATE POLICY evil ON m.k USING (m.evil(c))",
    ),
    (
        "forced_policy",
        "ALTER TABLE m.p ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
         CREATE POLICY evil ON m.p USING (m.evil(c))",
    ),
    (
        // Operators and functions with the names the toolkit's statements use, for the column
        // types they use, in the owner's schema, which the caller puts first on the path.
        "operators_on_the_path",
        "CREATE FUNCTION m.uuid_eq(uuid, uuid) RETURNS boolean LANGUAGE plpgsql AS
             'BEGIN PERFORM m.evil(0); RETURN $1 OPERATOR(pg_catalog.=) $2; END';
         CREATE OPERATOR m.= (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = m.uuid_eq);
         CREATE FUNCTION m.uuid_gt(uuid, uuid) RETURNS boolean LANGUAGE plpgsql AS
             'BEGIN PERFORM m.evil(0); RETURN $1 OPERATOR(pg_catalog.>) $2; END';
         CREATE OPERATOR m.> (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = m.uuid_gt);
         CREATE FUNCTION m.ts_ge(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql AS
             'BEGIN PERFORM m.evil(0); RETURN $1 OPERATOR(pg_catalog.>=) $2; END';
         CREATE OPERATOR m.>= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = m.ts_ge);
         CREATE FUNCTION m.count(uuid) RETURNS bigint LANGUAGE plpgsql AS
             'BEGIN PERFORM m.evil(0); RETURN 1; END';
         CREATE FUNCTION m.array_agg(uuid) RETURNS uuid[] LANGUAGE plpgsql AS
             'BEGIN PERFORM m.evil(0); RETURN NULL; END';
         CREATE FUNCTION m.uuid_extract_version(uuid) RETURNS smallint LANGUAGE plpgsql AS
             'BEGIN PERFORM m.evil(0); RETURN 4; END';
         CREATE FUNCTION m.uuidv7_at(timestamptz) RETURNS uuid LANGUAGE plpgsql AS
             'BEGIN PERFORM m.evil(0); RETURN gen_random_uuid(); END'",
    ),
];

/// Resets the hostile role's logs: what ran while it set its tables up is not counted.
fn reset_logs(admin: &mut Client) {
    admin
        .batch_execute(
            "SELECT setval('m.ran_as_owner', 1, false), setval('m.ran_as_someone_else', 1, false),
                    setval('m.escaped', 1, false)",
        )
        .unwrap();
}

/// A database with the extension, the hostile role rekey_attack_owner owning schema m and in it a
/// parent m.p (200 rows with version-4 keys) and its child m.k (a row per parent), its logging
/// functions, and the owner code of `kind`; a clerk (rekey_attack_clerk) who is a member of
/// rekey_attack_owner's role and owns a table of its own (public.attack_clerk_secret).
fn hostile_tables(db: &str, code: &str) -> Client {
    let mut admin = fresh_db(db);
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
    let mut mallory = connect_as(db, "rekey_attack_owner");
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
    admin
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

/// For each kind of owner code: a superuser, then the clerk (a member of the owner's role), runs
/// every step of the toolkit; the hostile role gains nothing and the owner's code runs only as
/// the owner. Where it only tried to get out, the rekey finishes and is right; where it also left
/// objects in the caller's temporary schema, the rekey is refused and changes nothing, and
/// nothing is left there.
#[test]
fn owner_code_of_every_kind_runs_only_as_its_owner() {
    for (kind, code) in OWNER_CODE {
        for (runner, temporary) in [
            ("postgres", false),
            ("rekey_attack_clerk", false),
            ("postgres", true),
        ] {
            let db = format!("t_rekey_attack_{kind}");
            let mut admin = hostile_tables(&db, code);
            let before = keys(&mut admin);
            let mut c = connect_as(&db, runner);
            if *kind == "operators_on_the_path" {
                c.batch_execute("SET search_path = m, pg_catalog, public")
                    .unwrap();
            }
            if temporary {
                c.batch_execute("SET rekey_attack.temporary = on").unwrap();
            }
            let finished = run_every_step(&mut c, *kind == "trigger");
            let context = format!(
                "{kind}, run by {runner}{}",
                if temporary {
                    ", leaving temporary objects"
                } else {
                    ""
                }
            );
            assert_eq!(
                one_i64(
                    &mut c,
                    "SELECT count(*) FROM pg_depend WHERE refclassid = 'pg_namespace'::regclass
                        AND refobjid = pg_my_temp_schema()"
                ),
                0,
                "{context}: objects were left in the caller's temporary schema"
            );
            assert_eq!(
                one_string(
                    &mut c,
                    "SELECT pg_typeof('00000000-0000-0000-0000-000000000000'::uuid)::text"
                ),
                "uuid",
                "{context}"
            );
            drop(c);
            assert_gained_nothing(&mut admin, &context);
            assert_finished_correctly_or_unchanged(&mut admin, finished, &before);
            if temporary {
                // Whatever the owner's code ran for was refused; nothing else was.
                let ran = counted(&mut admin, "m.ran_as_owner") > 0;
                assert_eq!(finished, !ran, "{context}");
                continue;
            }
            // The kinds whose code a rekey must run did run, as the owner; those it must refuse
            // were refused.
            match *kind {
                "check" | "index_expression" | "partial_index" | "generated_column" | "trigger" => {
                    assert!(finished, "{context}: the rekey did not finish");
                    assert!(counted(&mut admin, "m.ran_as_owner") > 0, "{context}");
                }
                "forced_policy" => assert!(!finished, "{context}: a forced policy was not refused"),
                "column_default" | "domain_check" | "policy" | "operators_on_the_path" => {
                    assert!(finished, "{context}: the rekey did not finish");
                    assert_eq!(counted(&mut admin, "m.ran_as_owner"), 0, "{context}");
                }
                _ => unreachable!(),
            }
        }
    }
}

/// The SQLSTATE of a superuser's rekey_run where OTHER_OWNER_CODE's kind is refused by the
/// toolkit itself: code changed during the batch (42501, from the batch's comparison), an ON
/// UPDATE action between two owners (55000, from rekey_problems, before anything changes).
const OTHER_OWNER_REFUSALS: &[(&str, &str)] = &[
    ("trigger_made_during_the_batch", "42501"),
    ("rule_made_during_the_batch", "42501"),
    ("cascade_from_another_owner", "55000"),
];

/// Each kind of owner code on a child table of another owner (the hostile m.c, referencing the
/// victim's v.p twice, once ON UPDATE RESTRICT), as the DDL the hostile role runs on it; and what a
/// superuser's rekey of v.p must do: finish, or refuse before changing anything.
const OTHER_OWNER_CODE: &[(&str, &str, bool)] = &[
    ("none", "SELECT", true),
    ("check", "ALTER TABLE m.c ADD CHECK (m.evil(c))", true),
    ("index_expression", "CREATE INDEX ON m.c ((m.evil_immutable(c)))", true),
    ("partial_index", "CREATE INDEX ON m.c (c) WHERE m.evil_immutable(c)", true),
    (
        "generated_column",
        "ALTER TABLE m.c ADD COLUMN g boolean GENERATED ALWAYS AS (m.evil_immutable(length(p_id::text))) STORED",
        true,
    ),
    (
        "domain_check",
        "CREATE DOMAIN m.checked_int AS int CHECK (m.evil(VALUE)); ALTER TABLE m.c ADD COLUMN dc m.checked_int DEFAULT 1",
        true,
    ),
    (
        "before_trigger",
        "CREATE TRIGGER evil BEFORE UPDATE ON m.c FOR EACH ROW EXECUTE FUNCTION m.evil_trigger()",
        true,
    ),
    (
        // Fires once the key owner's statement has made the new keys, as its owner.
        "after_trigger",
        "CREATE TRIGGER evil AFTER UPDATE ON m.c FOR EACH ROW EXECUTE FUNCTION m.evil_trigger()",
        true,
    ),
    (
        // Review 7: a rule made while the batch runs: refused, as triggers are.
        "rule_made_during_the_batch",
        "CREATE FUNCTION m.late_rule() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             IF NOT EXISTS (SELECT FROM pg_rewrite WHERE rulename = 'late') THEN
                 EXECUTE 'CREATE RULE late AS ON UPDATE TO m.c DO ALSO SELECT m.evil(0)';
             END IF;
             RETURN NEW;
         END $$;
         CREATE TRIGGER early BEFORE UPDATE ON m.c FOR EACH ROW EXECUTE FUNCTION m.late_rule()",
        false,
    ),
    (
        // Review 5: a deferrable exclusion constraint whose expression conflicts while the batch
        // writes, so that its recheck is queued for the end of the batch (it must run as its
        // owner, and fails there: the conflict is real).
        "exclusion_recheck",
        "CREATE TABLE m.armed (x boolean);
         CREATE FUNCTION m.f(u uuid) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
         BEGIN
             PERFORM m.evil(0);
             IF EXISTS (SELECT FROM m.armed) THEN RETURN 1; END IF;
             RETURN hashtext(u::text);
         END $$;
         ALTER TABLE m.c ADD CONSTRAINT x EXCLUDE USING btree ((m.f(p_id)) WITH =) DEFERRABLE INITIALLY IMMEDIATE;
         INSERT INTO m.armed VALUES (true)",
        false,
    ),
    (
        // Review 5: a table outside the set, referencing a column that changes with the key, ON
        // UPDATE CASCADE, with an AFTER trigger that the cascade would fire: refused.
        "cascade_outside_the_set",
        "ALTER TABLE m.c ADD COLUMN g text GENERATED ALWAYS AS (p_id::text) STORED UNIQUE;
         CREATE TABLE m.h (g_ref text REFERENCES m.c (g) ON UPDATE CASCADE);
         INSERT INTO m.h SELECT g FROM m.c;
         CREATE TRIGGER evil AFTER UPDATE ON m.h FOR EACH ROW EXECUTE FUNCTION m.evil_trigger()",
        false,
    ),
    (
        // Breaks the foreign key: PostgreSQL's check of the other owner's rows must catch it.
        "trigger_breaking_the_key",
        "CREATE FUNCTION m.break_key() RETURNS trigger LANGUAGE plpgsql AS
             'BEGIN NEW.p_id := gen_random_uuid(); RETURN NEW; END';
         CREATE TRIGGER evil BEFORE UPDATE ON m.c FOR EACH ROW EXECUTE FUNCTION m.break_key()",
        false,
    ),
    (
        // Makes an AFTER trigger while the batch runs, which the next statement (of q_id) would
        // queue for the end of the batch.
        "trigger_made_during_the_batch",
        "CREATE FUNCTION m.late() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             IF NOT EXISTS (SELECT FROM pg_trigger WHERE tgname = 'late') THEN
                 EXECUTE 'CREATE TRIGGER late AFTER UPDATE ON m.c FOR EACH ROW EXECUTE FUNCTION m.evil_trigger()';
             END IF;
             RETURN NEW;
         END $$;
         CREATE TRIGGER early BEFORE UPDATE ON m.c FOR EACH ROW EXECUTE FUNCTION m.late()",
        false,
    ),
    (
        // Review 6: a foreign key the rekey follows, from the hostile role's table to the
        // victim's, ON UPDATE CASCADE; a BEFORE trigger keeping the old key leaves rows for the
        // cascade, whose AFTER trigger events would fire with the victim's statement: refused.
        "cascade_from_another_owner",
        "ALTER TABLE m.c DROP CONSTRAINT c_q_id_fkey, ADD FOREIGN KEY (q_id) REFERENCES v.p ON UPDATE CASCADE;
         CREATE FUNCTION m.keep_old() RETURNS trigger LANGUAGE plpgsql AS
             'BEGIN IF pg_trigger_depth() = 1 THEN RETURN OLD; END IF; RETURN NEW; END';
         CREATE TRIGGER keep BEFORE UPDATE ON m.c FOR EACH ROW EXECUTE FUNCTION m.keep_old();
         CREATE TRIGGER evil AFTER UPDATE ON m.c FOR EACH ROW EXECUTE FUNCTION m.evil_trigger()",
        false,
    ),
    (
        "policy",
        "ALTER TABLE m.c ENABLE ROW LEVEL SECURITY; CREATE POLICY evil ON m.c USING (m.evil(c))",
        true,
    ),
    (
        "forced_policy",
        "ALTER TABLE m.c ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY; CREATE POLICY evil ON m.c USING (m.evil(c))",
        false,
    ),
];

/// The victim's parent v.p (200 rows) with a child v.k of its own, and the hostile role's child
/// m.c with two foreign keys to v.p (p_id, NO ACTION; q_id, ON UPDATE RESTRICT, half of them
/// NULL), its logging functions, and `code`; the roles of hostile_tables, and the victim
/// rekey_attack_victim, who is no member of the hostile role's.
fn hostile_child(db: &str, code: &str) -> Client {
    let mut admin = hostile_tables(db, "SELECT");
    admin
        .batch_execute(
            "DO $$ BEGIN
                 IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'rekey_attack_victim') THEN
                     CREATE ROLE rekey_attack_victim LOGIN;
                 END IF;
             END $$;
             CREATE SCHEMA v AUTHORIZATION rekey_attack_victim;",
        )
        .unwrap();
    let mut victim = connect_as(db, "rekey_attack_victim");
    victim
        .batch_execute(
            "CREATE TABLE v.p (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL);
             CREATE TABLE v.k (p_id uuid NOT NULL REFERENCES v.p);
             CREATE INDEX ON v.k (p_id);
             INSERT INTO v.p (at) SELECT '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 hour'
               FROM generate_series(1, 200) i;
             INSERT INTO v.k SELECT id FROM v.p;
             GRANT USAGE ON SCHEMA v TO rekey_attack_owner;
             GRANT SELECT, REFERENCES ON v.p TO rekey_attack_owner;",
        )
        .unwrap();
    drop(victim);
    let mut mallory = connect_as(db, "rekey_attack_owner");
    mallory
        .batch_execute(
            "CREATE TABLE m.c (p_id uuid NOT NULL REFERENCES v.p, q_id uuid REFERENCES v.p ON UPDATE RESTRICT,
                               c int NOT NULL DEFAULT 1);
             CREATE INDEX ON m.c (p_id); CREATE INDEX ON m.c (q_id);
             INSERT INTO m.c (p_id, q_id) SELECT id, CASE WHEN at < '2024-01-05' THEN id END FROM v.p;",
        )
        .unwrap();
    mallory.batch_execute(code).unwrap();
    drop(mallory);
    reset_logs(&mut admin);
    admin
}

/// The rows of v.p and m.c, in one order: (key, the child's two columns) as text.
fn victim_rows(admin: &mut Client) -> Vec<String> {
    admin
        .query(
            "SELECT p.id::text || ' ' || coalesce(string_agg(c.p_id::text || '/' || coalesce(c.q_id::text, '-'), ','), '')
               FROM v.p p LEFT JOIN m.c c ON c.p_id = p.id GROUP BY p.id, p.at ORDER BY p.at",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// A child table of another owner follows the key: for each kind of owner code on it, the victim
/// (who may not act as the hostile role) and the clerk (who may act only as the hostile role) are
/// refused before anything changes; a superuser's rekey finishes with every row of both owners'
/// children following the key, or, where the other owner's code would run outside its owner's
/// restricted operation or breaks the foreign key, is refused or rolled back, changing nothing.
/// The hostile role gains nothing and its code never runs as anyone else.
#[test]
fn a_child_table_of_another_owner_runs_its_code_only_as_its_owner() {
    for (kind, code, finishes) in OTHER_OWNER_CODE {
        let db = format!("t_rekey_other_{kind}");
        let mut admin = hostile_child(&db, code);
        let before = victim_rows(&mut admin);
        for (runner, may) in [
            ("rekey_attack_victim", false),
            ("rekey_attack_clerk", false),
            ("postgres", true),
        ] {
            let context = format!("{kind} on another owner's child, run by {runner}");
            let mut c = connect_as(&db, runner);
            if let (true, Some((_, code))) =
                (may, OTHER_OWNER_REFUSALS.iter().find(|(k, _)| k == kind))
            {
                let e = c
                    .batch_execute(
                        "CALL rekey_run('v.p', 'at', batch_size => 64, fire_triggers => true)",
                    )
                    .expect_err(&format!("{context}: not refused"));
                let got = e.as_db_error().map(|d| d.code().code().to_string());
                assert_eq!(got.as_deref(), Some(*code), "{context}: {e}");
            }
            let finished = run_every_step_on(&mut c, "v.p", true);
            drop(c);
            assert_gained_nothing(&mut admin, &context);
            assert!(
                !is_superuser(&mut admin, "rekey_attack_victim"),
                "{context}"
            );
            if !(may && *finishes) {
                assert!(!finished, "{context}: the rekey finished");
                assert_eq!(victim_rows(&mut admin), before, "{context}: keys changed");
                continue;
            }
            assert!(finished, "{context}: the rekey did not finish");
            assert_eq!(
                one_i64(
                    &mut admin,
                    "SELECT count(*) FROM v.p WHERE uuid_extract_version(id) = 7
                        AND public.uuid_extract_timestamp(id) = date_trunc('milliseconds', at)"
                ),
                200,
                "{context}"
            );
            assert_eq!(
                one_i64(
                    &mut admin,
                    "SELECT (SELECT count(*) FROM v.k JOIN v.p ON p.id = k.p_id)
                          + (SELECT count(*) FROM m.c JOIN v.p ON p.id = c.p_id)
                          + (SELECT count(*) FROM m.c JOIN v.p ON p.id = c.q_id AND c.q_id = c.p_id)"
                ),
                200 + 200 + 95,
                "{context}: a child row lost its parent"
            );
            let failed: Vec<String> = admin
                .query(
                    "SELECT check_name || ': ' || detail FROM rekey_verify('v.p') WHERE status <> 'ok'",
                    &[],
                )
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            assert!(failed.is_empty(), "{context}: {failed:?}");
            if matches!(
                *kind,
                "check"
                    | "index_expression"
                    | "partial_index"
                    | "generated_column"
                    | "before_trigger"
                    | "after_trigger"
            ) {
                assert!(
                    counted(&mut admin, "m.ran_as_owner") > 0,
                    "{context}: the owner's code did not run"
                );
            }
        }
    }
}

/// Issue 18's first repro, verbatim: a CHECK constraint whose function resets the role and makes
/// its owner a superuser when a superuser's session runs it. The batch is refused inside the
/// restricted operation (42501), nothing changes, and the owner is no superuser.
#[test]
fn repro_1_a_check_constraint_resets_the_role() {
    let mut admin = fresh_db("t_rekey_repro_1");
    hostile_role(&mut admin, "rekey_repro_mallory");
    admin
        .batch_execute("CREATE SCHEMA m AUTHORIZATION rekey_repro_mallory")
        .unwrap();
    let mut mallory = connect_as("t_rekey_repro_1", "rekey_repro_mallory");
    mallory
        .batch_execute(
            "CREATE FUNCTION m.evil(int) RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = session_user)
                  AND NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = 'rekey_repro_mallory') THEN
                 PERFORM pg_catalog.set_config('role', 'none', true);
                 EXECUTE 'ALTER ROLE rekey_repro_mallory SUPERUSER';
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT public.uuidv4(), created_at timestamptz NOT NULL DEFAULT now(),
                               c int NOT NULL DEFAULT 1 CHECK (m.evil(c)));
             INSERT INTO m.t (created_at) SELECT now() - i * interval '1 hour' FROM generate_series(1, 50) i;",
        )
        .unwrap();
    let before = one_string(
        &mut admin,
        "SELECT string_agg(id::text, ',' ORDER BY id) FROM m.t",
    );
    admin
        .batch_execute("SELECT public.rekey_switch_default('m.t')")
        .unwrap();
    let message = expect_error(
        &mut admin,
        "CALL public.rekey_run('m.t', 'created_at')",
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(
        message.contains("security-restricted operation"),
        "{message}"
    );
    assert!(!is_superuser(&mut admin, "rekey_repro_mallory"));
    assert_eq!(
        one_string(
            &mut admin,
            "SELECT string_agg(id::text, ',' ORDER BY id) FROM m.t"
        ),
        before
    );
}

/// The functions the toolkit's documented functions call, and the documented functions
/// themselves, as exact-signature functions of the hostile role: `(schema-qualified name with
/// its argument list, return type, kind)`, from the catalog of a fresh install.
fn toolkit_signatures(c: &mut Client) -> Vec<(String, String, String, String)> {
    c.query(
        "SELECT p.proname::text, pg_get_function_identity_arguments(p.oid), coalesce(pg_get_function_result(p.oid), ''),
                p.prokind::text
           FROM pg_proc p
           JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
          WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid')
            AND (p.proname LIKE 'rekey%' OR p.pronamespace = 'objectid_internal'::regnamespace)
          ORDER BY 1, 2",
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
    .collect()
}

/// A planted function `schema.name(args)`: counts its call in a sequence (which a rollback does
/// not undo) and makes the database owner a superuser when it runs as one.
fn plant(schema: &str, name: &str, args: &str, result: &str, kind: &str) -> String {
    let body = "BEGIN
            PERFORM nextval('planted.calls');
            IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                EXECUTE 'ALTER ROLE rekey_dbo SUPERUSER';
            END IF;";
    if kind == "p" {
        return format!(
            "CREATE PROCEDURE {schema}.{name}({args}) LANGUAGE plpgsql AS $plant$ {body} END $plant$;"
        );
    }
    let finish = if result.starts_with("TABLE") || result.starts_with("SETOF") || result == "void" {
        "RETURN;"
    } else {
        "RETURN NULL;"
    };
    // Arguments of the internal functions' own types, and regclass where they take an OID: the
    // implicit cast a call through the path could take.
    format!(
        "CREATE FUNCTION {schema}.{name}({args}) RETURNS {result} LANGUAGE plpgsql AS $plant$ {body} {finish} END $plant$;"
    )
}

/// Issue 18's second repro and its variants: the database owner (who owns the extension's schema,
/// and a schema on the caller's path) plants a function of every name the toolkit uses, with the
/// exact signature and with regclass for oid, in both; later renames the extension's schema and
/// makes another of that name, full of them. A superuser then runs every step: none runs, and the
/// database owner is no superuser.
#[test]
fn repro_2_overloads_planted_where_the_toolkit_looks() {
    let mut admin = fresh_database("t_rekey_repro_2");
    hostile_role(&mut admin, "rekey_dbo");
    admin
        .batch_execute(
            "ALTER DATABASE t_rekey_repro_2 OWNER TO rekey_dbo;
             CREATE SCHEMA app AUTHORIZATION rekey_dbo;",
        )
        .unwrap();
    let mut dbo = connect_as("t_rekey_repro_2", "rekey_dbo");
    // A trusted install by the database owner, into a schema it owns.
    dbo.batch_execute(
        "CREATE EXTENSION pg_objectid SCHEMA app;
         CREATE SCHEMA planted; CREATE SEQUENCE planted.calls;
         GRANT USAGE ON SCHEMA planted TO PUBLIC; GRANT USAGE ON SEQUENCE planted.calls TO PUBLIC",
    )
    .unwrap();
    let signatures = toolkit_signatures(&mut dbo);
    assert!(signatures.len() > 30, "{signatures:?}");
    let mut planted = String::new();
    for (name, args, result, kind) in &signatures {
        let regclass_args = args.replace(" oid", " regclass");
        for schema in ["planted", "app"] {
            for a in [args.as_str(), regclass_args.as_str()] {
                // The documented functions themselves exist in app: plant them elsewhere only.
                planted.push_str(&unless_it_exists(&plant(schema, name, a, result, kind)));
            }
        }
    }
    dbo.batch_execute(&planted).unwrap();
    assert!(
        one_i64(
            &mut dbo,
            "SELECT count(*) FROM pg_proc WHERE pronamespace = 'planted'::regnamespace"
        ) > 30
    );

    admin
        .batch_execute(
            "SET search_path = planted, app, pg_catalog;
             CREATE TABLE public.accounts (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                                           created_at timestamptz NOT NULL DEFAULT now());
             CREATE TABLE public.payments (account_id uuid REFERENCES public.accounts, amount int);
             CREATE INDEX ON public.payments (account_id);
             INSERT INTO public.accounts (created_at)
                 SELECT '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 minute' FROM generate_series(1, 300) i;
             INSERT INTO public.payments SELECT id, 1 FROM public.accounts;",
        )
        .unwrap();
    let run = |admin: &mut Client, schema: &str, table: &str| {
        for sql in [
            format!("SELECT * FROM {schema}.rekey_assess('{table}'::regclass)"),
            format!("SELECT * FROM {schema}.rekey_assess_schema('public')"),
            format!("SELECT * FROM {schema}.rekey_references('{table}')"),
            format!("SELECT * FROM {schema}.rekey_plan('{table}', 'created_at')"),
            format!("SELECT {schema}.rekey_switch_default('{table}')"),
            format!("CALL {schema}.rekey_run('{table}', 'created_at', batch_size => 100)"),
            format!("SELECT * FROM {schema}.rekey_verify('{table}')"),
            format!("SELECT {schema}.rekey_translate('{table}', gen_random_uuid())"),
            format!("SELECT * FROM {schema}.rekey_status"),
        ] {
            admin
                .batch_execute(&sql)
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    };
    run(&mut admin, "app", "public.accounts");
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM public.accounts WHERE app.uuid_extract_version(id) = 7"
        ),
        300
    );

    // The database owner renames the extension's schema and makes another named like it, full
    // of the same functions (the documented ones too) and a rekey_state table of its own.
    dbo.batch_execute("ALTER SCHEMA app RENAME TO app_real; CREATE SCHEMA app;")
        .unwrap();
    let mut planted = String::from(
        "CREATE TABLE app.rekey_state (relid oid); CREATE TABLE app.rekey_status (x int);\n",
    );
    for (name, args, result, kind) in &signatures {
        planted.push_str(&unless_it_exists(&plant("app", name, args, result, kind)));
    }
    for f in [
        "uuidv7()",
        "uuid_extract_version(uuid)",
        "uuidv7_at(timestamptz)",
        "uuid_extract_timestamp(uuid)",
    ] {
        let (name, args) = f.split_once('(').unwrap();
        let args = args.trim_end_matches(')');
        let result = if name == "uuidv7" || name == "uuidv7_at" {
            "uuid"
        } else if name == "uuid_extract_version" {
            "smallint"
        } else {
            "timestamptz"
        };
        planted.push_str(&unless_it_exists(&plant("app", name, args, result, "f")));
    }
    dbo.batch_execute(&planted).unwrap();
    admin
        .batch_execute(
            "SET search_path = planted, app, pg_catalog;
             CREATE TABLE public.orders (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                                         placed_at timestamptz NOT NULL DEFAULT now());
             INSERT INTO public.orders (placed_at)
                 SELECT '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 minute' FROM generate_series(1, 300) i;",
        )
        .unwrap();
    // The superuser reaches the real functions by the schema's new name.
    let run2 = |admin: &mut Client| {
        for sql in [
            "SELECT * FROM app_real.rekey_assess('public.orders')",
            "SELECT * FROM app_real.rekey_plan('public.orders', 'placed_at')",
            "SELECT app_real.rekey_switch_default('public.orders')",
            "CALL app_real.rekey_run('public.orders', 'placed_at', batch_size => 100)",
            "SELECT * FROM app_real.rekey_verify('public.orders')",
            "SELECT app_real.rekey_translate('public.orders', gen_random_uuid())",
            "SELECT * FROM app_real.rekey_status",
        ] {
            admin
                .batch_execute(sql)
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    };
    run2(&mut admin);
    // The default it set calls the real uuidv7(), by the schema's name now.
    assert_eq!(
        one_string(
            &mut admin,
            "SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'public.orders'::regclass AND adnum = 1"
        ),
        "app_real.uuidv7()"
    );
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM public.orders WHERE app_real.uuid_extract_version(id) = 7"
        ),
        300
    );
    assert_eq!(
        counted(&mut admin, "planted.calls"),
        0,
        "a planted function ran"
    );
    assert!(!is_superuser(&mut admin, "rekey_dbo"));
    admin
        .batch_execute("RESET search_path; DROP EXTENSION pg_objectid CASCADE")
        .unwrap();
}

/// The statement, skipped where a function of that signature is there already (the documented
/// functions, in the extension's own schema).
fn unless_it_exists(statement: &str) -> String {
    format!(
        "DO $do$ BEGIN EXECUTE '{}'; EXCEPTION WHEN duplicate_function THEN NULL; END $do$;\n",
        statement.replace('\'', "''")
    )
}

/// docs/migration.md's advice for a superuser in a database whose owner it does not trust: the
/// documented functions called schema-qualified with arguments of their declared types reach the
/// toolkit, whatever the database owner planted in the extension's schema (`public`, which it owns
/// from PostgreSQL 15 on) for untyped literals to prefer; a planted overload with the same leading
/// argument types makes the call ambiguous, so that it fails instead of running anything.
#[test]
fn the_documented_calls_with_their_types_reach_the_toolkit() {
    let mut admin = fresh_database("t_rekey_typed_calls");
    hostile_role(&mut admin, "rekey_typed_dbo");
    admin
        .batch_execute("ALTER DATABASE t_rekey_typed_calls OWNER TO rekey_typed_dbo")
        .unwrap();
    let mut dbo = connect_as("t_rekey_typed_calls", "rekey_typed_dbo");
    dbo.batch_execute("CREATE EXTENSION pg_objectid; CREATE SCHEMA planted; CREATE SEQUENCE planted.calls;
                       GRANT USAGE ON SCHEMA planted TO PUBLIC; GRANT USAGE ON SEQUENCE planted.calls TO PUBLIC")
        .unwrap();
    let body = "BEGIN PERFORM nextval('planted.calls');
                  IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                    EXECUTE 'ALTER ROLE rekey_typed_dbo SUPERUSER';
                  END IF;";
    let plant = |dbo: &mut Client, sql: String| dbo.batch_execute(&sql).unwrap();
    plant(&mut dbo, format!("CREATE PROCEDURE public.rekey_run(tbl text, time_column text) LANGUAGE plpgsql AS $p$ {body} END $p$"));
    plant(&mut dbo, format!("CREATE FUNCTION public.rekey_verify(tbl text) RETURNS TABLE (check_name text, status text, detail text) LANGUAGE plpgsql AS $p$ {body} RETURN; END $p$"));
    plant(&mut dbo, format!("CREATE FUNCTION public.rekey_translate(tbl text, old_key text) RETURNS uuid LANGUAGE plpgsql AS $p$ {body} RETURN NULL; END $p$"));
    admin
        .batch_execute(
            "CREATE TABLE public.accounts (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                                           created_at timestamptz NOT NULL DEFAULT now());
             INSERT INTO public.accounts (created_at)
                 SELECT '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 minute' FROM generate_series(1, 50) i;
             CREATE TABLE public.old AS SELECT id FROM public.accounts LIMIT 1;
             SELECT public.rekey_switch_default('public.accounts'::regclass);",
        )
        .unwrap();
    // A CALL of its own: it commits.
    admin
        .batch_execute("CALL public.rekey_run('public.accounts'::regclass, 'created_at'::name)")
        .unwrap();
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM public.accounts WHERE public.uuid_extract_version(id) = 7"
        ),
        50
    );
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM public.rekey_verify('public.accounts'::regclass) WHERE status = 'ok'"
        ),
        one_i64(
            &mut admin,
            "SELECT count(*) FROM public.rekey_verify('public.accounts'::regclass)"
        )
    );
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM public.old o JOIN public.accounts a
                 ON a.id = public.rekey_translate('public.accounts'::regclass, o.id)"
        ),
        1
    );
    // The same leading types, fewer arguments: ambiguous, never run.
    plant(&mut dbo, format!("CREATE PROCEDURE public.rekey_run(tbl regclass, time_column name) LANGUAGE plpgsql AS $p$ {body} END $p$"));
    expect_error(
        &mut admin,
        "CALL public.rekey_run('public.accounts'::regclass, 'created_at'::name)",
        &postgres::error::SqlState::AMBIGUOUS_FUNCTION,
    );
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT coalesce(last_value, 0) * (is_called::int) FROM planted.calls"
        ),
        0
    );
    assert!(!is_superuser(&mut admin, "rekey_typed_dbo"));
}

/// A table's owner writes the record of its table's rekey (row-level security lets it): no value it
/// writes there breaks rekey_status for the other roles, even while it poses as running.
#[test]
fn a_forged_record_does_not_break_rekey_status() {
    let mut admin = fresh_db("t_rekey_forged_state");
    hostile_role(&mut admin, "rekey_forger");
    admin
        .batch_execute("CREATE SCHEMA m AUTHORIZATION rekey_forger")
        .unwrap();
    let mut owner = connect_as("t_rekey_forged_state", "rekey_forger");
    owner
        .batch_execute(
            "CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz DEFAULT now());
             INSERT INTO objectid_internal.rekey_state (relid, key_constraint, key_column, time_column, time_zone,
                 fallback_time, mapping_table, keys_total, keys_done, run_keys_done, started_at, run_started_at,
                 last_batch_at, snapshot)
             VALUES ('m.t'::regclass, (SELECT oid FROM pg_constraint WHERE conrelid = 'm.t'::regclass AND contype = 'p'),
                     'id', 'created_at', 'UTC', now(), 'm.t'::regclass, 9000000000000000000, -9000000000000000000, 1,
                     now() - interval '1000000 s', now() - interval '1000000 s', now(), '{}')",
        )
        .unwrap();
    let key = one_i64(
        &mut owner,
        "SELECT (1919249273::bigint << 32) | 'm.t'::regclass::oid::bigint",
    );
    // Holding the table's rekey lock and busy: what rekey_status calls running.
    let holder = thread::spawn(move || {
        owner
            .batch_execute(&format!("SELECT pg_advisory_lock({key}), pg_sleep(3)"))
            .unwrap();
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while one_i64(
        &mut admin,
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 'm.t'::regclass::oid AND granted",
    ) == 0
    {
        assert!(Instant::now() < deadline, "the lock was never taken");
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        one_string(
            &mut admin,
            "SELECT state || ' ' || coalesce(time_left::text, 'unknown') FROM rekey_status"
        ),
        "running unknown"
    );
    holder.join().unwrap();
}

/// The owner's code takes a session-level advisory lock, releases one the caller holds, then fails,
/// or releases every lock of the caller's session and returns: neither leaves the caller's locks
/// changed (src/rekey/as_owner.rs runs the code in a
/// subtransaction of its own and puts the session's advisory locks back before the error goes on).
#[test]
fn an_error_in_the_owners_code_leaves_the_callers_locks_as_they_were() {
    let mut admin = fresh_db("t_rekey_owner_error_locks");
    hostile_role(&mut admin, "rekey_error_owner");
    admin
        .batch_execute("CREATE SCHEMA m AUTHORIZATION rekey_error_owner")
        .unwrap();
    let mut owner = connect_as("t_rekey_owner_error_locks", "rekey_error_owner");
    owner
        .batch_execute(
            "CREATE FUNCTION m.grab_and_fail() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_error_owner' THEN
                 PERFORM pg_advisory_lock(4711);
                 PERFORM pg_advisory_unlock(7);
                 RAISE EXCEPTION 'the owner''s code fails';
               END IF;
               RETURN true;
             END $$;
             CREATE FUNCTION m.release_all() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_error_owner' THEN PERFORM pg_advisory_unlock_all(); END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.grab_and_fail()));
             INSERT INTO m.t (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.t ALTER COLUMN id SET DEFAULT public.uuidv7();
             CREATE TABLE m.u (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.release_all()));
             INSERT INTO m.u (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.u ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    let locks = "SELECT coalesce(string_agg(objid::text, ',' ORDER BY objid), '') FROM pg_locks
                  WHERE locktype = 'advisory' AND pid = pg_backend_pid()";
    admin.batch_execute("SELECT pg_advisory_lock(7)").unwrap();
    assert_eq!(one_string(&mut admin, locks), "7");
    for call in [
        "CALL rekey_run('m.t', 'at')",
        "CALL rekey_run('m.t', 'at', in_one_transaction => true)",
    ] {
        let message = expect_error(
            &mut admin,
            call,
            &postgres::error::SqlState::RAISE_EXCEPTION,
        );
        assert!(
            message.contains("the owner's code fails"),
            "{call}: {message}"
        );
        assert_eq!(one_string(&mut admin, locks), "7", "{call}");
    }
    // Released without an error: refused (42501), and the caller's lock is taken again.
    let message = expect_error(
        &mut admin,
        "CALL rekey_run('m.u', 'at')",
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(message.contains("advisory locks"), "{message}");
    assert_eq!(one_string(&mut admin, locks), "7");
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM m.t WHERE uuid_extract_version(id) = 4"
        ),
        5
    );
    assert!(!is_superuser(&mut admin, "rekey_error_owner"));
}

/// What the first adversarial review of 0.6.0 found, each now refused: a statistics object on a
/// mapping table (its expression is folded when rekey_translate plans its read, as the caller); a
/// domain named text on the caller's path (rekey_run, a procedure, compiles its variables' types
/// there); a session-level advisory lock taken by the owner's code (it outlives the operation and
/// would pose as a run of another table's rekey), or a cursor (its query runs as whoever fetches);
/// pgstattuple's pgstatindex called through the
/// toolkit without EXECUTE on it; and a schema whose name needs quoting.
#[test]
fn review_1_findings_stay_closed() {
    let mut admin = fresh_db("t_rekey_review_1");
    let version = server_version(&mut admin);
    hostile_role(&mut admin, "rekey_review_owner");
    hostile_role(&mut admin, "rekey_review_nobody");
    admin
        .batch_execute(
            "CREATE SCHEMA m AUTHORIZATION rekey_review_owner;
             CREATE TABLE public.orders (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
             INSERT INTO public.orders SELECT gen_random_uuid(), now() FROM generate_series(1, 20);",
        )
        .unwrap();
    let mut owner = connect_as("t_rekey_review_1", "rekey_review_owner");
    owner
        .batch_execute(
            "GRANT USAGE ON SCHEMA m TO PUBLIC;
             CREATE SEQUENCE m.ran_as_someone_else; GRANT USAGE ON SEQUENCE m.ran_as_someone_else TO PUBLIC;
             CREATE FUNCTION m.evil_v() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
             BEGIN
               IF current_user <> 'rekey_review_owner' THEN PERFORM nextval('m.ran_as_someone_else'); END IF;
               IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                 EXECUTE 'ALTER ROLE rekey_review_owner SUPERUSER';
               END IF;
               RETURN true;
             END $$;
             CREATE FUNCTION m.evil(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS
                 'BEGIN RETURN m.evil_v(); END';
             CREATE DOMAIN m.text AS pg_catalog.text CHECK (m.evil_v());
             CREATE DOMAIN m.float8 AS pg_catalog.float8 CHECK (m.evil_v());
             CREATE TABLE m.q (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz);
             CREATE TABLE m.q_fake (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE, batch bigint NOT NULL);
             DO $$ BEGIN
                 EXECUTE format('COMMENT ON TABLE m.q_fake IS %L', objectid_internal.rekey_mapping_comment('m.q'));
             END $$;
             CREATE FUNCTION m.grab() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_review_owner' THEN
                 PERFORM pg_advisory_lock((1919249273::bigint << 32) | 'public.orders'::regclass::oid::bigint);
               END IF;
               RETURN true;
             END $$;
             CREATE FUNCTION m.open_cursor() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_review_owner'
                  AND NOT EXISTS (SELECT FROM pg_cursors WHERE name = 'planted') THEN
                 EXECUTE 'DECLARE planted CURSOR FOR SELECT m.evil_v()';
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.p (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.grab()));
             CREATE TABLE m.r (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.open_cursor()));
             INSERT INTO m.r (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.r ALTER COLUMN id SET DEFAULT public.uuidv7();
             INSERT INTO m.p (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.p ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    if version >= 140000 {
        owner
            .batch_execute(
                "CREATE STATISTICS m.q_fake_stats ON ((old_key IS NULL) AND m.evil(1)) FROM m.q_fake",
            )
            .unwrap();
        // The owner's mapping table with a statistics object is refused, never read.
        let key = "5f838efb-8a34-430b-a07d-b3a7611f031a";
        let message = expect_error(
            &mut admin,
            &format!("SELECT rekey_translate('m.q', '{key}')"),
            &postgres::error::SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
        );
        assert!(message.contains("statistics object"), "{message}");
    }
    admin
        .batch_execute("SET search_path = m, pg_catalog, public")
        .unwrap();
    admin
        .batch_execute("CALL public.rekey_run('public.orders', 'at')")
        .unwrap();
    admin.batch_execute("RESET search_path").unwrap();
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM public.orders WHERE public.uuid_extract_version(id) = 7"
        ),
        20
    );
    let message = expect_error(
        &mut admin,
        "CALL rekey_run('m.p', 'at')",
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(message.contains("advisory locks"), "{message}");
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        ),
        0
    );
    // A cursor declared by the owner's code, which would run its query as whoever fetches from it.
    let message = expect_error(
        &mut admin,
        "CALL rekey_run('m.r', 'at', in_one_transaction => true)",
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(message.contains("cursors"), "{message}");
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM pg_cursors WHERE name = 'planted'"
        ),
        0
    );
    assert_eq!(counted(&mut admin, "m.ran_as_someone_else"), 0);
    assert!(!is_superuser(&mut admin, "rekey_review_owner"));

    // pgstattuple is not on PostgreSQL 13's server here (no contrib).
    if one_bool(
        &mut admin,
        "SELECT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'pgstattuple')",
    ) {
        admin.batch_execute("CREATE EXTENSION pgstattuple").unwrap();
        let mut nobody = connect_as("t_rekey_review_1", "rekey_review_nobody");
        refused(
            &mut nobody,
            "SELECT objectid_internal.rekey_leaf_density('public.orders_pkey'::regclass::oid)",
        );
    }

    // A schema whose name needs quoting.
    admin
        .batch_execute(
            "CREATE SCHEMA \"Sales\";
             CREATE TABLE \"Sales\".t (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz);
             INSERT INTO \"Sales\".t SELECT gen_random_uuid(), now() FROM generate_series(1, 3)",
        )
        .unwrap();
    admin
        .batch_execute("CALL rekey_run('\"Sales\".t', 'at')")
        .unwrap();
    assert_eq!(
        one_i64(&mut admin, "SELECT count(*) FROM \"Sales\".t_rekey_map"),
        3
    );
}

/// What the second adversarial review found, each now refused: an index expression added to a
/// mapping table between rekey_translate's checks and its read (the read now runs as the mapping
/// table's owner); a partition of another owner, whose statistics expression assess, plan and
/// verify would fold as the table's owner; a foreign key to a partition rather than its
/// partitioned table, whose ON DELETE action a row moving between partitions would fire; and a
/// materialized view whose query leaves an advisory lock and a temporary function behind when
/// rekey_run refreshes it. Also assess of a partitioned key table with pgstattuple installed.
#[test]
fn review_2_findings_stay_closed() {
    let mut admin = fresh_db("t_rekey_review_2");
    let version = server_version(&mut admin);
    hostile_role(&mut admin, "rekey_review2_owner");
    admin
        .batch_execute("CREATE SCHEMA h AUTHORIZATION rekey_review2_owner")
        .unwrap();
    let mut owner = connect_as("t_rekey_review_2", "rekey_review2_owner");
    owner
        .batch_execute(
            "GRANT USAGE ON SCHEMA h TO PUBLIC;
             CREATE SEQUENCE h.ran_as_someone_else; GRANT USAGE ON SEQUENCE h.ran_as_someone_else TO PUBLIC;
             CREATE FUNCTION h.evil_v() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
             BEGIN
               IF current_user <> 'rekey_review2_owner' THEN PERFORM nextval('h.ran_as_someone_else'); END IF;
               IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                 EXECUTE 'ALTER ROLE rekey_review2_owner SUPERUSER';
               END IF;
               RETURN true;
             END $$;
             CREATE FUNCTION h.evil_imm(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS
                 'BEGIN RETURN h.evil_v(); END';
             CREATE TABLE h.t (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
             INSERT INTO h.t SELECT gen_random_uuid(), now() FROM generate_series(1, 5);",
        )
        .unwrap();
    admin.batch_execute("CALL rekey_run('h.t', 'at')").unwrap();
    let old_key = one_string(
        &mut admin,
        "SELECT old_key::text FROM h.t_rekey_map ORDER BY 1 LIMIT 1",
    );

    // 1. The owner adds an index expression to the mapping table, inside a transaction that holds
    // the table while the superuser's rekey_translate runs.
    owner
        .batch_execute(
            "BEGIN; LOCK TABLE h.t_rekey_map IN ACCESS EXCLUSIVE MODE;
             CREATE INDEX trap ON h.t_rekey_map ((old_key IS NULL AND h.evil_imm(1)))",
        )
        .unwrap();
    let dsn = format!("{} dbname=t_rekey_review_2", dsn());
    let key = old_key.clone();
    let translating = std::thread::spawn(move || {
        let mut c = Client::connect(&dsn, postgres::NoTls).unwrap();
        c.query_one(
            &format!("SELECT rekey_translate('h.t', '{key}')::text"),
            &[],
        )
        .map(|r| r.get::<_, String>(0))
    });
    std::thread::sleep(std::time::Duration::from_millis(1500));
    owner.batch_execute("COMMIT").unwrap();
    // Either the translation (read as the owner) or a refusal; never the owner's code as the caller.
    let _ = translating.join().unwrap();
    assert_eq!(counted(&mut admin, "h.ran_as_someone_else"), 0);
    owner.batch_execute("DROP INDEX h.trap").unwrap();

    // 2. A partition of another owner under a superuser's partitioned table.
    admin
        .batch_execute(
            "CREATE TABLE public.sp (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now())
                 PARTITION BY HASH (id);
             CREATE TABLE public.sp0 PARTITION OF public.sp FOR VALUES WITH (MODULUS 2, REMAINDER 0);
             CREATE TABLE public.sp1 PARTITION OF public.sp FOR VALUES WITH (MODULUS 2, REMAINDER 1);
             INSERT INTO public.sp SELECT gen_random_uuid(), now() FROM generate_series(1, 20);
             ALTER TABLE public.sp1 OWNER TO rekey_review2_owner",
        )
        .unwrap();
    if version >= 140000 {
        owner
            .batch_execute(
                "CREATE STATISTICS h.trap ON ((id IS NULL AND h.evil_imm(1))) FROM public.sp1",
            )
            .unwrap();
    } else {
        owner
            .batch_execute("CREATE INDEX sp1_trap ON public.sp1 ((id IS NULL AND h.evil_imm(1)))")
            .unwrap();
    }
    for sql in [
        "SELECT * FROM rekey_plan('public.sp', 'at')",
        "SELECT * FROM rekey_assess('public.sp')",
        "SELECT * FROM rekey_assess_schema('public')",
        "CALL rekey_run('public.sp', 'at')",
    ] {
        let _ = admin.batch_execute(sql);
    }
    assert_eq!(counted(&mut admin, "h.ran_as_someone_else"), 0);
    // Counted without planning a read of public.sp as a superuser: PostgreSQL itself would fold
    // the statistics expression of its hostile partition as whoever plans the query.
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM ONLY public.sp0 WHERE public.uuid_extract_version(id) = 4"
        ) + one_i64(
            &mut owner,
            "SELECT count(*) FROM ONLY public.sp1 WHERE public.uuid_extract_version(id) = 4"
        ),
        20
    );

    // 3. A foreign key to a partition, not to its partitioned table.
    admin
        .batch_execute(
            "CREATE TABLE public.p (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now())
                 PARTITION BY HASH (id);
             CREATE TABLE public.p0 PARTITION OF public.p FOR VALUES WITH (MODULUS 2, REMAINDER 0);
             CREATE TABLE public.p1 PARTITION OF public.p FOR VALUES WITH (MODULUS 2, REMAINDER 1);
             INSERT INTO public.p SELECT gen_random_uuid(), now() - i * interval '1 min' FROM generate_series(1, 200) i;
             CREATE TABLE public.c_cascade (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                 p_id uuid REFERENCES public.p0 (id) ON DELETE CASCADE ON UPDATE CASCADE);
             CREATE INDEX ON public.c_cascade (p_id);
             INSERT INTO public.c_cascade (p_id) SELECT id FROM public.p0",
        )
        .unwrap();
    let children = one_i64(&mut admin, "SELECT count(*) FROM public.c_cascade");
    let plan = strings(&mut admin, "SELECT * FROM rekey_plan('public.p', 'at')");
    assert!(
        plan.iter()
            .any(|l| l.contains("references partition public.p0 of public.p")),
        "{plan:#?}"
    );
    let _ = admin.batch_execute("CALL rekey_run('public.p', 'at')");
    assert_eq!(
        one_i64(&mut admin, "SELECT count(*) FROM public.c_cascade"),
        children
    );

    // 4. A materialized view whose query leaves an advisory lock and a temporary function.
    owner
        .batch_execute(
            "CREATE FUNCTION h.plant(uuid) RETURNS uuid LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_review2_owner' THEN
                 PERFORM pg_advisory_lock(4242);
                 BEGIN
                   EXECUTE 'CREATE FUNCTION pg_temp.left_behind() RETURNS int LANGUAGE sql AS ''SELECT 1''';
                 EXCEPTION WHEN duplicate_function THEN NULL;
                 END;
               END IF;
               RETURN $1;
             END $$;
             CREATE TABLE h.t2 (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
             INSERT INTO h.t2 SELECT gen_random_uuid(), now() FROM generate_series(1, 5);
             CREATE MATERIALIZED VIEW h.mv AS SELECT h.plant(id) AS id FROM h.t2;",
        )
        .unwrap();
    let message = expect_error(
        &mut admin,
        "CALL rekey_run('h.t2', 'at', refresh_materialized_views => true)",
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(message.contains("materialized view h.mv"), "{message}");
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        ),
        0
    );
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM pg_proc WHERE proname = 'left_behind' AND pronamespace = pg_my_temp_schema()"
        ),
        0
    );
    assert!(!is_superuser(&mut admin, "rekey_review2_owner"));

    // rekey_translate_read reads as a table's owner, so never a table with row-level security,
    // whose policies would then not hide rows from its caller.
    hostile_role(&mut admin, "rekey_review2_reader");
    admin
        .batch_execute(
            "CREATE TABLE public.hidden (old_key uuid PRIMARY KEY, new_key uuid, batch bigint);
             INSERT INTO public.hidden VALUES ('5f838efb-8a34-430b-a07d-b3a7611f031a', gen_random_uuid(), 1);
             ALTER TABLE public.hidden ENABLE ROW LEVEL SECURITY;
             CREATE POLICY none ON public.hidden USING (false);
             GRANT SELECT ON public.hidden TO rekey_review2_reader",
        )
        .unwrap();
    let mut reader = connect_as("t_rekey_review_2", "rekey_review2_reader");
    expect_error(
        &mut reader,
        "SELECT objectid_internal.rekey_translate_read('public.hidden'::regclass::oid,
                                                      '5f838efb-8a34-430b-a07d-b3a7611f031a')",
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    );

    // 5. Assess of a partitioned key table, with pgstattuple where the server has it.
    if one_bool(
        &mut admin,
        "SELECT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'pgstattuple')",
    ) {
        admin.batch_execute("CREATE EXTENSION pgstattuple").unwrap();
    }
    let notes: Vec<String> = admin
        .query_one("SELECT notes FROM rekey_assess('public.p')", &[])
        .unwrap()
        .get(0);
    assert!(
        notes.iter().any(|n| n.contains("partitioned index")),
        "{notes:?}"
    );
}

/// What the third adversarial review found, each now refused: the owner's code reading, moving or
/// replacing a cursor the caller has open (no owner code runs while one is); on 16 and later, a
/// member granted the owner's role WITH INHERIT but not SET running code with the owner's
/// attributes; and a role that locks objectid_internal.rekey_state stopping rekey_translate.
#[test]
fn review_3_findings_stay_closed() {
    let mut admin = fresh_db("t_rekey_review_3");
    let version = server_version(&mut admin);
    hostile_role(&mut admin, "rekey_review3_owner");
    hostile_role(&mut admin, "rekey_review3_member");
    admin
        .batch_execute(
            "CREATE SCHEMA a AUTHORIZATION rekey_review3_owner;
             CREATE TABLE public.orders (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
             INSERT INTO public.orders SELECT gen_random_uuid(), now() FROM generate_series(1, 10);",
        )
        .unwrap();
    let mut owner = connect_as("t_rekey_review_3", "rekey_review3_owner");
    owner
        .batch_execute(
            "GRANT USAGE ON SCHEMA a TO PUBLIC;
             CREATE SEQUENCE a.swapped; GRANT USAGE ON SEQUENCE a.swapped TO PUBLIC;
             CREATE FUNCTION a.swap() RETURNS boolean LANGUAGE plpgsql AS $$
             DECLARE c refcursor; n text;
             BEGIN
               IF session_user <> 'rekey_review3_owner' THEN
                 FOR n IN SELECT name FROM pg_cursors WHERE name <> '' LOOP
                   c := n;
                   BEGIN
                     CLOSE c;
                     OPEN c FOR SELECT 'swapped'::text;
                     PERFORM nextval('a.swapped');
                   EXCEPTION WHEN OTHERS THEN NULL;
                   END;
                 END LOOP;
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE a.t (id uuid PRIMARY KEY, at timestamptz NOT NULL DEFAULT now());
             INSERT INTO a.t SELECT gen_random_uuid() FROM generate_series(1, 10);
             ALTER TABLE a.t ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
             CREATE POLICY p ON a.t USING (a.swap());",
        )
        .unwrap();
    admin
        .batch_execute("BEGIN; DECLARE mycur CURSOR FOR SELECT relname::text FROM pg_class LIMIT 1")
        .unwrap();
    let message = refused(&mut admin, "SELECT * FROM rekey_assess('a.t')");
    assert!(message.contains("cursor \"mycur\" is open"), "{message}");
    admin.batch_execute("ROLLBACK").unwrap();
    assert_eq!(counted(&mut admin, "a.swapped"), 0);

    if version >= 160000 {
        // The member may use the owner's privileges but not become it (no SET ROLE): no code runs
        // as the owner on its behalf.
        admin
            .batch_execute(
                "GRANT rekey_review3_owner TO rekey_review3_member WITH INHERIT TRUE, SET FALSE",
            )
            .unwrap();
        let mut member = connect_as("t_rekey_review_3", "rekey_review3_member");
        let message = expect_error(
            &mut member,
            "SELECT objectid_internal.rekey_read_as_owner('a.t'::regclass::oid, 'SELECT current_user AS cu')",
            &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
        );
        assert!(message.contains("permission denied"), "{message}");
    }

    // Anyone may lock rekey_state (it is everyone's to read and write, through its policies): the
    // application's translations go on, by the mapping table's comment.
    admin
        .batch_execute("CALL rekey_run('public.orders', 'at')")
        .unwrap();
    let (old_key, new_key): (String, String) = {
        let row = admin
            .query_one(
                "SELECT old_key::text, new_key::text FROM public.orders_rekey_map ORDER BY 1 LIMIT 1",
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    let mut locker = connect_as("t_rekey_review_3", "rekey_review3_member");
    locker
        .batch_execute("BEGIN; LOCK TABLE objectid_internal.rekey_state IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    assert_eq!(
        one_string(
            &mut admin,
            &format!("SELECT rekey_translate('public.orders', '{old_key}')::text")
        ),
        new_key
    );
    locker.batch_execute("ROLLBACK").unwrap();
}

/// Review 4 (the last before resolving issue 18): `rekey_read_as_owner` wrapped its query in
/// `SELECT to_jsonb(q.*) FROM (…) q`, but SPI runs every command of a text of several and shows
/// the last one's rows, which the function read as jsonb whatever their type: any role, on a
/// temporary table of its own, crashed the server. One command only now, its column's type
/// checked.
#[test]
fn review_4_a_read_of_several_commands_is_refused() {
    let mut admin = fresh_db("t_rekey_review_4");
    hostile_role(&mut admin, "rekey_review4_nobody");
    let mut nobody = connect_as("t_rekey_review_4", "rekey_review4_nobody");
    nobody
        .batch_execute("CREATE TEMP TABLE tt (x int)")
        .unwrap();
    for query in [
        "SELECT 1) q; SELECT 4242 --",
        "SELECT 1) q; SELECT 4242::bigint, 1 --",
        "SELECT 1) q; SELECT NULL::int --",
    ] {
        let sql = format!(
            "SELECT objectid_internal.rekey_read_as_owner('tt'::regclass, '{}')",
            query.replace('\'', "''")
        );
        let message = expect_error(&mut nobody, &sql, &postgres::error::SqlState::SYNTAX_ERROR);
        assert!(message.contains(query), "{message}");
    }
    // The session, and the server, are still there; a read of one command still works.
    assert_eq!(
        one_string(
            &mut nobody,
            "SELECT objectid_internal.rekey_read_as_owner('tt'::regclass, 'SELECT 1 AS a')::text"
        ),
        r#"{"a": 1}"#
    );
}

/// Review 4, the same for a batch's statements: rekey_batch_as_owner ran its window, map and
/// rewrite texts through SPI as they came, several commands and all, and read the last one's
/// column as whatever type it expected. Each is one command now, its columns' types checked.
#[test]
fn review_4_a_batch_statement_of_several_commands_or_another_type_is_refused() {
    let mut admin = fresh_db("t_rekey_review_4_batch");
    hostile_role(&mut admin, "rekey_review4_batch");
    let mut nobody = connect_as("t_rekey_review_4_batch", "rekey_review4_batch");
    nobody
        .batch_execute(
            "CREATE TEMP TABLE tt (id uuid PRIMARY KEY);
             INSERT INTO tt SELECT gen_random_uuid() FROM generate_series(1, 3)",
        )
        .unwrap();
    let call = |window: &str, map: &str, rewrite: &str| {
        format!(
            "SELECT * FROM objectid_internal.rekey_batch_as_owner('tt'::regclass::oid, {}, {}, {}, '{{}}', '{{}}',
                    '00000000-0000-0000-0000-000000000000', 10, now(), 1)",
            quote(window),
            quote(map),
            quote(rewrite)
        )
    };
    let window = "SELECT array_agg(id ORDER BY id) FROM tt";
    let map = "SELECT array_agg(id ORDER BY id), array_agg(id ORDER BY id) FROM tt";
    let rewrite = "SELECT ARRAY[3::bigint]";
    for (sql, state, quoted) in [
        (
            call("SELECT NULL::uuid[]; SELECT 4242", map, rewrite),
            postgres::error::SqlState::SYNTAX_ERROR,
            "SELECT 4242",
        ),
        (
            call(
                window,
                "SELECT NULL::uuid[], NULL::uuid[]; SELECT 4242, 1",
                rewrite,
            ),
            postgres::error::SqlState::SYNTAX_ERROR,
            "SELECT 4242, 1",
        ),
        (
            call(window, map, "SELECT NULL::bigint[]; SELECT 4242"),
            postgres::error::SqlState::SYNTAX_ERROR,
            "SELECT 4242",
        ),
        (
            call("SELECT 4242", map, rewrite),
            postgres::error::SqlState::DATATYPE_MISMATCH,
            "SELECT 4242",
        ),
        (
            call("COPY tt TO STDOUT", map, rewrite),
            postgres::error::SqlState::SYNTAX_ERROR,
            "not a utility command: \"COPY tt TO STDOUT\"",
        ),
        (
            call(window, "SELECT array_agg(id) INTO zz FROM tt", rewrite),
            postgres::error::SqlState::SYNTAX_ERROR,
            "not a utility command",
        ),
        (
            call(window, map, "DO $$BEGIN END$$"),
            postgres::error::SqlState::SYNTAX_ERROR,
            "not a utility command",
        ),
        (
            call(window, "SELECT ARRAY[1], ARRAY[2]", rewrite),
            postgres::error::SqlState::DATATYPE_MISMATCH,
            "SELECT ARRAY[1], ARRAY[2]",
        ),
        (
            call(window, map, "SELECT ARRAY[4242]"),
            postgres::error::SqlState::DATATYPE_MISMATCH,
            "SELECT ARRAY[4242]",
        ),
    ] {
        let message = expect_error(&mut nobody, &sql, &state);
        assert!(message.contains(quoted), "{sql}: {message}");
    }
    // One command of each, of the right types, still runs.
    assert_eq!(
        one_string(
            &mut nobody,
            &format!(
                "SELECT changed::text FROM ({}) b",
                call(window, map, rewrite)
            )
        ),
        "{3}"
    );
}

/// Review 4: the default mapping table's name cut the table's name to 53 characters, not bytes,
/// so that a long name of multibyte characters made one over 63 bytes, which PostgreSQL cut back
/// to the table's own name: rekey_plan showed the table itself as the mapping table, and rekey_run
/// refused it. Cut to whole characters of at most 53 bytes now.
#[test]
fn review_4_the_default_mapping_name_of_a_long_multibyte_name_fits() {
    let mut admin = fresh_db("t_rekey_review_4_name");
    let name = format!("{}x", "ü".repeat(31));
    assert_eq!(name.len(), 63);
    admin
        .batch_execute(&format!(
            "CREATE TABLE \"{name}\" (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now());
             INSERT INTO \"{name}\" SELECT gen_random_uuid(), now() - i * interval '1 hour' FROM generate_series(1, 20) i;"
        ))
        .unwrap();
    let mapping = one_string(
        &mut admin,
        &format!("SELECT objectid_internal.rekey_mapping_name('\"{name}\"'::regclass, NULL)"),
    );
    assert_eq!(mapping, format!("public.\"{}_rekey_map\"", "ü".repeat(26)));
    // One statement each: rekey_run commits, so no implicit transaction block around it.
    admin
        .batch_execute(&format!(
            "SELECT rekey_switch_default('\"{name}\"'::regclass)"
        ))
        .unwrap();
    admin
        .batch_execute(&format!(
            "CALL rekey_run('\"{name}\"'::regclass, 'at'::name)"
        ))
        .unwrap();
    assert_eq!(
        one_i64(
            &mut admin,
            &format!("SELECT count(*) FROM \"{name}\" WHERE uuid_extract_version(id) = 7")
        ),
        20
    );
    assert_eq!(
        one_i64(
            &mut admin,
            &format!(
                "SELECT count(*) FROM public.\"{}_rekey_map\"",
                "ü".repeat(26)
            )
        ),
        20
    );
}

/// The fourth review: the owner's code could change the caller's advisory locks in ways the set
/// of (key, mode) pairs pg_locks shows does not reveal: a second session-level hold of a lock the
/// caller holds (the caller's unlock would then leave it held), a session-level hold swapped for a
/// transaction-level one (gone at the transaction's end), a transaction-level hold added to one
/// the caller holds, and a session-level hold of the rekey's own lock (the table would show as
/// being rekeyed until the session ends). The holds are now counted: each is refused and undone.
/// A lock taken and released again inside leaves nothing, and is no reason to refuse.
#[test]
fn review_4_every_change_to_the_callers_advisory_locks_is_refused() {
    let db = "t_rekey_review_4_locks";
    let (mut admin, mut owner) = owner_with_a_mode(db, "rekey_lock_owner");
    owner
        .batch_execute(
            "CREATE FUNCTION m.act() RETURNS boolean LANGUAGE plpgsql AS $$
             DECLARE a text := (SELECT action FROM m.mode);
             BEGIN
               IF session_user = 'rekey_lock_owner' THEN RETURN true; END IF;
               IF a = 'again' THEN PERFORM pg_advisory_lock(7);
               ELSIF a = 'swap' THEN PERFORM pg_advisory_unlock(7); PERFORM pg_advisory_xact_lock(7);
               ELSIF a = 'xact' THEN PERFORM pg_advisory_xact_lock(7);
               ELSIF a = 'rekey lock' THEN
                 PERFORM pg_advisory_lock((1919249273::bigint << 32) | 'm.t'::regclass::oid::bigint);
               ELSIF a = 'balanced' THEN PERFORM pg_advisory_lock(8), pg_advisory_unlock(8);
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.act()));
             INSERT INTO m.t (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.t ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    // How many times the session holds lock 7 at session level (each unlock that succeeds is one),
    // then held once again; and every other advisory lock the session holds.
    let holds_of_7 = |admin: &mut Client| -> i64 {
        let n = one_i64(
            admin,
            "SELECT count(*) FROM (SELECT pg_advisory_unlock(7) AS u FROM generate_series(1, 5)) x WHERE u",
        );
        admin.batch_execute("SELECT pg_advisory_lock(7)").unwrap();
        n
    };
    let others = "SELECT coalesce(string_agg(objid::text || ' ' || mode, ',' ORDER BY objid), '') FROM pg_locks
                   WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objid <> 7";
    admin
        .batch_execute("SET client_min_messages = error; SELECT pg_advisory_lock(7)")
        .unwrap();
    for action in ["again", "swap", "xact", "rekey lock"] {
        owner
            .execute("UPDATE m.mode SET action = $1", &[&action])
            .unwrap();
        for call in [
            "CALL rekey_run('m.t', 'at')",
            "CALL rekey_run('m.t', 'at', in_one_transaction => true)",
        ] {
            let message = refused(&mut admin, call);
            assert!(
                message.contains("advisory locks"),
                "{action}, {call}: {message}"
            );
            assert_eq!(holds_of_7(&mut admin), 1, "{action}, {call}");
            assert_eq!(one_string(&mut admin, others), "", "{action}, {call}");
            assert_eq!(
                one_i64(
                    &mut admin,
                    "SELECT count(*) FROM m.t WHERE uuid_extract_version(id) = 4"
                ),
                5,
                "{action}, {call}"
            );
        }
    }
    // Another session can rekey the table: no lock of it was left behind.
    owner
        .batch_execute("UPDATE m.mode SET action = 'balanced'")
        .unwrap();
    let mut second = connect_to(db);
    second.batch_execute("CALL rekey_run('m.t', 'at')").unwrap();
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM m.t WHERE uuid_extract_version(id) = 7"
        ),
        5
    );
    assert_eq!(holds_of_7(&mut admin), 1);
    assert!(!is_superuser(&mut admin, "rekey_lock_owner"));
}

/// The fifth review: the owner's code could release the caller's advisory lock for a while, so
/// that another session took it (and then put the hold back, which left no change to refuse), or
/// release it and fail with an error rekey_run retries, after which the hold could not be taken
/// back and the run went on without an error. The caller's locks are now pinned while the owner's
/// code runs: another session waiting for the lock gets it only when the caller releases it.
#[test]
fn review_5_no_other_session_takes_the_callers_lock_while_the_owners_code_runs() {
    let db = "t_rekey_review_5_pin";
    let (mut admin, mut owner) = owner_with_a_mode(db, "rekey_pin_owner");
    owner
        .batch_execute(
            "CREATE SEQUENCE m.once; GRANT USAGE ON SEQUENCE m.once TO PUBLIC;
             CREATE FUNCTION m.act() RETURNS boolean LANGUAGE plpgsql AS $$
             DECLARE a text := (SELECT action FROM m.mode);
             BEGIN
               IF session_user = 'rekey_pin_owner' OR nextval('m.once') > 1 THEN RETURN true; END IF;
               IF a = 'pause' THEN
                 PERFORM pg_advisory_unlock(100), pg_advisory_unlock(100); PERFORM pg_sleep(0.5);
                 PERFORM pg_advisory_lock(100), pg_advisory_lock(100);
               ELSIF a = 'drop and fail' THEN
                 PERFORM pg_advisory_unlock_all(); PERFORM pg_sleep(0.5);
                 RAISE unique_violation USING MESSAGE = 'retry me';
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.t1 (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                                c int DEFAULT 1 CHECK (m.act()));
             INSERT INTO m.t1 (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.t1 ALTER COLUMN id SET DEFAULT public.uuidv7();
             CREATE TABLE m.t2 (LIKE m.t1 INCLUDING ALL);
             INSERT INTO m.t2 SELECT gen_random_uuid(), now(), 1 FROM generate_series(1, 5);",
        )
        .unwrap();
    admin
        .batch_execute("SET client_min_messages = error")
        .unwrap();
    for (action, table) in [("pause", "m.t1"), ("drop and fail", "m.t2")] {
        owner
            .execute("UPDATE m.mode SET action = $1", &[&action])
            .unwrap();
        owner
            .batch_execute("SELECT setval('m.once', 1, false)")
            .unwrap();
        admin
            .batch_execute("SELECT pg_advisory_lock(100), pg_advisory_lock(100)")
            .unwrap();
        // Another session waits for lock 100 and says when it got it.
        let mut waiter = connect_as(db, "rekey_pin_owner");
        let got = thread::spawn(move || {
            let at: f64 = waiter
                .query_one(
                    "SELECT extract(epoch FROM clock_timestamp())::float8 FROM (SELECT pg_advisory_lock(100)) l",
                    &[],
                )
                .unwrap()
                .get(0);
            waiter
                .batch_execute("SELECT pg_advisory_unlock(100)")
                .unwrap();
            at
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while one_i64(
            &mut admin,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 100 AND NOT granted",
        ) == 0
        {
            assert!(Instant::now() < deadline, "{action}: the other session never waited");
            thread::sleep(Duration::from_millis(20));
        }
        admin
            .batch_execute(&format!("CALL rekey_run('{table}', 'at')"))
            .unwrap_or_else(|e| panic!("{action}: {e:?}"));
        let done: f64 = admin
            .query_one("SELECT extract(epoch FROM clock_timestamp())::float8", &[])
            .unwrap()
            .get(0);
        // Still held twice: the first unlock leaves it held, the second releases it.
        let unlocks = one_i64(
            &mut admin,
            "SELECT count(*) FROM (SELECT pg_advisory_unlock(100) AS u FROM generate_series(1, 3)) x WHERE u",
        );
        let at = got.join().unwrap();
        assert_eq!(unlocks, 2, "{action}");
        assert!(
            at > done,
            "{action}: the other session took the caller's lock {:.3} s before the rekey ended",
            done - at
        );
        assert_eq!(
            one_i64(
                &mut admin,
                &format!("SELECT count(*) FROM {table} WHERE uuid_extract_version(id) = 7")
            ),
            5,
            "{action}"
        );
    }
    assert!(!is_superuser(&mut admin, "rekey_pin_owner"));
}

/// The seventh review (High): the check of the caller's temporary schema compared how many objects
/// it held, so the owner's code could drop one of the caller's temporary objects (a temporary view
/// over a function of the owner's goes with DROP FUNCTION ... CASCADE, which checks no privilege
/// on the view) and create a domain named uuid there, with a CHECK of its own: the count was the
/// same, the rekey committed, and the superuser's next uuid cast ran the owner's CHECK as
/// superuser. The objects themselves are compared now. Where the server refuses the domain
/// (15.20 refuses types in a temporary schema inside a security-restricted operation), the owner
/// swaps in a collation instead, so that every server sees a swap of one object for another.
#[test]
fn review_7_a_temporary_object_swapped_for_another_is_refused() {
    let db = "t_rekey_review_7_temp";
    let (mut admin, mut owner) = owner_with_a_mode(db, "rekey_swap_owner");
    owner
        .batch_execute(
            "GRANT USAGE ON SCHEMA m TO PUBLIC;
             CREATE FUNCTION m.aux() RETURNS int LANGUAGE sql AS 'SELECT 1';
             CREATE FUNCTION m.pwn(u uuid) RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                 EXECUTE 'ALTER ROLE rekey_swap_owner SUPERUSER';
               END IF;
               RETURN true;
             END $$;
             CREATE FUNCTION m.act() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_swap_owner' THEN
                 BEGIN
                   EXECUTE 'DROP FUNCTION m.aux() CASCADE';
                   BEGIN
                     EXECUTE 'CREATE DOMAIN pg_temp.uuid AS pg_catalog.uuid CHECK (m.pwn(VALUE))';
                   EXCEPTION WHEN insufficient_privilege THEN
                     -- Newer minor releases (15.20 has it) refuse types in a temporary schema
                     -- inside a security-restricted operation; any other object keeps the count.
                     EXECUTE 'CREATE COLLATION pg_temp.swapped FROM \"C\"';
                   END;
                 EXCEPTION WHEN OTHERS THEN NULL;
                 END;
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.act()));
             INSERT INTO m.t (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.t ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    for call in [
        "CALL rekey_run('m.t', 'at')",
        "CALL rekey_run('m.t', 'at', in_one_transaction => true)",
    ] {
        admin
            .batch_execute("CREATE TEMP VIEW tv AS SELECT m.aux() AS v")
            .unwrap();
        let message = refused(&mut admin, call);
        assert!(message.contains("temporary schema"), "{call}: {message}");
        // The caller's view is back, no uuid domain of the owner's is there, and a cast to uuid
        // runs nothing of the owner's.
        assert_eq!(one_i64(&mut admin, "SELECT v::bigint FROM tv"), 1, "{call}");
        assert_eq!(
            one_i64(
                &mut admin,
                "SELECT count(*) FROM pg_type WHERE typname = 'uuid' AND typnamespace = pg_my_temp_schema()"
            ),
            0,
            "{call}"
        );
        admin
            .batch_execute("SELECT '00000000-0000-4000-8000-000000000000'::uuid; DROP VIEW tv")
            .unwrap();
        assert_eq!(
            one_i64(
                &mut admin,
                "SELECT count(*) FROM m.t WHERE uuid_extract_version(id) = 4"
            ),
            5,
            "{call}"
        );
        assert!(!is_superuser(&mut admin, "rekey_swap_owner"), "{call}");
    }
}

/// The eighth review (High): a large-object descriptor serves whoever holds it, with no check of
/// rights after lo_open, until the transaction ends. With one of the caller's open, the owner's
/// code read and overwrote the caller's large object through it; opening one of its own under the
/// caller's next descriptor number, it had the caller write there. The toolkit refuses to run the
/// owner's code while the transaction has opened a large object, and refuses code that opens one.
#[test]
fn review_8_large_objects_of_the_callers_transaction_are_out_of_reach() {
    let db = "t_rekey_review_8_lo";
    let (mut admin, mut owner) = owner_with_a_mode(db, "rekey_lo_owner");
    owner
        .batch_execute(
            "CREATE SEQUENCE m.seen;
             CREATE FUNCTION m.act() RETURNS boolean LANGUAGE plpgsql AS $$
             DECLARE b bytea;
             BEGIN
               IF session_user <> 'rekey_lo_owner' THEN
                 IF (SELECT action FROM m.mode) = 'open' THEN
                   PERFORM pg_catalog.lo_open(777802, x'60000'::int);
                 END IF;
                 FOR i IN 0..3 LOOP
                   BEGIN
                     b := pg_catalog.loread(i, 100);
                     PERFORM pg_catalog.nextval('m.seen');
                     PERFORM pg_catalog.lo_lseek(i, 0, 0);
                     PERFORM pg_catalog.lowrite(i, 'PWNED'::bytea);
                   EXCEPTION WHEN OTHERS THEN NULL;
                   END;
                 END LOOP;
               END IF;
               RETURN true;
             END $$;
             SELECT pg_catalog.lo_from_bytea(777802, 'the owner''s');
             GRANT SELECT, UPDATE ON LARGE OBJECT 777802 TO PUBLIC;
             CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.act()));
             INSERT INTO m.t (at) SELECT now() - i * interval '1 hour' FROM generate_series(1, 5) i;
             ALTER TABLE m.t ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    admin
        .batch_execute(
            "SELECT lo_from_bytea(777801, 'superuser secret');
             REVOKE ALL ON LARGE OBJECT 777801 FROM PUBLIC;",
        )
        .unwrap();
    let secret =
        |admin: &mut Client| one_string(admin, "SELECT convert_from(lo_get(777801), 'UTF8')");
    // The caller's descriptor open: refused before any of the owner's code runs, for a rekey in
    // one transaction and for a read (the counts run the owner's index expressions).
    for call in [
        "CALL rekey_run('m.t', 'at', in_one_transaction => true)",
        "SELECT count(*) FROM rekey_assess('m.t')",
    ] {
        admin
            .batch_execute("BEGIN; SELECT lo_open(777801, x'60000'::int)")
            .unwrap();
        let message = refused(&mut admin, call);
        assert!(message.contains("large object"), "{call}: {message}");
        admin.batch_execute("ROLLBACK").unwrap();
        assert_eq!(secret(&mut admin), "superuser secret", "{call}");
        assert_eq!(
            one_bool(&mut admin, "SELECT is_called FROM m.seen"),
            false,
            "{call}: the owner's code read a descriptor"
        );
    }
    // The owner's code opening a large object of its own is refused, in both run modes, and
    // nothing it opened is left for the caller.
    owner
        .batch_execute("UPDATE m.mode SET action = 'open'")
        .unwrap();
    for call in [
        "CALL rekey_run('m.t', 'at')",
        "CALL rekey_run('m.t', 'at', in_one_transaction => true)",
    ] {
        let message = refused(&mut admin, call);
        assert!(message.contains("large objects"), "{call}: {message}");
        let _ = admin.batch_execute("SELECT rekey_forget('m.t')");
    }
    assert_eq!(
        one_string(&mut admin, "SELECT convert_from(lo_get(777802), 'UTF8')"),
        "the owner's"
    );
    // Without large objects, the same table is rekeyed.
    owner
        .batch_execute("UPDATE m.mode SET action = 'none'")
        .unwrap();
    admin.batch_execute("CALL rekey_run('m.t', 'at')").unwrap();
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM m.t WHERE uuid_extract_version(id) = 7"
        ),
        5
    );
    admin
        .batch_execute("BEGIN; SELECT lo_open(777801, x'60000'::int)")
        .unwrap();
    let message = refused(&mut admin, "SELECT count(*) FROM rekey_verify('m.t')");
    assert!(message.contains("large object"), "{message}");
    admin.batch_execute("ROLLBACK").unwrap();
    assert_eq!(secret(&mut admin), "superuser secret");
    assert!(!is_superuser(&mut admin, "rekey_lo_owner"));
}

/// The eighth review (Low): internal functions anyone may call answered XX000 to arguments the
/// toolkit never passes; each now has its SQLSTATE.
#[test]
fn review_8_internal_functions_refuse_bad_arguments_with_their_sqlstate() {
    let mut admin = fresh_db("t_rekey_review_8_low");
    hostile_role(&mut admin, "rekey_review8_nobody");
    let mut nobody = connect_as("t_rekey_review_8_low", "rekey_review8_nobody");
    nobody
        .batch_execute(
            "CREATE TEMP TABLE m1 (old_key uuid, new_key int8);
             CREATE TEMP TABLE tt (x int);",
        )
        .unwrap();
    use postgres::error::SqlState;
    for (sql, state) in [
        (
            "SELECT objectid_internal.rekey_translate_read('m1'::regclass, '00000000-0000-4000-8000-000000000001')",
            SqlState::DATATYPE_MISMATCH,
        ),
        (
            "SELECT objectid_internal.rekey_refresh_materialized_view(0)",
            SqlState::UNDEFINED_TABLE,
        ),
        (
            "SELECT objectid_internal.rekey_read_as_owner('tt'::regclass, 'SELECT 1 AS x UNION ALL SELECT 2')",
            SqlState::CARDINALITY_VIOLATION,
        ),
    ] {
        expect_error(&mut nobody, sql, &state);
    }
}

/// The ninth review (High, with dblink in use): a dblink connection serves whoever calls
/// dblink_exec on it, with the rights it was opened with, and its functions are PUBLIC. With the
/// superuser's connection open, the owner's CHECK ran ALTER ROLE ... SUPERUSER through it (as a
/// materialized view's query can during PostgreSQL's own REFRESH). The toolkit now runs no owner
/// code in a session that has loaded dblink. Servers without dblink (13's here) skip the attack.
#[test]
fn review_9_the_callers_dblink_connections_are_out_of_reach() {
    let db = "t_rekey_review_9_dblink";
    let (mut admin, mut owner) = owner_with_a_mode(db, "rekey_dblink_owner");
    if admin.batch_execute("CREATE EXTENSION dblink").is_err() {
        println!("dblink is not available on this server: attack not run");
        return;
    }
    owner
        .batch_execute(
            "CREATE FUNCTION m.act() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_dblink_owner' THEN
                 BEGIN
                   PERFORM public.dblink_exec('admin', 'ALTER ROLE rekey_dblink_owner SUPERUSER');
                 EXCEPTION WHEN OTHERS THEN NULL;
                 END;
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.act()));
             INSERT INTO m.t (at) SELECT now() - i * interval '1 hour' FROM generate_series(1, 5) i;
             ALTER TABLE m.t ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    let connected = admin.batch_execute(&format!(
        "SELECT public.dblink_connect('admin', {})",
        quote(&format!("{} dbname={db}", dsn()))
    ));
    if let Err(e) = connected {
        println!("dblink cannot connect here ({e}): attack not run");
        return;
    }
    for call in [
        "CALL rekey_run('m.t', 'at')",
        "SELECT count(*) FROM rekey_assess('m.t')",
    ] {
        let message = refused(&mut admin, call);
        assert!(message.contains("dblink"), "{call}: {message}");
        assert!(!is_superuser(&mut admin, "rekey_dblink_owner"), "{call}");
    }
    // A session that has not loaded dblink rekeys a table whose owner's code does not use it
    // (code that does loads dblink in the caller's session: the next batch is refused).
    owner
        .batch_execute(
            "CREATE OR REPLACE FUNCTION m.act() RETURNS boolean LANGUAGE sql AS 'SELECT true'",
        )
        .unwrap();
    drop(admin);
    let mut admin = connect_as(db, "postgres");
    admin.batch_execute("CALL rekey_run('m.t', 'at')").unwrap();
    assert!(!is_superuser(&mut admin, "rekey_dblink_owner"));
}

/// A database whose hostile role `role` owns schema m with a table m.mode of one row (action
/// text, 'none'), which everyone may read: the owner's code reads from it what to do, and the
/// owner changes it between calls. Returns the superuser's and the owner's connections.
fn owner_with_a_mode(db: &str, role: &str) -> (Client, Client) {
    let mut admin = fresh_db(db);
    hostile_role(&mut admin, role);
    admin
        .batch_execute(&format!("CREATE SCHEMA m AUTHORIZATION {role}"))
        .unwrap();
    let mut owner = connect_as(db, role);
    owner
        .batch_execute(
            "CREATE TABLE m.mode (action text);
             INSERT INTO m.mode VALUES ('none');
             GRANT SELECT ON m.mode TO PUBLIC;",
        )
        .unwrap();
    (admin, owner)
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
