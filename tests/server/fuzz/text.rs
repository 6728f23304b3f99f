//! Text input: the `text::objectid` cast and `objectid_in(cstring)`, in a UTF-8 and a `SQL_ASCII`
//! database, and on 16+ the soft path.

use postgres::Client;

use super::generators::random_text;
use super::wire::RawText;
use super::{assert_server_survived, show, Run};
use crate::common::*;

fn text_function_sql(param_type: &str, to_text: &str, soft: bool) -> String {
    let soft = if soft {
        "soft_valid := pg_input_is_valid(v, 'objectid');
            SELECT e.message, e.sql_error_code INTO soft_msg, soft_st
              FROM pg_input_error_info(v, 'objectid') AS e;"
    } else {
        ""
    };
    format!(
        "CREATE FUNCTION fuzz_text(inputs {param_type}[])
            RETURNS TABLE (n int, cast_res text, cast_st text, cast_msg text, in_res text,
                           in_st text, in_msg text, sent bytea, round_trip bool,
                           soft_valid bool, soft_st text, soft_msg text)
            LANGUAGE plpgsql AS $fn$
        DECLARE
            v text;
            o objectid;
        BEGIN
            FOR i IN 1 .. coalesce(array_length(inputs, 1), 0) LOOP
                n := i;
                cast_res := NULL; cast_st := NULL; cast_msg := NULL; in_res := NULL; in_st := NULL;
                in_msg := NULL; sent := NULL; round_trip := NULL; soft_valid := NULL; soft_st := NULL;
                soft_msg := NULL;
                v := {to_text};
                BEGIN
                    o := v::objectid;
                    cast_res := o::text;
                    sent := objectid_send(o);
                    round_trip := cast_res::objectid = o;
                EXCEPTION WHEN OTHERS THEN
                    cast_st := SQLSTATE; cast_msg := SQLERRM;
                END;
                BEGIN
                    in_res := objectid_in(v::cstring)::text;
                EXCEPTION WHEN OTHERS THEN
                    in_st := SQLSTATE; in_msg := SQLERRM;
                END;
                {soft}
                RETURN NEXT;
            END LOOP;
        END
        $fn$"
    )
}

/// The documented value of a text input: 24 hex digits in either case, shown in lower case.
pub(super) fn m_text(input: &[u8]) -> Option<String> {
    (input.len() == 24 && input.iter().all(u8::is_ascii_hexdigit))
        .then(|| String::from_utf8(input.to_ascii_lowercase()).unwrap())
}

/// How an error message quotes bad input (docs/reference.md): its first 100 characters, and
/// "..." after them when there are more.
pub(super) fn m_quote(s: &str) -> String {
    match s.char_indices().nth(100) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s.to_string(),
    }
}

fn check_text_message(input: &[u8], msg: Option<&[u8]>) -> Result<(), String> {
    let Some(msg) = msg else {
        return Err("no message".into());
    };
    let ok = match std::str::from_utf8(input) {
        // docs/reference.md: ERROR 22P02 invalid input syntax for type objectid: "…"
        Ok(s) => {
            msg == format!("invalid input syntax for type objectid: \"{}\"", m_quote(s)).as_bytes()
        }
        // How bytes that are not UTF-8 are shown is not documented: the frame only.
        Err(_) => {
            msg.starts_with(b"invalid input syntax for type objectid: \"") && msg.ends_with(b"\"")
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!("message {:?}", String::from_utf8_lossy(msg)))
    }
}

/// Runs `inputs` through fuzz_text in `c` and checks every row against the model.
fn run_text_batch(
    run: &mut Run,
    c: &mut Client,
    db: &str,
    inputs: &[Vec<u8>],
    soft: bool,
    utf8: bool,
) {
    let rows = if utf8 {
        let texts: Vec<&str> = inputs
            .iter()
            .map(|b| std::str::from_utf8(b).unwrap())
            .collect();
        c.query("SELECT * FROM fuzz_text($1)", &[&texts])
    } else {
        let bytes: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        c.query("SELECT * FROM fuzz_text($1)", &[&bytes])
    }
    .unwrap_or_else(|e| {
        run.abort(format!(
            "a batch of text inputs failed as a whole in {db}: {e:?}"
        ))
    });
    assert_eq!(rows.len(), inputs.len(), "one row per input");
    for (row, input) in rows.iter().zip(inputs) {
        let n: i32 = row.get("n");
        let cast_res: Option<String> = row.get("cast_res");
        let cast_st: Option<String> = row.get("cast_st");
        let cast_msg: Option<RawText> = row.get("cast_msg");
        let in_res: Option<String> = row.get("in_res");
        let in_st: Option<String> = row.get("in_st");
        let in_msg: Option<RawText> = row.get("in_msg");
        let sent: Option<Vec<u8>> = row.get("sent");
        let round_trip: Option<bool> = row.get("round_trip");
        let soft_valid: Option<bool> = row.get("soft_valid");
        let soft_st: Option<String> = row.get("soft_st");
        let soft_msg: Option<RawText> = row.get("soft_msg");
        let mut problems = Vec::new();
        match m_text(input) {
            Some(hex) => {
                if cast_res.as_deref() != Some(hex.as_str()) || cast_st.is_some() {
                    problems.push(format!(
                        "text::objectid gave {cast_res:?}, error {cast_st:?}, expected {hex}"
                    ));
                }
                if in_res.as_deref() != Some(hex.as_str()) || in_st.is_some() {
                    problems.push(format!(
                        "objectid_in gave {in_res:?}, error {in_st:?}, expected {hex}"
                    ));
                }
                if sent.as_deref() != Some(hex::decode(&hex).unwrap().as_slice()) {
                    problems.push(format!("objectid_send gave {sent:02x?}"));
                }
                if round_trip != Some(true) {
                    problems.push(format!("text out and in again: equal = {round_trip:?}"));
                }
                if soft && (soft_valid != Some(true) || soft_st.is_some()) {
                    problems.push(format!(
                        "pg_input_is_valid = {soft_valid:?}, pg_input_error_info code {soft_st:?}"
                    ));
                }
            }
            None => {
                for (what, res, st, msg) in [
                    ("text::objectid", &cast_res, &cast_st, &cast_msg),
                    ("objectid_in", &in_res, &in_st, &in_msg),
                ] {
                    if res.is_some() || st.as_deref() != Some("22P02") {
                        problems.push(format!("{what} gave {res:?}, error {st:?}, expected 22P02"));
                    } else if let Err(e) =
                        check_text_message(input, msg.as_ref().map(|m| m.0.as_slice()))
                    {
                        problems.push(format!("{what}: {e}"));
                    }
                }
                if soft {
                    if soft_valid != Some(false) || soft_st.as_deref() != Some("22P02") {
                        problems.push(format!(
                            "pg_input_is_valid = {soft_valid:?}, pg_input_error_info code {soft_st:?}, expected false and 22P02"
                        ));
                    } else if let Err(e) =
                        check_text_message(input, soft_msg.as_ref().map(|m| m.0.as_slice()))
                    {
                        problems.push(format!("pg_input_error_info: {e}"));
                    }
                }
            }
        }
        if !problems.is_empty() {
            run.fail(format!(
                "text input #{n} in {db} {}: {}",
                show(input),
                problems.join("; ")
            ));
        }
    }
}

#[test]
fn text_input() {
    let mut run = Run::new("text_input");
    let total = run.count(40_000);
    let inputs: Vec<Vec<u8>> = (0..total).map(|_| random_text(&mut run.rng)).collect();
    let valid = inputs.iter().filter(|i| m_text(i).is_some()).count();

    // Every input, as bytes, in a database that stores any byte but NUL.
    let mut ascii = database_with_extension_encoded("ascii", "SQL_ASCII").client;
    let soft = server_version(&mut ascii) >= 160000;
    ascii
        .batch_execute(&text_function_sql(
            "bytea",
            "convert_from(inputs[i], 'SQL_ASCII')",
            soft,
        ))
        .unwrap();
    let ascii_pid = backend_pid(&mut ascii);
    for batch in inputs.chunks(1_000) {
        run_text_batch(
            &mut run,
            &mut ascii,
            "a SQL_ASCII database",
            batch,
            soft,
            false,
        );
    }

    // The UTF-8 ones again as text in a UTF-8 database, as clients send them.
    let utf8_inputs: Vec<Vec<u8>> = inputs
        .iter()
        .filter(|i| std::str::from_utf8(i).is_ok())
        .cloned()
        .collect();
    let mut utf8 = database_with_extension("utf8").client;
    utf8.batch_execute(&text_function_sql("text", "inputs[i]", soft))
        .unwrap();
    let utf8_pid = backend_pid(&mut utf8);
    for batch in utf8_inputs.chunks(1_000) {
        run_text_batch(&mut run, &mut utf8, "a UTF-8 database", batch, soft, true);
    }

    assert_server_survived(&run, &mut ascii, ascii_pid);
    assert_server_survived(&run, &mut utf8, utf8_pid);
    let detail = format!(
        "{valid} valid; {} again in UTF-8; soft input checked: {soft}",
        utf8_inputs.len()
    );
    run.finish(total, &detail);
}
