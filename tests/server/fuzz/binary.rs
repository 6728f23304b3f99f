//! Binary receive (a bare parameter, elements of an `objectid[]` parameter, `COPY (FORMAT
//! binary)`) and the `bytea::objectid` cast.

use std::io::Write as _;

use postgres::Client;
use rand::Rng;

use super::generators::{binary_input, random_id};
use super::{assert_server_survived, show, Run};
use crate::common::*;

fn binary_error_ok(len: usize, e: &postgres::Error) -> Result<(), String> {
    let Some(db) = e.as_db_error() else {
        return Err(format!("not a server error: {e}"));
    };
    let want = format!("invalid binary length for type objectid: {len} bytes, expected 12");
    if db.code().code() != "22P03" || db.message() != want {
        return Err(format!(
            "error {} {:?}, expected 22P03 {want:?}",
            db.code().code(),
            db.message()
        ));
    }
    Ok(())
}

const COPY_HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

fn copy_rows(rows: &[(i32, &[u8])]) -> Vec<u8> {
    let mut out = COPY_HEADER.to_vec();
    for (n, bytes) in rows {
        out.extend_from_slice(&2i16.to_be_bytes());
        out.extend_from_slice(&4i32.to_be_bytes());
        out.extend_from_slice(&n.to_be_bytes());
        out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    out.extend_from_slice(&(-1i16).to_be_bytes());
    out
}

fn copy_in(c: &mut Client, data: &[u8]) -> Result<u64, postgres::Error> {
    let mut w = c.copy_in("COPY fuzz_copy (n, id) FROM STDIN (FORMAT binary)")?;
    // A failed write shows up in finish().
    let _ = w.write_all(data);
    w.finish()
}

#[test]
fn binary_receive() {
    let mut run = Run::new("binary_receive");
    let total = run.count(20_000);
    let inputs: Vec<Vec<u8>> = (0..total).map(|_| binary_input(&mut run.rng)).collect();
    let mut c = database_with_extension("").client;
    let pid = backend_pid(&mut c);

    // 1. Each input alone as a parameter of type objectid, its value sent back in binary and text.
    let stmt = c
        .prepare("SELECT $1::objectid, $1::objectid::text")
        .unwrap();
    for (n, input) in inputs.iter().enumerate() {
        match c.query_one(&stmt, &[&Raw(input.clone())]) {
            Ok(row) => {
                let back: Raw = row.get(0);
                let text: String = row.get(1);
                if input.len() != 12 || back.0 != *input || text != hex::encode(input) {
                    run.fail(format!(
                        "parameter #{n} {}: accepted, sent back {} as text {text:?}",
                        show(input),
                        hex::encode(&back.0)
                    ));
                }
            }
            Err(e) => {
                if e.as_db_error().is_none() {
                    run.abort(format!(
                        "parameter #{n} {} lost the connection: {e:?}",
                        show(input)
                    ));
                }
                if input.len() == 12 {
                    run.fail(format!(
                        "parameter #{n} {}: 12 bytes refused: {e:?}",
                        show(input)
                    ));
                } else if let Err(why) = binary_error_ok(input.len(), &e) {
                    run.fail(format!("parameter #{n} {}: {why}", show(input)));
                }
            }
        }
    }

    // 2. The valid ones as elements of objectid[] parameters.
    let valid: Vec<&Vec<u8>> = inputs.iter().filter(|i| i.len() == 12).collect();
    let invalid: Vec<&Vec<u8>> = inputs.iter().filter(|i| i.len() != 12).collect();
    let array_stmt = c
        .prepare("SELECT u.n::int, u.x, u.x::text FROM unnest($1::objectid[]) WITH ORDINALITY AS u(x, n) ORDER BY u.n")
        .unwrap();
    for batch in valid.chunks(2_000) {
        let raws: Vec<Raw> = batch.iter().map(|b| Raw(b.to_vec())).collect();
        let rows = c.query(&array_stmt, &[&raws]).unwrap_or_else(|e| {
            run.abort(format!("an objectid[] of valid elements failed: {e:?}"))
        });
        assert_eq!(rows.len(), batch.len());
        for (row, input) in rows.iter().zip(batch) {
            let back: Raw = row.get(1);
            let text: String = row.get(2);
            if back.0 != **input || text != hex::encode(input) {
                run.fail(format!(
                    "array element {}: came back as {} / {text:?}",
                    show(input),
                    hex::encode(&back.0)
                ));
            }
        }
    }
    // A wrong length anywhere in an array refuses the array with the element's 22P03.
    let array_bad = invalid.len().min(run.count(500));
    for input in invalid.iter().take(array_bad) {
        let mut raws: Vec<Raw> = (0..run.rng.random_range(0..8))
            .map(|_| Raw(random_id(&mut run.rng).to_vec()))
            .collect();
        let at = run.rng.random_range(0..=raws.len());
        raws.insert(at, Raw(input.to_vec()));
        match c.query(&array_stmt, &[&raws]) {
            Ok(_) => run.fail(format!(
                "array element {} of {} was accepted",
                show(input),
                raws.len()
            )),
            Err(e) => {
                if e.as_db_error().is_none() {
                    run.abort(format!(
                        "array with element {} lost the connection: {e:?}",
                        show(input)
                    ));
                }
                if let Err(why) = binary_error_ok(input.len(), &e) {
                    run.fail(format!("array element {}: {why}", show(input)));
                }
            }
        }
    }

    // 3. COPY (FORMAT binary): the valid ones in one COPY, each of some wrong ones in its own.
    c.batch_execute("CREATE TABLE fuzz_copy (n int, id objectid)")
        .unwrap();
    let rows: Vec<(i32, &[u8])> = valid
        .iter()
        .enumerate()
        .map(|(n, b)| (n as i32, b.as_slice()))
        .collect();
    match copy_in(&mut c, &copy_rows(&rows)) {
        Ok(loaded) => assert_eq!(loaded as usize, valid.len()),
        Err(e) => run.abort(format!("COPY of {} valid ids failed: {e:?}", valid.len())),
    }
    let loaded = c
        .query("SELECT id, id::text FROM fuzz_copy ORDER BY n", &[])
        .unwrap();
    assert_eq!(loaded.len(), valid.len());
    for (row, input) in loaded.iter().zip(&valid) {
        let back: Raw = row.get(0);
        let text: String = row.get(1);
        if back.0 != **input || text != hex::encode(input) {
            run.fail(format!(
                "COPY row {}: came back as {} / {text:?}",
                show(input),
                hex::encode(&back.0)
            ));
        }
    }
    c.batch_execute("TRUNCATE fuzz_copy").unwrap();
    let copy_bad = invalid.len().min(run.count(200));
    for input in invalid.iter().skip(array_bad).take(copy_bad) {
        let good: Vec<[u8; 12]> = (0..run.rng.random_range(0..4))
            .map(|_| random_id(&mut run.rng))
            .collect();
        let mut rows: Vec<(i32, &[u8])> = good
            .iter()
            .enumerate()
            .map(|(n, b)| (n as i32, b.as_slice()))
            .collect();
        let at = run.rng.random_range(0..=rows.len());
        rows.insert(at, (-1, input.as_slice()));
        match copy_in(&mut c, &copy_rows(&rows)) {
            Ok(_) => run.fail(format!("COPY row {} was accepted", show(input))),
            Err(e) => {
                if e.as_db_error().is_none() {
                    run.abort(format!(
                        "COPY of {} lost the connection: {e:?}",
                        show(input)
                    ));
                }
                if let Err(why) = binary_error_ok(input.len(), &e) {
                    run.fail(format!("COPY row {}: {why}", show(input)));
                }
            }
        }
    }
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM fuzz_copy"),
        0,
        "a refused COPY loads nothing"
    );

    assert_server_survived(&run, &mut c, pid);
    let detail = format!(
        "{} valid; each as a parameter, the valid ones also in arrays and COPY, {array_bad} wrong in arrays, {copy_bad} in COPY",
        valid.len()
    );
    run.finish(total, &detail);
}

// ------------------------------------------------------------------------------------------
// The bytea cast

const BYTEA_FUNCTION: &str = "CREATE FUNCTION fuzz_bytea(inputs bytea[])
    RETURNS TABLE (n int, res text, back bytea, st text, msg text)
    LANGUAGE plpgsql AS $fn$
DECLARE
    o objectid;
BEGIN
    FOR i IN 1 .. coalesce(array_length(inputs, 1), 0) LOOP
        n := i; res := NULL; back := NULL; st := NULL; msg := NULL;
        BEGIN
            o := inputs[i]::objectid;
            res := o::text;
            back := o::bytea;
        EXCEPTION WHEN OTHERS THEN
            st := SQLSTATE; msg := SQLERRM;
        END;
        RETURN NEXT;
    END LOOP;
END
$fn$";

#[test]
fn bytea_cast() {
    let mut run = Run::new("bytea_cast");
    let total = run.count(20_000);
    let inputs: Vec<Vec<u8>> = (0..total).map(|_| binary_input(&mut run.rng)).collect();
    let mut c = database_with_extension("").client;
    c.batch_execute(BYTEA_FUNCTION).unwrap();
    let pid = backend_pid(&mut c);
    for batch in inputs.chunks(1_000) {
        let params: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
        let rows = c
            .query("SELECT * FROM fuzz_bytea($1)", &[&params])
            .unwrap_or_else(|e| {
                run.abort(format!("a batch of bytea inputs failed as a whole: {e:?}"))
            });
        assert_eq!(rows.len(), batch.len());
        for (row, input) in rows.iter().zip(batch) {
            let res: Option<String> = row.get("res");
            let back: Option<Vec<u8>> = row.get("back");
            let st: Option<String> = row.get("st");
            let msg: Option<String> = row.get("msg");
            let ok = if input.len() == 12 {
                res.as_deref() == Some(hex::encode(input).as_str())
                    && back.as_deref() == Some(input.as_slice())
                    && st.is_none()
            } else {
                // docs/reference.md: a bytea of another length is ERROR 22P03.
                res.is_none()
                    && st.as_deref() == Some("22P03")
                    && msg.as_deref().is_some_and(|m| {
                        m.starts_with("invalid length for type objectid: ")
                            && m.ends_with(&format!(" has {} bytes, expected 12", input.len()))
                    })
            };
            if !ok {
                run.fail(format!(
                    "bytea {}: gave {res:?} (back {back:02x?}), error {st:?} {msg:?}",
                    show(input)
                ));
            }
        }
    }
    assert_server_survived(&run, &mut c, pid);
    let valid = inputs.iter().filter(|i| i.len() == 12).count();
    run.finish(total, &format!("{valid} valid"));
}
