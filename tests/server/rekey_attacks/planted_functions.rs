//! Functions planted where the toolkit looks (issue 18's repros), and the documented calls that
//! reach the toolkit whatever was planted.

use postgres::Client;

use super::counted;
use crate::common::*;

/// Issue 18's first repro, verbatim: a CHECK constraint whose function resets the role and makes
/// its owner a superuser when a superuser's session runs it. The batch is refused inside the
/// restricted operation (42501), nothing changes, and the owner is no superuser.
#[test]
fn repro_1_a_check_constraint_resets_the_role() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    hostile_role(&mut admin, "rekey_repro_mallory");
    admin
        .batch_execute("CREATE SCHEMA m AUTHORIZATION rekey_repro_mallory")
        .unwrap();
    let mut mallory = connect_as(&db, "rekey_repro_mallory");
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
pub(super) fn plant(schema: &str, name: &str, args: &str, result: &str, kind: &str) -> String {
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
    let Database {
        name: db,
        client: mut admin,
    } = empty_database("");
    hostile_role(&mut admin, "rekey_dbo");
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {db} OWNER TO rekey_dbo;
             CREATE SCHEMA app AUTHORIZATION rekey_dbo;"
        ))
        .unwrap();
    let mut dbo = connect_as(&db, "rekey_dbo");
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
    let Database {
        name: db,
        client: mut admin,
    } = empty_database("");
    hostile_role(&mut admin, "rekey_typed_dbo");
    admin
        .batch_execute(&format!("ALTER DATABASE {db} OWNER TO rekey_typed_dbo"))
        .unwrap();
    let mut dbo = connect_as(&db, "rekey_typed_dbo");
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
