//! The toolkit's internal functions called directly: statements of several commands or of
//! another type, long multibyte names, and arguments the toolkit never passes.

use super::quote;
use crate::common::*;

/// Review 4 (the last before resolving issue 18): `rekey_read_as_owner` wrapped its query in
/// `SELECT to_jsonb(q.*) FROM (…) q`, but SPI runs every command of a text of several and shows
/// the last one's rows, which the function read as jsonb whatever their type: any role, on a
/// temporary table of its own, crashed the server. One command only now, its column's type
/// checked.
#[test]
fn review_4_a_read_of_several_commands_is_refused() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    hostile_role(&mut admin, "rekey_review4_nobody");
    let mut nobody = connect_as(&db, "rekey_review4_nobody");
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
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    hostile_role(&mut admin, "rekey_review4_batch");
    let mut nobody = connect_as(&db, "rekey_review4_batch");
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
    let mut admin = database_with_extension("").client;
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

/// The eighth review (Low): internal functions anyone may call answered XX000 to arguments the
/// toolkit never passes; each now has its SQLSTATE.
#[test]
fn review_8_internal_functions_refuse_bad_arguments_with_their_sqlstate() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    hostile_role(&mut admin, "rekey_review8_nobody");
    let mut nobody = connect_as(&db, "rekey_review8_nobody");
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

/// The values a call gives an argument of `type_name`: the first one plausible (what the other
/// arguments hold while one varies), the rest the degenerate ones the toolkit never passes.
fn argument_values(type_name: &str) -> Vec<&'static str> {
    let mut values: Vec<&'static str> = match type_name {
        "oid" => vec![
            "'tt'::regclass::oid",
            "0",
            "1",
            "4294967295",
            "'pg_class'::regclass::oid",
            "'public.theirs'::regclass::oid",
            "'tt_pkey'::regclass::oid",
        ],
        "regclass" => vec![
            "'tt'",
            "0",
            "'pg_class'",
            "'public.theirs'",
            "'tt_pkey'",
            "'ts'",
            "'tv'",
        ],
        "regnamespace" => vec!["'public'", "0", "'pg_catalog'", "'objectid_internal'"],
        "text" => vec![
            "'SELECT 1 AS a'",
            "''",
            "' '",
            "'COPY tt TO STDOUT'",
            "'COPY tt FROM STDIN'",
            "'BEGIN'",
            "'COMMIT'",
            "'SAVEPOINT x'",
            "'SELECT'",
            "'SELECT 1/0'",
            "'SELECT NULL'",
            "'SELECT 1; SELECT 2'",
            "'SELECT * FROM tt'",
            "'SELECT ARRAY[NULL::uuid]'",
            "'SELECT pg_sleep(10)'",
            "'INSERT INTO tt VALUES (gen_random_uuid(), now()) RETURNING *'",
            "'DO $$ BEGIN END $$'",
            "'\"'",
            "repeat('x', 100000)",
            "'infinity'",
            "'no such zone'",
        ],
        "name" => vec![
            "'id'",
            "''",
            "repeat('x', 63)",
            "'\"'",
            "'created_at'",
            "'ctid'",
        ],
        "integer" => vec!["1", "0", "-1", "2147483647", "-2147483648"],
        "smallint" => vec!["1", "0", "-1", "32767", "-32768"],
        "bigint" => vec![
            "1",
            "0",
            "-1",
            "9223372036854775807",
            "-9223372036854775808",
        ],
        "boolean" => vec!["false", "true"],
        "uuid" => vec![
            "'00000000-0000-0000-0000-000000000000'",
            "'ffffffff-ffff-ffff-ffff-ffffffffffff'",
        ],
        "timestamp with time zone" => vec![
            "now()",
            "'infinity'",
            "'-infinity'",
            "'4714-11-24 00:00:00+00 BC'",
            "'294276-12-31 23:59:59+00'",
        ],
        "interval" => vec!["'1 s'", "'-1 s'", "'0'", "'178000000 years'"],
        "double precision" => vec!["1", "0", "-1", "'NaN'", "'Infinity'", "'-Infinity'"],
        "oid[]" => vec![
            "'{}'",
            "'{NULL}'",
            "'{0}'",
            "ARRAY['tt'::regclass::oid]",
            "ARRAY['tt'::regclass::oid, 'tt'::regclass::oid]",
        ],
        "text[]" => vec![
            "'{}'",
            "'{NULL}'",
            "'{\"\"}'",
            "'{x}'",
            "'{\"SELECT 1\", \"BEGIN\"}'",
        ],
        "name[]" => vec!["'{}'", "'{NULL}'", "'{\"\"}'", "'{id}'"],
        "uuid[]" => vec![
            "'{}'",
            "'{NULL}'",
            "'{00000000-0000-0000-0000-000000000000}'",
            "'{00000000-0000-0000-0000-000000000000,00000000-0000-0000-0000-000000000000}'",
        ],
        "objectid_internal.rekey_column[]" => vec![
            "'{}'",
            "'{NULL}'",
            "ARRAY[ROW(0, 1, 'id', 'uuid', 0)::objectid_internal.rekey_column]",
            "ARRAY[ROW('tt'::regclass, 1, 'id', 'uuid', 0)::objectid_internal.rekey_column]",
            "ARRAY[ROW('tt'::regclass, -1, '', 0, -1)::objectid_internal.rekey_column]",
        ],
        other => panic!("no values for an argument of type {other}: add them"),
    };
    values.push("NULL");
    values
}

/// Issue 36: every function of objectid_internal, called by a role with no privileges (and by a
/// superuser) with every degenerate value of each argument in turn, answers with a SQLSTATE of
/// its error's class, never XX000, and never takes the session or the server down.
#[test]
fn no_internal_function_answers_xx000_to_any_argument() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    hostile_role(&mut admin, "rekey_sweep_nobody");
    admin
        .batch_execute(
            "CREATE TABLE public.theirs (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz);
             INSERT INTO public.theirs (created_at) SELECT now() FROM generate_series(1, 3);",
        )
        .unwrap();
    let functions: Vec<(String, Vec<String>)> = admin
        .query(
            "SELECT p.proname::text,
                    ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY a(t, i) ORDER BY i)
               FROM pg_proc p
              WHERE p.pronamespace = 'objectid_internal'::regnamespace AND p.prokind = 'f'
                AND p.prorettype <> 'trigger'::regtype
              ORDER BY 1, 2",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert!(functions.len() > 40, "{functions:?}");
    let mut calls = Vec::new();
    for (name, types) in &functions {
        let call = |values: &[&str]| {
            let args: Vec<String> = values
                .iter()
                .zip(types)
                .map(|(v, t)| format!("({v})::{t}"))
                .collect();
            format!("SELECT objectid_internal.{name}({})", args.join(", "))
        };
        let base: Vec<&str> = types.iter().map(|t| argument_values(t)[0]).collect();
        calls.push(call(&base));
        calls.push(call(&vec!["NULL"; types.len()]));
        for (i, t) in types.iter().enumerate() {
            for value in argument_values(t).into_iter().skip(1) {
                let mut values = base.clone();
                values[i] = value;
                calls.push(call(&values));
            }
        }
    }
    let mut internal_errors = Vec::new();
    let mut nobody = connect_as(&db, "rekey_sweep_nobody");
    for (who, c) in [("nobody", &mut nobody), ("the superuser", &mut admin)] {
        c.batch_execute(
            "CREATE TEMP TABLE tt (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz);
             INSERT INTO tt (created_at) SELECT now() FROM generate_series(1, 3);
             CREATE TEMP SEQUENCE ts; CREATE TEMP VIEW tv AS SELECT * FROM tt;",
        )
        .unwrap();
        for sql in &calls {
            c.batch_execute("BEGIN; SET LOCAL statement_timeout = '3s'")
                .unwrap();
            if let Err(e) = c.batch_execute(sql) {
                let db_error = e
                    .as_db_error()
                    .unwrap_or_else(|| panic!("{who}: {sql}: the session is gone: {e:?}"));
                if *db_error.code() == postgres::error::SqlState::INTERNAL_ERROR {
                    internal_errors.push(format!("{who}: {sql}: {}", db_error.message()));
                }
            }
            c.batch_execute("ROLLBACK")
                .unwrap_or_else(|e| panic!("{who}: after {sql}: {e:?}"));
        }
    }
    assert!(
        internal_errors.is_empty(),
        "{} of {} calls answered XX000:\n{}",
        internal_errors.len(),
        2 * calls.len(),
        internal_errors.join("\n")
    );
    assert!(!is_superuser(&mut admin, "rekey_sweep_nobody"));
    assert_log_clean("the sweep of objectid_internal's functions");
}
