//! jsonb cast (docs/mongodb.md): random JSON of every shape, built here as a tree so that the
//! model sees what jsonb sees (the last of duplicate keys wins, escapes are decoded).

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::generators::random_text;
use super::text::{m_quote, m_text};
use super::{assert_server_survived, Run};
use crate::common::*;

enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

/// What `jsonb::objectid` must give: the id's hex, NULL, or an error's SQLSTATE and, for bad hex,
/// the string the message quotes.
#[derive(Debug, PartialEq)]
enum JsonOutcome {
    Id(String),
    Null,
    BadHex(String),
    NotAnObjectId,
}

fn m_jsonb(j: &J) -> JsonOutcome {
    let hex = |s: &str| match m_text(s.as_bytes()) {
        Some(hex) => JsonOutcome::Id(hex),
        None => JsonOutcome::BadHex(s.to_string()),
    };
    match j {
        J::Null => JsonOutcome::Null,
        J::Str(s) => hex(s),
        J::Obj(pairs) => {
            let mut keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
            keys.sort_unstable();
            keys.dedup();
            match pairs.iter().rev().find(|(k, _)| k == "$oid") {
                Some((_, J::Str(s))) if keys.len() == 1 => hex(s),
                _ => JsonOutcome::NotAnObjectId,
            }
        }
        _ => JsonOutcome::NotAnObjectId,
    }
}

/// A JSON string literal, escaping what must be and, at random, what need not be.
fn json_string(rng: &mut StdRng, s: &str, out: &mut String) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if rng.random_bool(0.05) && (c as u32) < 0x10000 => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_text(rng: &mut StdRng, j: &J, out: &mut String) {
    let space = |rng: &mut StdRng, out: &mut String| {
        if rng.random_bool(0.2) {
            out.push_str([" ", "\n", "\t", "  "].choose(rng).unwrap());
        }
    };
    match j {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Num(n) => out.push_str(n),
        J::Str(s) => json_string(rng, s, out),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(rng, out);
                json_text(rng, item, out);
            }
            out.push(']');
        }
        J::Obj(pairs) => {
            out.push('{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(rng, out);
                json_string(rng, k, out);
                out.push(':');
                space(rng, out);
                json_text(rng, v, out);
            }
            out.push('}');
        }
    }
}

/// A string for JSON: the text fuzzer's inputs where they are UTF-8 (jsonb holds no NUL).
fn json_str(rng: &mut StdRng) -> String {
    loop {
        if let Ok(s) = String::from_utf8(random_text(rng)) {
            return s;
        }
    }
}

fn random_json(rng: &mut StdRng, depth: u32) -> J {
    let key = |rng: &mut StdRng| -> String {
        match rng.random_range(0..10) {
            0..=5 => "$oid".into(),
            6 => ["$OID", "oid", "$oid ", " $oid", "$Oid", "$oid\u{0}x"]
                .choose(rng)
                .unwrap()
                .replace('\0', ""),
            7 => ["_id", "$date", "$numberLong", ""]
                .choose(rng)
                .unwrap()
                .to_string(),
            _ => json_str(rng).chars().take(8).collect(),
        }
    };
    match rng.random_range(0..100) {
        0..=29 => J::Str(json_str(rng)),
        30..=64 => {
            let n = *[0usize, 1, 1, 1, 1, 2, 3].choose(rng).unwrap();
            J::Obj(
                (0..n)
                    .map(|_| {
                        let k = key(rng);
                        let v = if rng.random_bool(0.7) {
                            J::Str(json_str(rng))
                        } else if depth < 40 {
                            random_json(rng, depth + 1)
                        } else {
                            J::Null
                        };
                        (k, v)
                    })
                    .collect(),
            )
        }
        65..=72 => J::Null,
        73..=78 => J::Bool(rng.random_bool(0.5)),
        79..=86 => J::Num(
            ["0", "-1", "1e308", "12345678901234567890123", "0.5", "-0"]
                .choose(rng)
                .unwrap()
                .to_string(),
        ),
        87..=94 if depth < 40 => J::Arr(
            (0..rng.random_range(0..3))
                .map(|_| random_json(rng, depth + 1))
                .collect(),
        ),
        _ => {
            // Deep nesting around an Extended JSON ObjectId.
            let mut j = J::Obj(vec![("$oid".into(), J::Str(json_str(rng)))]);
            for _ in 0..rng.random_range(1..200) {
                j = if rng.random_bool(0.5) {
                    J::Arr(vec![j])
                } else {
                    J::Obj(vec![("$oid".into(), j)])
                };
            }
            j
        }
    }
}

#[test]
fn jsonb_cast() {
    let mut run = Run::new("jsonb_cast");
    let total = run.count(5_000);
    let values: Vec<J> = (0..total).map(|_| random_json(&mut run.rng, 0)).collect();
    let texts: Vec<String> = values
        .iter()
        .map(|j| {
            let mut s = String::new();
            json_text(&mut run.rng, j, &mut s);
            s
        })
        .collect();
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE FUNCTION fuzz_jsonb(inputs text[])
            RETURNS TABLE (n int, parse_st text, res text, is_null bool, st text, msg text,
                           back text, round_trip bool)
            LANGUAGE plpgsql AS $fn$
        DECLARE
            j jsonb;
            o objectid;
        BEGIN
            FOR i IN 1 .. coalesce(array_length(inputs, 1), 0) LOOP
                n := i; parse_st := NULL; res := NULL; is_null := NULL; st := NULL; msg := NULL;
                back := NULL; round_trip := NULL;
                BEGIN
                    j := inputs[i]::jsonb;
                EXCEPTION WHEN OTHERS THEN
                    parse_st := SQLSTATE || ' ' || SQLERRM;
                END;
                IF parse_st IS NULL THEN
                    BEGIN
                        o := j::objectid;
                        is_null := o IS NULL;
                        res := o::text;
                        back := o::jsonb::text;
                        round_trip := o::jsonb::objectid = o;
                    EXCEPTION WHEN OTHERS THEN
                        st := SQLSTATE; msg := SQLERRM;
                    END;
                END IF;
                RETURN NEXT;
            END LOOP;
        END
        $fn$;",
    )
    .unwrap();
    let pid = backend_pid(&mut c);
    let mut outcomes: std::collections::BTreeMap<&'static str, usize> = Default::default();
    for (batch_values, batch_texts) in values.chunks(500).zip(texts.chunks(500)) {
        let rows = c
            .query("SELECT * FROM fuzz_jsonb($1)", &[&batch_texts])
            .unwrap_or_else(|e| {
                run.abort(format!("a batch of jsonb inputs failed as a whole: {e:?}"))
            });
        assert_eq!(rows.len(), batch_texts.len(), "one row per input");
        for ((row, j), text) in rows.iter().zip(batch_values).zip(batch_texts) {
            let parse_st: Option<String> = row.get("parse_st");
            let res: Option<String> = row.get("res");
            let is_null: Option<bool> = row.get("is_null");
            let st: Option<String> = row.get("st");
            let msg: Option<String> = row.get("msg");
            let back: Option<String> = row.get("back");
            let round_trip: Option<bool> = row.get("round_trip");
            let shown: String = text.chars().take(200).collect();
            if let Some(p) = parse_st {
                run.fail(format!(
                    "jsonb_in refused a generated document ({p}): {shown:?}"
                ));
                continue;
            }
            let want = m_jsonb(j);
            let ok = match &want {
                JsonOutcome::Id(hex) => {
                    outcomes.entry("id").and_modify(|n| *n += 1).or_insert(1);
                    res.as_deref() == Some(hex)
                        && back == Some(format!("{{\"$oid\": \"{hex}\"}}"))
                        && round_trip == Some(true)
                }
                JsonOutcome::Null => {
                    outcomes.entry("null").and_modify(|n| *n += 1).or_insert(1);
                    is_null == Some(true) && st.is_none()
                }
                JsonOutcome::BadHex(s) => {
                    outcomes.entry("22P02").and_modify(|n| *n += 1).or_insert(1);
                    st.as_deref() == Some("22P02")
                        && msg
                            == Some(format!(
                                "invalid input syntax for type objectid: \"{}\"",
                                m_quote(s)
                            ))
                }
                JsonOutcome::NotAnObjectId => {
                    outcomes.entry("22023").and_modify(|n| *n += 1).or_insert(1);
                    st.as_deref() == Some("22023")
                        && msg.as_deref().is_some_and(|m| {
                            m.starts_with("cannot cast jsonb ") && m.ends_with(" to type objectid")
                        })
                }
            };
            if !ok {
                run.fail(format!(
                    "jsonb::objectid of {shown:?} gave {res:?} (null {is_null:?}, back {back:?}, \
                     round trip {round_trip:?}), error {st:?} {msg:?}; expected {want:?}"
                ));
            }
        }
    }
    assert_server_survived(&run, &mut c, pid);
    run.finish(total, &format!("outcomes {outcomes:?}"));
}
