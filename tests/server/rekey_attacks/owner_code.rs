//! Owner code of every kind on the rekeyed table's set, run by a superuser and by a member of
//! the owner's role.

use super::{
    assert_finished_correctly_or_unchanged, assert_gained_nothing, counted, hostile_tables, keys,
    run_every_step,
};
use crate::common::*;

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
            let Database {
                name: db,
                client: mut admin,
            } = hostile_tables(kind, code);
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
