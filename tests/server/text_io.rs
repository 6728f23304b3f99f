use postgres::error::SqlState;

use crate::common::*;

#[test]
fn text_round_trip_is_lowercase() {
    let mut c = database_with_extension("").client;
    assert_eq!(
        one_string(&mut c, "SELECT '507f1f77bcf86cd799439011'::objectid::text"),
        "507f1f77bcf86cd799439011"
    );
    assert_eq!(
        one_string(&mut c, "SELECT '507F1F77BCF86CD799439011'::objectid::text"),
        "507f1f77bcf86cd799439011"
    );
    assert_eq!(
        one_string(&mut c, "SELECT 'aBcDeF0123456789AbCdEf01'::objectid::text"),
        "abcdef0123456789abcdef01"
    );
    // Text casts go through the type's I/O functions in both directions.
    assert_eq!(
        one_string(
            &mut c,
            "SELECT ('FFFFFFFFFFFFFFFFFFFFFFFF'::text::objectid)::varchar"
        ),
        "ffffffffffffffffffffffff"
    );
    let row = c
        .query_one(
            "SELECT NULL::objectid IS NULL, NULL::text::objectid IS NULL",
            &[],
        )
        .unwrap();
    assert!(row.get::<_, bool>(0) && row.get::<_, bool>(1));
}

#[test]
fn bad_text_is_rejected_with_22p02() {
    let mut c = database_with_extension("").client;
    let cases = [
        "",
        "507f1f77bcf86cd79943901",
        "507f1f77bcf86cd7994390111",
        "507f1f77bcf86cd79943901g",
        " 507f1f77bcf86cd799439011",
        "507f1f77bcf86cd799439011 ",
        "507f1f77 cf86cd799439011",
        "0x507f1f77bcf86cd7994390",
        "507f1f77-bcf8-6cd7-9943-9011",
        "+07f1f77bcf86cd799439011",
        "507f1f77bcf86cd79943901é",
        "zzzzzzzzzzzzzzzzzzzzzzzz",
    ];
    for input in cases {
        let msg = expect_error(
            &mut c,
            &format!("SELECT '{input}'::objectid"),
            &SqlState::INVALID_TEXT_REPRESENTATION,
        );
        assert_eq!(
            msg,
            format!("invalid input syntax for type objectid: \"{input}\""),
            "for {input:?}"
        );
    }
    // Through a text value at run time too, not just a literal.
    expect_error(
        &mut c,
        "SELECT ('507f1f77bcf86cd7' || 'xyz')::objectid",
        &SqlState::INVALID_TEXT_REPRESENTATION,
    );
}

#[test]
fn error_detail_says_what_is_wrong() {
    let mut c = database_with_extension("").client;
    let err = c.batch_execute("SELECT 'abc'::objectid").unwrap_err();
    let db = err.as_db_error().unwrap();
    assert_eq!(
        db.detail(),
        Some("An objectid has 24 hexadecimal digits; this input has 3 bytes.")
    );
    let err = c
        .batch_execute("SELECT '507f1f77bcf86cd79943901g'::objectid")
        .unwrap_err();
    assert_eq!(
        err.as_db_error().unwrap().detail(),
        Some("Byte 24 is not a hexadecimal digit.")
    );
}

#[test]
fn embedded_nul_never_truncates() {
    let mut c = database_with_extension("").client;
    // A NUL cannot reach the input function: the server refuses it in text, whether written in a
    // literal, built with chr(), or sent as a parameter. What must never happen is that the part
    // before the NUL is silently accepted as an objectid.
    expect_error(
        &mut c,
        "SELECT E'507f1f77bcf86cd799439011\\000abc'::objectid",
        &SqlState::CHARACTER_NOT_IN_REPERTOIRE,
    );
    expect_error(
        &mut c,
        "SELECT ('507f1f77bcf86cd799439011' || chr(0))::objectid",
        &SqlState::PROGRAM_LIMIT_EXCEEDED,
    );
    let err = c
        .query_one(
            "SELECT $1::text::objectid",
            &[&"507f1f77bcf86cd799439011\0abc"],
        )
        .unwrap_err();
    assert_eq!(
        err.as_db_error().map(|d| d.code()),
        Some(&SqlState::CHARACTER_NOT_IN_REPERTOIRE)
    );
}

#[test]
fn fixed_length_of_twelve_bytes() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(
            "SELECT typlen, typbyval, typalign::text, typstorage::text, typcategory::text \
             FROM pg_type WHERE oid = 'objectid'::regtype",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, i16>(0), 12);
    assert!(!row.get::<_, bool>(1));
    assert_eq!(row.get::<_, String>(2), "c");
    assert_eq!(row.get::<_, String>(3), "p");
    assert_eq!(row.get::<_, String>(4), "U");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT pg_column_size('507f1f77bcf86cd799439011'::objectid)::int8"
        ),
        12
    );
    c.batch_execute(&format!(
        "CREATE TABLE t AS {}; CREATE TABLE u (flag bool, id objectid)",
        sample_ids_sql(100)
    ))
    .unwrap();
    c.batch_execute("INSERT INTO u SELECT true, id FROM t")
        .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM t WHERE pg_column_size(id) <> 12"
        ),
        0
    );
    // Byte alignment: a bool followed by an objectid takes 13 bytes, no padding.
    assert_eq!(
        one_i64(&mut c, "SELECT max(pg_column_size(u.*))::int8 - 24 FROM u"),
        13
    );
}

/// PostgreSQL 16 lets callers ask an input function to report bad input without throwing.
#[test]
fn soft_input_errors() {
    let mut c = database_with_extension("").client;
    if server_version(&mut c) < 160000 {
        // pg_input_is_valid() does not exist before 16; the hard error is tested above.
        expect_error(
            &mut c,
            "SELECT pg_input_is_valid('x', 'objectid')",
            &SqlState::UNDEFINED_FUNCTION,
        );
        return;
    }
    let row = c
        .query_one(
            "SELECT pg_input_is_valid('507f1f77bcf86cd799439011', 'objectid'), \
                    pg_input_is_valid('507f1f77bcf86cd79943901', 'objectid'), \
                    pg_input_is_valid('', 'objectid')",
            &[],
        )
        .unwrap();
    assert_eq!(
        (
            row.get::<_, bool>(0),
            row.get::<_, bool>(1),
            row.get::<_, bool>(2)
        ),
        (true, false, false)
    );
    let row = c
        .query_one(
            "SELECT message, detail, sql_error_code FROM pg_input_error_info('xyz', 'objectid')",
            &[],
        )
        .unwrap();
    assert_eq!(
        row.get::<_, String>(0),
        "invalid input syntax for type objectid: \"xyz\""
    );
    assert_eq!(
        row.get::<_, String>(1),
        "An objectid has 24 hexadecimal digits; this input has 3 bytes."
    );
    assert_eq!(row.get::<_, String>(2), "22P02");
    // A domain over the type reports softly too.
    c.batch_execute("CREATE DOMAIN oid_dom AS objectid")
        .unwrap();
    assert!(!one_bool(
        &mut c,
        "SELECT pg_input_is_valid('nope', 'oid_dom')"
    ));
}

/// PostgreSQL 17's COPY ... (ON_ERROR ignore) skips rows whose objectid does not parse.
#[test]
fn copy_on_error_ignore_skips_bad_rows() {
    let mut c = database_with_extension("").client;
    c.batch_execute("CREATE TABLE t (id objectid)").unwrap();
    let data = "507f1f77bcf86cd799439011\nnot-an-id\nffffffffffffffffffffffff\n";
    if server_version(&mut c) < 170000 {
        let mut w = c.copy_in("COPY t FROM STDIN").unwrap();
        std::io::Write::write_all(&mut w, data.as_bytes()).unwrap();
        let err = w.finish().unwrap_err();
        assert_eq!(
            err.as_db_error().map(|d| d.code()),
            Some(&SqlState::INVALID_TEXT_REPRESENTATION)
        );
        return;
    }
    let mut w = c.copy_in("COPY t FROM STDIN (ON_ERROR ignore)").unwrap();
    std::io::Write::write_all(&mut w, data.as_bytes()).unwrap();
    assert_eq!(w.finish().unwrap(), 2);
    assert_eq!(
        one_string(
            &mut c,
            "SELECT string_agg(id::text, ',' ORDER BY id) FROM t"
        ),
        "507f1f77bcf86cd799439011,ffffffffffffffffffffffff"
    );
}
