//! Casts between objectid and jsonb in MongoDB Extended JSON (`sql/objectid_json.sql`).

use postgres::error::SqlState;
use postgres::Client;

use crate::common::{database_with_extension, one_bool, one_i64, one_string, sample_ids_sql};

/// The SQLSTATE, message and detail of a statement that must fail.
fn error_of(client: &mut Client, sql: &str) -> (SqlState, String, String) {
    let err = client
        .batch_execute(sql)
        .expect_err(&format!("{sql:?} succeeded"));
    let db = err
        .as_db_error()
        .unwrap_or_else(|| panic!("expected a server error from {sql:?}, got {err}"));
    (
        db.code().clone(),
        db.message().to_string(),
        db.detail().unwrap_or_default().to_string(),
    )
}

#[test]
fn objectid_to_jsonb_is_extended_json_and_round_trips() {
    let mut c = database_with_extension("").client;
    assert_eq!(
        one_string(
            &mut c,
            "SELECT '507f1f77bcf86cd799439011'::objectid::jsonb::text"
        ),
        r#"{"$oid": "507f1f77bcf86cd799439011"}"#
    );
    // Every value comes back byte for byte, through the object and through its text.
    let sql = format!(
        "SELECT count(*) FROM ({}) s(id) \
         WHERE id::jsonb::objectid IS DISTINCT FROM id \
            OR (id::jsonb::text)::jsonb::objectid IS DISTINCT FROM id \
            OR id::jsonb ->> '$oid' IS DISTINCT FROM id::text \
            OR jsonb_typeof(id::jsonb) <> 'object' \
            OR (SELECT count(*) FROM jsonb_object_keys(id::jsonb)) <> 1",
        sample_ids_sql(20_000)
    );
    assert_eq!(one_i64(&mut c, &sql), 0);
    for edge in ["000000000000000000000000", "ffffffffffffffffffffffff"] {
        let sql = format!("SELECT '{edge}'::objectid::jsonb::objectid::text");
        assert_eq!(one_string(&mut c, &sql), edge);
    }
    // STRICT: NULL in, NULL out, both ways.
    assert!(one_bool(
        &mut c,
        "SELECT NULL::objectid::jsonb IS NULL AND NULL::jsonb::objectid IS NULL"
    ));
}

#[test]
fn jsonb_strings_and_wrappers_convert_to_objectid() {
    let mut c = database_with_extension("").client;
    let id = "507f1f77bcf86cd799439011";
    for json in [
        // Canonical and relaxed Extended JSON write an ObjectId the same way.
        format!(r#"{{"$oid": "{id}"}}"#),
        format!(r#"{{"$oid":"{}"}}"#, id.to_uppercase()),
        // How to_jsonb() writes an objectid.
        format!(r#""{id}""#),
    ] {
        let sql = format!("SELECT ('{json}'::jsonb)::objectid::text");
        assert_eq!(one_string(&mut c, &sql), id, "{json}");
        let sql = format!("SELECT objectid_from_jsonb('{json}'::jsonb)::text");
        assert_eq!(one_string(&mut c, &sql), id, "{json}");
    }
    // JSON null is SQL NULL, as PostgreSQL 18 casts jsonb null to any scalar type.
    assert!(one_bool(&mut c, "SELECT ('null'::jsonb)::objectid IS NULL"));
    // A missing key is SQL NULL before the cast is reached.
    assert!(one_bool(
        &mut c,
        "SELECT ('{\"a\": 1}'::jsonb -> 'author')::objectid IS NULL"
    ));
    // Nested ObjectIds in a document, as mongoexport writes them.
    c.batch_execute(
        r#"CREATE TABLE docs (body jsonb);
           INSERT INTO docs VALUES ('{"_id": {"$oid": "5f5e100a0000000000000001"},
                                      "author": {"$oid": "5f5e100a0000000000000002"},
                                      "refs": [{"$oid": "5f5e100a0000000000000003"}, null]}');"#,
    )
    .unwrap();
    let row = c
        .query_one(
            "SELECT (body -> '_id')::objectid::text, (body -> 'author')::objectid::text, \
                    (body #> '{refs,0}')::objectid::text, (body #> '{refs,1}')::objectid IS NULL, \
                    objectid_timestamp((body -> '_id')::objectid)::text \
             FROM docs",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "5f5e100a0000000000000001");
    assert_eq!(row.get::<_, String>(1), "5f5e100a0000000000000002");
    assert_eq!(row.get::<_, String>(2), "5f5e100a0000000000000003");
    assert!(row.get::<_, bool>(3));
    assert_eq!(row.get::<_, String>(4), "2020-09-13 12:26:50+00");
}

#[test]
fn to_jsonb_and_to_json_keep_the_plain_string() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE t (id objectid, n int); \
         INSERT INTO t VALUES ('507f1f77bcf86cd799439011', 1);",
    )
    .unwrap();
    let plain = r#"{"n": 1, "id": "507f1f77bcf86cd799439011"}"#;
    assert_eq!(one_string(&mut c, "SELECT to_jsonb(t)::text FROM t"), plain);
    assert_eq!(
        one_string(&mut c, "SELECT jsonb_agg(t)::text FROM t"),
        format!("[{plain}]")
    );
    assert_eq!(
        one_string(&mut c, "SELECT to_jsonb(id)::text FROM t"),
        r#""507f1f77bcf86cd799439011""#
    );
    assert_eq!(
        one_string(&mut c, "SELECT jsonb_build_object('id', id)::text FROM t"),
        r#"{"id": "507f1f77bcf86cd799439011"}"#
    );
    assert_eq!(
        one_string(&mut c, "SELECT to_json(t)::text FROM t"),
        r#"{"id":"507f1f77bcf86cd799439011","n":1}"#
    );
    assert_eq!(
        one_string(&mut c, "SELECT row_to_json(t)::text FROM t"),
        r#"{"id":"507f1f77bcf86cd799439011","n":1}"#
    );
    // The explicit cast is the way to Extended JSON, and it nests in built documents.
    assert_eq!(
        one_string(
            &mut c,
            "SELECT jsonb_build_object('_id', id::jsonb)::text FROM t"
        ),
        r#"{"_id": {"$oid": "507f1f77bcf86cd799439011"}}"#
    );
}

/// A cast function named objectid(jsonb) beside objectid(bytea) made `objectid($1)` with an
/// untyped parameter ambiguous (found by review): it must keep resolving as in 0.4.0.
#[test]
fn objectid_of_an_untyped_parameter_still_means_bytea() {
    let mut c = database_with_extension("").client;
    let statement = c.prepare("SELECT objectid($1)").unwrap();
    assert_eq!(statement.params(), &[postgres::types::Type::BYTEA]);
    let statement = c.prepare("SELECT jsonb($1)::text").unwrap();
    assert_eq!(statement.params()[0].name(), "objectid");
    // The function-call form of the cast from jsonb is the function's own name.
    assert_eq!(
        one_string(
            &mut c,
            r#"SELECT objectid_from_jsonb('{"$oid": "507f1f77bcf86cd799439011"}')::text"#
        ),
        "507f1f77bcf86cd799439011"
    );
}

#[test]
fn casts_with_jsonb_are_explicit_only() {
    let mut c = database_with_extension("").client;
    c.batch_execute("CREATE TABLE t (id objectid, body jsonb)")
        .unwrap();
    // Assignment would need an assignment cast: there is none either way.
    let (state, _, _) = error_of(
        &mut c,
        r#"INSERT INTO t (id) VALUES ('{"$oid": "507f1f77bcf86cd799439011"}'::jsonb)"#,
    );
    assert_eq!(state, SqlState::DATATYPE_MISMATCH);
    let (state, _, _) = error_of(
        &mut c,
        "INSERT INTO t (body) VALUES ('507f1f77bcf86cd799439011'::objectid)",
    );
    assert_eq!(state, SqlState::DATATYPE_MISMATCH);
}

#[test]
fn bad_jsonb_is_refused_with_its_sqlstate_and_the_input_quoted() {
    let mut c = database_with_extension("").client;
    let cases: &[(&str, SqlState, &str, &str)] = &[
        (
            r#""507f""#,
            SqlState::INVALID_TEXT_REPRESENTATION,
            r#"invalid input syntax for type objectid: "507f""#,
            "An objectid has 24 hexadecimal digits; this input has 4 bytes.",
        ),
        (
            r#"{"$oid": "507f1f77bcf86cd79943901g"}"#,
            SqlState::INVALID_TEXT_REPRESENTATION,
            r#"invalid input syntax for type objectid: "507f1f77bcf86cd79943901g""#,
            "Byte 24 is not a hexadecimal digit.",
        ),
        (
            "12",
            SqlState::INVALID_PARAMETER_VALUE,
            "cannot cast jsonb numeric to type objectid",
            "The value is 12.",
        ),
        (
            "true",
            SqlState::INVALID_PARAMETER_VALUE,
            "cannot cast jsonb boolean to type objectid",
            "The value is true.",
        ),
        (
            r#"["507f1f77bcf86cd799439011"]"#,
            SqlState::INVALID_PARAMETER_VALUE,
            "cannot cast jsonb array to type objectid",
            r#"The value is ["507f1f77bcf86cd799439011"]."#,
        ),
        (
            "{}",
            SqlState::INVALID_PARAMETER_VALUE,
            "cannot cast jsonb object to type objectid",
            r#"An object converts only in MongoDB Extended JSON, {"$oid": "<24 hexadecimal digits>"}, with no other key; this one has 0 keys and no "$oid": {}."#,
        ),
        (
            r#"{"oid": "507f1f77bcf86cd799439011"}"#,
            SqlState::INVALID_PARAMETER_VALUE,
            "cannot cast jsonb object to type objectid",
            r#"An object converts only in MongoDB Extended JSON, {"$oid": "<24 hexadecimal digits>"}, with no other key; this one has 1 key and no "$oid": {"oid": "507f1f77bcf86cd799439011"}."#,
        ),
        (
            // A document that merely starts with "$oid" is not an ObjectId: taking it for one
            // would drop its other keys.
            r#"{"$oid": "507f1f77bcf86cd799439011", "n": 1}"#,
            SqlState::INVALID_PARAMETER_VALUE,
            "cannot cast jsonb object to type objectid",
            r#"An object converts only in MongoDB Extended JSON, {"$oid": "<24 hexadecimal digits>"}, with no other key; this one has 2 keys: {"n": 1, "$oid": "507f1f77bcf86cd799439011"}."#,
        ),
        (
            r#"{"$oid": 5}"#,
            SqlState::INVALID_PARAMETER_VALUE,
            "cannot cast jsonb object to type objectid",
            r#""$oid" holds a jsonb numeric, not a string of 24 hexadecimal digits: {"$oid": 5}."#,
        ),
        (
            r#"{"$oid": null}"#,
            SqlState::INVALID_PARAMETER_VALUE,
            "cannot cast jsonb object to type objectid",
            r#""$oid" holds a jsonb null, not a string of 24 hexadecimal digits: {"$oid": null}."#,
        ),
        (
            r#"{"$oid": {"$oid": "507f1f77bcf86cd799439011"}}"#,
            SqlState::INVALID_PARAMETER_VALUE,
            "cannot cast jsonb object to type objectid",
            r#""$oid" holds a jsonb object, not a string of 24 hexadecimal digits: {"$oid": {"$oid": "507f1f77bcf86cd799439011"}}."#,
        ),
        (
            r#"{"$oid": ["507f1f77bcf86cd799439011"]}"#,
            SqlState::INVALID_PARAMETER_VALUE,
            "cannot cast jsonb object to type objectid",
            r#""$oid" holds a jsonb array, not a string of 24 hexadecimal digits: {"$oid": ["507f1f77bcf86cd799439011"]}."#,
        ),
    ];
    for (json, state, message, detail) in cases {
        let sql = format!("SELECT '{json}'::jsonb::objectid");
        let got = error_of(&mut c, &sql);
        assert_eq!(
            got,
            (state.clone(), message.to_string(), detail.to_string()),
            "{json}"
        );
    }
}

#[test]
fn a_large_stored_document_is_read_and_quoted_short() {
    let mut c = database_with_extension("").client;
    // One document compressed in line, one stored out of line: the cast detoasts its argument.
    c.batch_execute(
        "CREATE TABLE t (n int, body jsonb); \
         INSERT INTO t SELECT 1, jsonb_build_object('$oid', '507f1f77bcf86cd799439011', \
                                                    'pad', repeat('pad ', 100000)); \
         INSERT INTO t SELECT 2, jsonb_build_object('$oid', '507f1f77bcf86cd799439011', \
                                                    'pad', string_agg(md5(i::text), '')) \
         FROM generate_series(1, 20000) i;",
    )
    .unwrap();
    assert!(one_bool(
        &mut c,
        "SELECT pg_column_size(body) < octet_length(body::text) / 10 FROM t WHERE n = 1"
    ));
    for n in [1, 2] {
        let sql = format!("SELECT body::objectid FROM t WHERE n = {n}");
        let (state, message, detail) = error_of(&mut c, &sql);
        assert_eq!(state, SqlState::INVALID_PARAMETER_VALUE);
        assert_eq!(message, "cannot cast jsonb object to type objectid");
        assert!(detail.ends_with("...."), "{detail}");
        assert!(detail.len() < 300, "{detail}");
    }
    // Its $oid alone converts.
    assert_eq!(
        one_string(
            &mut c,
            "SELECT (body - 'pad')::objectid::text FROM t WHERE n = 2"
        ),
        "507f1f77bcf86cd799439011"
    );
}

#[test]
fn a_non_owner_can_use_the_casts() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "DROP ROLE IF EXISTS json_reader; CREATE ROLE json_reader; \
         SET ROLE json_reader;",
    )
    .unwrap();
    assert_eq!(
        one_string(
            &mut c,
            r#"SELECT ('{"$oid": "507f1f77bcf86cd799439011"}'::jsonb)::objectid::jsonb::text"#
        ),
        r#"{"$oid": "507f1f77bcf86cd799439011"}"#
    );
    c.batch_execute("RESET ROLE; DROP ROLE json_reader;")
        .unwrap();
}

/// Bad input of any size is quoted by its first 100 characters (review: the whole input was
/// copied into the message, on Rust's heap, whose allocator aborts the server when memory runs
/// out rather than raising an error).
#[test]
fn huge_bad_input_is_quoted_by_its_first_characters() {
    let mut c = database_with_extension("").client;
    let hundred = "x".repeat(100);
    let want = format!("invalid input syntax for type objectid: \"{hundred}...\"");
    for sql in [
        "SELECT repeat('x', 20000000)::objectid",
        "SELECT jsonb_build_object('$oid', repeat('x', 20000000))::objectid",
        "SELECT to_jsonb(repeat('x', 20000000))::objectid",
    ] {
        let (state, message, _) = error_of(&mut c, sql);
        assert_eq!(state, SqlState::INVALID_TEXT_REPRESENTATION, "{sql}");
        assert_eq!(message, want, "{sql}");
    }
    let (_, message, detail) = error_of(
        &mut c,
        "SELECT jsonb_build_object('pad', repeat('y', 20000000))::objectid",
    );
    assert_eq!(message, "cannot cast jsonb object to type objectid");
    assert!(detail.len() < 400, "{}", &detail[..400.min(detail.len())]);
}
