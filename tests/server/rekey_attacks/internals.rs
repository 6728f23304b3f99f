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
