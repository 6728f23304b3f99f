//! The binary protocol carries exactly the 12 raw bytes, as BSON does.

use std::io::{Read, Write};

use postgres::error::SqlState;

use crate::common::*;

const SAMPLE_HEX: &str = "507f1f77bcf86cd799439011";
const SAMPLE: [u8; 12] = [
    0x50, 0x7f, 0x1f, 0x77, 0xbc, 0xf8, 0x6c, 0xd7, 0x99, 0x43, 0x90, 0x11,
];

#[test]
fn results_are_the_raw_bytes() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(&format!("SELECT '{SAMPLE_HEX}'::objectid"), &[])
        .unwrap();
    assert_eq!(row.get::<_, Raw>(0), Raw(SAMPLE.to_vec()));
}

#[test]
fn parameters_are_the_raw_bytes() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one("SELECT $1::objectid::text", &[&Raw(SAMPLE.to_vec())])
        .unwrap();
    assert_eq!(row.get::<_, String>(0), SAMPLE_HEX);
    for len in [0usize, 11, 13, 16] {
        let err = c
            .query_one("SELECT $1::objectid", &[&Raw(vec![0xab; len])])
            .unwrap_err();
        let db = err.as_db_error().expect("a server error");
        assert_eq!(
            db.code(),
            &SqlState::INVALID_BINARY_REPRESENTATION,
            "{len} bytes"
        );
        assert_eq!(
            db.message(),
            format!("invalid binary length for type objectid: {len} bytes, expected 12")
        );
    }
}

/// PGCOPY header: signature, flags, header extension length.
const COPY_HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

#[test]
fn copy_binary_out_and_in() {
    let mut c = database_with_extension("").client;
    c.batch_execute(&format!(
        "CREATE TABLE t (id objectid); INSERT INTO t VALUES ('{SAMPLE_HEX}')"
    ))
    .unwrap();
    let mut out = Vec::new();
    c.copy_out("COPY t TO STDOUT (FORMAT binary)")
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    let mut expected = COPY_HEADER.to_vec();
    expected.extend_from_slice(&1i16.to_be_bytes());
    expected.extend_from_slice(&12i32.to_be_bytes());
    expected.extend_from_slice(&SAMPLE);
    expected.extend_from_slice(&(-1i16).to_be_bytes());
    assert_eq!(out, expected, "one field of 12 BSON bytes");

    // The same bytes load back.
    let mut w = c.copy_in("COPY t FROM STDIN (FORMAT binary)").unwrap();
    w.write_all(&out).unwrap();
    w.finish().unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            &format!("SELECT count(*) FROM t WHERE id = '{SAMPLE_HEX}'")
        ),
        2
    );

    // A field of 11 bytes is refused.
    let mut bad = COPY_HEADER.to_vec();
    bad.extend_from_slice(&1i16.to_be_bytes());
    bad.extend_from_slice(&11i32.to_be_bytes());
    bad.extend_from_slice(&SAMPLE[..11]);
    bad.extend_from_slice(&(-1i16).to_be_bytes());
    let mut w = c.copy_in("COPY t FROM STDIN (FORMAT binary)").unwrap();
    w.write_all(&bad).unwrap();
    let err = w.finish().unwrap_err();
    assert_eq!(
        err.as_db_error().map(|d| d.code()),
        Some(&SqlState::INVALID_BINARY_REPRESENTATION)
    );
}

#[test]
fn send_function_returns_bson_bytes() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(&format!("SELECT objectid_send('{SAMPLE_HEX}')"), &[])
        .unwrap();
    assert_eq!(row.get::<_, Vec<u8>>(0), SAMPLE.to_vec());
}
