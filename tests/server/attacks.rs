//! The whole extension against the attack classes of ../shared/reference/security.md, outside the
//! rekey toolkit (whose own suite is rekey_attacks.rs) and the planner (differential.rs and
//! planner.rs): install and update scripts that meet objects a hostile role made first, what the
//! role that installs the extension can change afterwards, and LEAKPROOF functions, which
//! PostgreSQL lets see rows a security barrier hides and so must never fail on what they see.
//! Each test prints the class it covers and how much of it it tried.

use postgres::error::SqlState;

use crate::common::*;

/// Every function and procedure of the extension in a fresh install of this version: schema,
/// name, identity arguments, kind.
fn current_routines() -> Vec<(String, String, String, String)> {
    let mut c = database_with_extension("").client;
    c.query(
        "SELECT n.nspname::text, p.proname::text, pg_get_function_identity_arguments(p.oid),
                p.prokind::text
           FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
           JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
            AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid')
            AND d.classid = 'pg_proc'::regclass
          ORDER BY 1, 2, 3",
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
    .collect()
}

/// Class 2 (names resolved while a script runs): before `CREATE EXTENSION`, and before
/// `ALTER EXTENSION ... UPDATE` from each earlier release, a hostile role that may create in the
/// extension's schema makes a routine of the same name and arguments as each one the script is
/// about to make there (and the internal schema, where the script makes it), each a trap that
/// makes the role a superuser if anyone with that right runs it. The scripts create without
/// `OR REPLACE` or `IF NOT EXISTS`, so they must stop at the first such object, with PostgreSQL's
/// duplicate-object error, having run none of the role's code.
#[test]
fn install_and_update_stop_at_objects_a_hostile_role_made_first() {
    let current = current_routines();
    let mut starts: Vec<Option<String>> = vec![None];
    starts.extend(earlier_releases().into_iter().map(Some));
    let mut planted_total = 0;
    for start in &starts {
        let Database {
            name: db,
            client: mut admin,
        } = empty_database("");
        hostile_role(&mut admin, "attack_planter");
        // What a database owner has, or on 13 and 14 any role in public.
        admin
            .batch_execute(&format!(
                "GRANT CREATE ON SCHEMA public TO attack_planter; GRANT CREATE ON DATABASE {db} TO attack_planter"
            ))
            .unwrap();
        if let Some(release) = start {
            admin
                .batch_execute(&format!("CREATE EXTENSION pg_objectid VERSION '{release}'"))
                .unwrap();
        }
        let existing: Vec<(String, String, String)> = admin
            .query(
                "SELECT n.nspname::text, p.proname::text, pg_get_function_identity_arguments(p.oid)
                   FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                  WHERE n.nspname IN ('public', 'objectid_internal')",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let internal_exists = one_bool(
            &mut admin,
            "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = 'objectid_internal')",
        );
        let mut planter = connect_as(&db, "attack_planter");
        planter
            .batch_execute(
                "CREATE FUNCTION public.attack_trap() RETURNS void LANGUAGE plpgsql AS $$
                 BEGIN
                   IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                     EXECUTE 'ALTER ROLE attack_planter SUPERUSER';
                   END IF;
                 END $$",
            )
            .unwrap();
        // Routines whose argument types exist yet (a fresh install has no objectid type) are
        // planted; the rest cannot be, by anyone.
        let mut planted = 0;
        for (schema, name, args, kind) in &current {
            if schema != "public"
                || existing
                    .iter()
                    .any(|(s, n, a)| s == schema && n == name && a == args)
            {
                continue;
            }
            let routine = if kind == "p" { "PROCEDURE" } else { "FUNCTION" };
            let returns = if kind == "p" { "" } else { "RETURNS void" };
            let sql = format!(
                "CREATE {routine} public.{name}({args}) {returns} LANGUAGE plpgsql AS $$
                 BEGIN PERFORM public.attack_trap(); END $$"
            );
            if planter.batch_execute(&sql).is_ok() {
                planted += 1;
            }
        }
        if !internal_exists {
            planter
                .batch_execute("CREATE SCHEMA objectid_internal")
                .unwrap_or_else(|e| panic!("the planter cannot create the schema: {e}"));
            planted += 1;
        }
        let command = match start {
            None => "CREATE EXTENSION pg_objectid".to_string(),
            Some(_) => "ALTER EXTENSION pg_objectid UPDATE".to_string(),
        };
        if planted == 0 {
            // An update that makes routines only in objectid_internal (0.6.0 to 0.7.0), which
            // exists and is the installing superuser's: nothing could be planted before it, and
            // it runs none of the planter's code.
            assert!(
                start.is_some(),
                "a fresh install must have routines to plant"
            );
            // Named like the table the update makes (in objectid_internal), where it may create.
            planter
                .batch_execute("CREATE TABLE public.rekey_snapshot (x int)")
                .unwrap();
            admin
                .batch_execute(&command)
                .unwrap_or_else(|e| panic!("{start:?}: {command}: {e:?}"));
            assert!(
                !is_superuser(&mut admin, "attack_planter"),
                "{start:?}: the planter's code ran as a superuser"
            );
            continue;
        }
        planted_total += planted;
        let error = admin.batch_execute(&command).unwrap_err();
        let code = error.as_db_error().map(|e| e.code().clone());
        assert!(
            code == Some(SqlState::DUPLICATE_FUNCTION)
                || code == Some(SqlState::DUPLICATE_SCHEMA)
                || code == Some(SqlState::DUPLICATE_OBJECT),
            "{start:?}: {command} failed otherwise: {error:?}"
        );
        assert!(
            !is_superuser(&mut admin, "attack_planter"),
            "{start:?}: the planter's code ran as a superuser"
        );
        let version = one_string(
            &mut admin,
            "SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'pg_objectid'), 'none')",
        );
        assert_eq!(
            Some(version.as_str()),
            Some(start.as_deref().unwrap_or("none")),
            "nothing changed"
        );
        drop(planter);
    }
    println!(
        "attack class 2, install and update scripts: {} starts (fresh and {} earlier releases), {planted_total} objects planted first; each script stopped with a duplicate-object error and ran nothing of the planter's",
        starts.len(),
        starts.len() - 1
    );
}

/// Class 3 (who owns what): after a trusted install by a database owner who is no superuser, the
/// extension's objects belong to the bootstrap superuser, so the installing role can drop the
/// extension but change nothing in it: not replace, rename or re-own a function, not add a
/// routine to the internal schema or rename it, not change the toolkit's state table, its casts,
/// operators or operator families.
#[test]
fn a_trusted_install_leaves_its_installer_nothing_to_change() {
    let Database {
        name: db,
        client: mut admin,
    } = empty_database("");
    hostile_role(&mut admin, "attack_installer");
    admin
        .batch_execute(&format!("ALTER DATABASE {db} OWNER TO attack_installer"))
        .unwrap();
    let mut installer = connect_as(&db, "attack_installer");
    installer
        .batch_execute("CREATE EXTENSION pg_objectid")
        .unwrap();
    let attempts = [
        "ALTER FUNCTION public.gen_objectid() OWNER TO attack_installer",
        "ALTER FUNCTION public.gen_objectid() RENAME TO gen_objectid_old",
        "ALTER FUNCTION public.objectid_timestamp(public.objectid) SET search_path = public",
        "CREATE OR REPLACE FUNCTION public.objectid_timestamp(public.objectid) RETURNS timestamptz \
         LANGUAGE sql AS 'SELECT now()'",
        "CREATE OR REPLACE FUNCTION public.rekey_assess(regclass) RETURNS SETOF record \
         LANGUAGE sql AS 'SELECT NULL::record'",
        "CREATE FUNCTION objectid_internal.attack() RETURNS int LANGUAGE sql AS 'SELECT 1'",
        "ALTER SCHEMA objectid_internal RENAME TO objectid_internal_old",
        "ALTER SCHEMA objectid_internal OWNER TO attack_installer",
        "DROP FUNCTION objectid_internal.rekey_name(oid)",
        "ALTER TABLE objectid_internal.rekey_state DISABLE ROW LEVEL SECURITY",
        "DROP POLICY rekey_state_read ON objectid_internal.rekey_state",
        "ALTER TYPE public.objectid OWNER TO attack_installer",
        "DROP CAST (public.objectid AS bytea)",
        "ALTER OPERATOR FAMILY public.objectid_ops USING btree DROP OPERATOR 1 (public.objectid, public.objectid)",
        "ALTER OPERATOR public.< (public.objectid, public.objectid) SET (RESTRICT = eqsel)",
        "COMMENT ON FUNCTION public.gen_objectid() IS 'replaced'",
    ];
    let mut refused = 0;
    for sql in attempts {
        let error = installer.batch_execute(sql).unwrap_err();
        let code = error.as_db_error().map(|e| e.code().clone());
        assert_eq!(
            code,
            Some(SqlState::INSUFFICIENT_PRIVILEGE),
            "{sql}: {error:?}"
        );
        refused += 1;
    }
    // Dropping the extension is the installer's, as PostgreSQL documents for trusted extensions.
    let owner = one_string(
        &mut admin,
        "SELECT extowner::regrole::text FROM pg_extension WHERE extname = 'pg_objectid'",
    );
    assert_eq!(owner, "attack_installer");
    assert!(!is_superuser(&mut admin, "attack_installer"));
    println!("attack class 3, the installing role: {refused} changes to the extension's objects tried, each refused with 42501");
}

/// A value of each argument type LEAKPROOF functions take: the edges, NULL-like values of the
/// type (nil and max UUIDs, ±infinity) and ordinary ones.
fn leakproof_inputs(type_name: &str) -> Option<&'static [&'static str]> {
    Some(match type_name {
        "objectid" => &[
            "'000000000000000000000000'::objectid",
            "'ffffffffffffffffffffffff'::objectid",
            "'7fffffffffffffffffffffff'::objectid",
            "'80000000ffffffffffffffff'::objectid",
            "'507f1f77bcf86cd799439011'::objectid",
        ],
        "timestamp with time zone" => &[
            "'infinity'::timestamptz",
            "'-infinity'::timestamptz",
            "'4714-11-24 00:00:00+00 BC'::timestamptz",
            "'294276-12-31 23:59:59.999999+00'::timestamptz",
            "'1969-12-31 23:59:59.999999+00'::timestamptz",
            "'1970-01-01 00:00:00+00'::timestamptz",
            "'2106-02-07 06:28:15+00'::timestamptz",
            "'2106-02-07 06:28:16+00'::timestamptz",
            "'10889-08-02 05:31:50.656+00'::timestamptz",
            "now()",
        ],
        "uuid" => &[
            "'00000000-0000-0000-0000-000000000000'::uuid",
            "'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid",
            "'c232ab00-9414-11ec-b3c8-9f6bdeced846'::uuid",
            "'017f22e2-79b0-7cc3-98c4-dc0c0c07398f'::uuid",
            "'ffffffff-ffff-7fff-bfff-ffffffffffff'::uuid",
            "'017f22e2-79b0-7cc3-c8c4-dc0c0c07398f'::uuid",
            "'550e8400-e29b-41d4-a716-446655440000'::uuid",
        ],
        "bigint" => &[
            "0::int8",
            "(-1)::int8",
            "9223372036854775807::int8",
            "(-9223372036854775808)::int8",
        ],
        _ => return None,
    })
}

/// Class 4 (what a function lets leak): PostgreSQL runs a LEAKPROOF function on rows a security
/// barrier view or a row-level security policy has not yet filtered, so one must never raise an
/// error whose text depends on its arguments. Every LEAKPROOF function of the extension, whatever
/// the catalog says is one now, is called on every combination of edge values of its argument
/// types and must never fail; a new LEAKPROOF function with an argument type this test has no
/// values for fails the test until it has some.
#[test]
fn leakproof_functions_never_fail() {
    let mut c = database_with_extension("").client;
    let functions: Vec<(String, Vec<String>)> = c
        .query(
            "SELECT p.oid::regproc::text,
                    ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) t)
               FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
              WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
                AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid')
                AND d.classid = 'pg_proc'::regclass AND p.proleakproof
              ORDER BY 1, 2",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert!(functions.len() >= 20, "{functions:?}");
    let mut calls = 0;
    for (function, args) in &functions {
        let inputs: Vec<&[&str]> = args
            .iter()
            .map(|a| {
                leakproof_inputs(a).unwrap_or_else(|| {
                    panic!("{function} is LEAKPROOF and takes {a}: give this test values of it")
                })
            })
            .collect();
        // Every combination of the arguments' values.
        let mut combinations: Vec<Vec<&str>> = vec![vec![]];
        for values in &inputs {
            combinations = combinations
                .iter()
                .flat_map(|prefix| {
                    values.iter().map(move |v| {
                        let mut next = prefix.clone();
                        next.push(v);
                        next
                    })
                })
                .collect();
        }
        for combination in combinations {
            let sql = format!("SELECT {function}({})::text", combination.join(", "));
            if let Err(e) = c.query(&sql, &[]) {
                panic!("LEAKPROOF {function} failed: {sql}: {e:?}");
            }
            calls += 1;
        }
    }
    println!(
        "attack class 4, LEAKPROOF: {} functions, {calls} calls on edge values, none failed",
        functions.len()
    );
}

/// Class 2 again, for names the scripts and the code write: the extension installed in a schema
/// whose name needs quoting (a space, upper case, a dot) works as in `public`, from its types and
/// operators to the planner's rewrite (which finds its objects by OID) and the rekey toolkit
/// (whose bodies never name the extension's schema), and an update from every earlier release
/// there succeeds. A name with a quote or a dollar sign, which could break out of a script's
/// quoting, PostgreSQL itself refuses for an extension whose scripts use `@extschema@` (since
/// 13.12 and its siblings); on an older minor release it installs, every object in its place.
#[test]
fn a_schema_name_that_needs_quoting_changes_nothing() {
    let mut c = empty_database("").client;
    c.batch_execute(r#"CREATE SCHEMA "a""b""#).unwrap();
    // Minor releases before PostgreSQL's fix (13.12 and its siblings; the 13 here is 13.4)
    // install there: then every object must be in that schema, which holds because the
    // install script names @extschema@ only as an identifier, never inside a quoted body or
    // literal where such a name could end the quoting.
    match c.batch_execute(r#"CREATE EXTENSION pg_objectid SCHEMA "a""b""#) {
        Err(e) => {
            let db = e.as_db_error().expect("a server error");
            assert_eq!(db.code(), &SqlState::INVALID_TEXT_REPRESENTATION, "{db:?}");
            assert!(db.message().contains("invalid character"), "{db:?}");
        }
        Ok(()) => {
            let elsewhere = one_i64(
                &mut c,
                r#"SELECT count(*) FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
                    WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
                      AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid')
                      AND p.pronamespace NOT IN ('"a""b"'::regnamespace, 'objectid_internal'::regnamespace)"#,
            );
            assert_eq!(elsewhere, 0, "functions outside the schema");
            c.batch_execute("DROP EXTENSION pg_objectid CASCADE")
                .unwrap();
        }
    }
    let schema = r#""My ids. x""#;
    c.batch_execute(&format!(
        "CREATE SCHEMA {schema}; CREATE EXTENSION pg_objectid SCHEMA {schema}; \
         SET search_path = public, {schema}; \
         CREATE TABLE t (id objectid PRIMARY KEY, n int); \
         INSERT INTO t SELECT gen_objectid_at(now() - i * interval '1 min'), i FROM generate_series(1, 2000) i; \
         CREATE TABLE u (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now()); \
         INSERT INTO u (at) SELECT now() - i * interval '1 min' FROM generate_series(1, 50) i; \
         ANALYZE"
    ))
    .unwrap();
    let q = "SELECT count(*) FROM t WHERE objectid_timestamp(id) >= now() - interval '1 hour'";
    let plan = explain(&mut c, q);
    assert!(plan.contains("objectid_first_at_or_after"), "{plan}");
    let n = one_i64(&mut c, q);
    assert!((59..=60).contains(&n), "{n}");
    c.batch_execute(&format!("SELECT {schema}.rekey_switch_default('u')"))
        .unwrap();
    c.batch_execute(&format!("CALL {schema}.rekey_run('u', 'at')"))
        .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            &format!("SELECT count(*) FROM u WHERE {schema}.uuid_extract_version(id) = 7")
        ),
        50
    );
    let releases = earlier_releases();
    for release in &releases {
        let mut c = empty_database("update").client;
        c.batch_execute(&format!(
            "CREATE SCHEMA {schema}; CREATE EXTENSION pg_objectid SCHEMA {schema} VERSION '{release}'; \
             ALTER EXTENSION pg_objectid UPDATE"
        ))
        .unwrap_or_else(|e| panic!("from {release}: {e:?}"));
    }
    println!(
        "attack class 2, a schema named {schema}: types, operators, the rewrite and the rekey toolkit work; updates from {} earlier releases succeed",
        releases.len()
    );
}

/// Class 2, for the one shipped script that names `@extschema@` inside function bodies and
/// literals (0.2.0 -> 0.3.0): a schema name with a dollar sign or a quote could end their quoting
/// and run what follows as the superuser that updates. PostgreSQL refuses such names itself from
/// 13.12 and its siblings on (at the install of 0.2.0 already); on an older minor release (CI's
/// 13 is 13.4) 0.2.0 installs there, and the update must refuse before it runs anything.
#[test]
fn an_update_naming_the_schema_in_quotes_refuses_a_name_that_could_end_them() {
    let mut refused = Vec::new();
    for schema in [r#""a$b""#, r#""a'b""#, r#""a""b""#] {
        let mut c = empty_database("").client;
        c.batch_execute(&format!("CREATE SCHEMA {schema}")).unwrap();
        let (step, result) = match c.batch_execute(&format!(
            "CREATE EXTENSION pg_objectid SCHEMA {schema} VERSION '0.2.0'"
        )) {
            Err(e) => ("install", Err(e)),
            Ok(()) => (
                "update",
                c.batch_execute("ALTER EXTENSION pg_objectid UPDATE"),
            ),
        };
        let error = result.expect_err("a schema name that could end a quoting was accepted");
        let db = error.as_db_error().expect("a server error");
        assert_eq!(
            db.code(),
            &SqlState::INVALID_TEXT_REPRESENTATION,
            "{schema}: {db:?}"
        );
        assert!(
            db.message().contains("invalid character"),
            "{schema}: {db:?}"
        );
        if step == "update" {
            assert_eq!(
                one_string(
                    &mut c,
                    "SELECT extversion FROM pg_extension WHERE extname = 'pg_objectid'"
                ),
                "0.2.0",
                "{schema}"
            );
        }
        refused.push(format!("{schema} at the {step}"));
    }
    println!(
        "attack class 2, schema names that could end a script's quoting: refused ({})",
        refused.join(", ")
    );
}
