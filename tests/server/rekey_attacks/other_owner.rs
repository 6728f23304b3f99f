//! A child table of another owner, whose code follows the key.

use postgres::Client;

use super::{assert_gained_nothing, counted, hostile_tables, reset_logs, run_every_step_on};
use crate::common::*;

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
fn hostile_child(suffix: &str, code: &str) -> Database {
    let Database {
        name: db,
        client: mut admin,
    } = hostile_tables(suffix, "SELECT");
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
    let mut victim = connect_as(&db, "rekey_attack_victim");
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
    let mut mallory = connect_as(&db, "rekey_attack_owner");
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
    Database {
        name: db,
        client: admin,
    }
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
        let Database {
            name: db,
            client: mut admin,
        } = hostile_child(kind, code);
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
