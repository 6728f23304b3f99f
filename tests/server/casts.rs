use postgres::error::SqlState;

use crate::common::*;

#[test]
fn bytea_round_trip() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(
            "SELECT '507f1f77bcf86cd799439011'::objectid::bytea, \
                    '\\x507f1f77bcf86cd799439011'::bytea::objectid::text, \
                    objectid('\\x000000000000000000000000'::bytea)::text, \
                    bytea('ffffffffffffffffffffffff'::objectid), \
                    NULL::bytea::objectid IS NULL",
            &[],
        )
        .unwrap();
    assert_eq!(
        row.get::<_, Vec<u8>>(0),
        vec![0x50, 0x7f, 0x1f, 0x77, 0xbc, 0xf8, 0x6c, 0xd7, 0x99, 0x43, 0x90, 0x11]
    );
    assert_eq!(row.get::<_, String>(1), "507f1f77bcf86cd799439011");
    assert_eq!(row.get::<_, String>(2), "000000000000000000000000");
    assert_eq!(row.get::<_, Vec<u8>>(3), vec![0xff; 12]);
    assert!(row.get::<_, bool>(4));
}

#[test]
fn bytea_of_wrong_length_is_refused() {
    let mut c = database_with_extension("").client;
    let msg = expect_error(
        &mut c,
        "SELECT '\\x507f1f77bcf86cd7994390'::bytea::objectid",
        &SqlState::INVALID_BINARY_REPRESENTATION,
    );
    assert_eq!(
        msg,
        "invalid length for type objectid: \"\\x507f1f77bcf86cd7994390\" has 11 bytes, expected 12"
    );
    let msg = expect_error(
        &mut c,
        "SELECT ''::bytea::objectid",
        &SqlState::INVALID_BINARY_REPRESENTATION,
    );
    assert_eq!(
        msg,
        "invalid length for type objectid: \"\\x\" has 0 bytes, expected 12"
    );
    // Long input is quoted only in part.
    let msg = expect_error(
        &mut c,
        "SELECT decode(repeat('ab', 100), 'hex')::objectid",
        &SqlState::INVALID_BINARY_REPRESENTATION,
    );
    assert_eq!(
        msg,
        format!(
            "invalid length for type objectid: \"\\x{}...\" has 100 bytes, expected 12",
            "ab".repeat(32)
        )
    );
}

#[test]
fn casts_are_explicit_only() {
    let mut c = database_with_extension("").client;
    let rows = c
        .query(
            "SELECT castsource::regtype::text, casttarget::regtype::text, castcontext::text \
             FROM pg_cast WHERE castsource = 'objectid'::regtype OR casttarget = 'objectid'::regtype \
             ORDER BY 1, 2",
            &[],
        )
        .unwrap();
    let got: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        got,
        vec![
            ("bytea".into(), "objectid".into(), "e".into()),
            ("jsonb".into(), "objectid".into(), "e".into()),
            ("objectid".into(), "bytea".into(), "e".into()),
            ("objectid".into(), "jsonb".into(), "e".into()),
        ]
    );
    // No implicit conversion: a bytea cannot be compared with an objectid unconverted.
    expect_error(
        &mut c,
        "SELECT '507f1f77bcf86cd799439011'::objectid = '\\x00'::bytea",
        &SqlState::UNDEFINED_FUNCTION,
    );
}
