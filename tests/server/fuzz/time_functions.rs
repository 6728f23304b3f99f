//! Functions taking a timestamptz.

use std::collections::HashSet;

use postgres::Client;
use rand::seq::IndexedRandom;

use super::generators::{random_time, NEG_INF, POS_INF};
use super::models::{
    extracted, m_bound, m_first_after, m_first_at_or_after, m_from_time, m_last_at_or_before,
    m_last_before, m_upper_before, m_v7_bound, m_v7_from_time, m_v7_upper_before, oid_time,
    parse_uuid, show_time, step, unix_us, OID_MAX, OID_MIN,
};
use super::wire::Ts;
use super::{assert_server_survived, Run};
use crate::common::*;

#[derive(Clone, Copy, PartialEq)]
enum Returns {
    ObjectId,
    Uuid,
}

/// The functions of one timestamptz argument, and whether each is in every build.
const TIME_FUNCTIONS: &[(&str, Returns, bool)] = &[
    ("objectid_from_time", Returns::ObjectId, true),
    ("gen_objectid_at", Returns::ObjectId, true),
    ("objectid_lower_bound", Returns::ObjectId, true),
    ("objectid_upper_bound", Returns::ObjectId, true),
    ("objectid_upper_bound_before", Returns::ObjectId, true),
    ("objectid_first_at_or_after", Returns::ObjectId, false),
    ("objectid_first_after", Returns::ObjectId, false),
    ("objectid_last_at_or_before", Returns::ObjectId, false),
    ("objectid_last_before", Returns::ObjectId, false),
    ("uuidv7_from_time", Returns::Uuid, true),
    ("uuidv7_at", Returns::Uuid, true),
    ("uuidv7_lower_bound", Returns::Uuid, true),
    ("uuidv7_upper_bound", Returns::Uuid, true),
    ("uuidv7_upper_bound_before", Returns::Uuid, true),
];

fn time_function_sql(functions: &[(&str, Returns)]) -> String {
    let mut body = String::new();
    for (k, (name, returns)) in functions.iter().enumerate() {
        let j = k + 1;
        let (var, text, time) = match returns {
            Returns::ObjectId => ("o", "o::text", "objectid_timestamp(o)"),
            Returns::Uuid => ("u", "u::text", "public.uuid_extract_timestamp(u)"),
        };
        body.push_str(&format!(
            "
                BEGIN
                    {var} := public.{name}(ts[i]);
                    res[{j}] := {text};
                    ts_out[{j}] := {time};
                EXCEPTION WHEN OTHERS THEN
                    st[{j}] := SQLSTATE; msg[{j}] := SQLERRM;
                END;"
        ));
    }
    format!(
        "CREATE FUNCTION fuzz_time(ts timestamptz[])
            RETURNS TABLE (n int, res text[], st text[], msg text[], ts_out timestamptz[])
            LANGUAGE plpgsql AS $fn$
        DECLARE
            o objectid;
            u uuid;
        BEGIN
            FOR i IN 1 .. coalesce(array_length(ts, 1), 0) LOOP
                n := i;
                res := array_fill(NULL::text, ARRAY[{k}]);
                st := res;
                msg := res;
                ts_out := array_fill(NULL::timestamptz, ARRAY[{k}]);
                {body}
                RETURN NEXT;
            END LOOP;
        END
        $fn$",
        k = functions.len()
    )
}

/// What one call gave: a value (its text and the time the server reads from it), NULL, or an error.
struct Call<'a> {
    pub(super) res: Option<&'a str>,
    pub(super) st: Option<&'a str>,
    pub(super) msg: Option<&'a str>,
    pub(super) time: Option<i64>,
}

/// Checks one objectid-valued call against the model; returns what is wrong.
fn check_objectid_call(
    name: &str,
    t: i64,
    call: &Call,
    gen_seen: &mut HashSet<[u8; 12]>,
) -> Result<(), String> {
    let got: Option<[u8; 12]> = match call.res {
        Some(s) => Some(
            hex::decode(s)
                .ok()
                .and_then(|b| <[u8; 12]>::try_from(b).ok())
                .ok_or_else(|| format!("not an objectid's text: {s:?}"))?,
        ),
        None => None,
    };
    if let Some(id) = got {
        // objectid_timestamp of the result is the second in its first 4 bytes.
        if call.time != Some(oid_time(&id)) {
            return Err(format!(
                "objectid_timestamp({}) gave {:?}",
                hex::encode(id),
                call.time
            ));
        }
    }
    let value = |want: [u8; 12]| -> Result<(), String> {
        match (got, call.st) {
            (Some(id), None) if id == want => Ok(()),
            _ => Err(format!(
                "gave {:?} error {:?} {:?}, expected {}",
                call.res,
                call.st,
                call.msg,
                hex::encode(want)
            )),
        }
    };
    let value_or_null = |want: Option<[u8; 12]>| -> Result<(), String> {
        match (want, got, call.st) {
            (None, None, None) => Ok(()),
            (Some(w), Some(id), None) if id == w => Ok(()),
            _ => Err(format!(
                "gave {:?} error {:?} {:?}, expected {}",
                call.res,
                call.st,
                call.msg,
                want.map_or("NULL".into(), hex::encode)
            )),
        }
    };
    let out_of_range = || -> Result<(), String> {
        // docs/reference.md: ERROR 22008 timestamp out of range for type objectid: "…"
        let msg_ok = call.msg.is_some_and(|m| {
            m.starts_with("timestamp out of range for type objectid: \"")
                && m.ends_with('"')
                && match t {
                    POS_INF => m.ends_with("\"infinity\""),
                    NEG_INF => m.ends_with("\"-infinity\""),
                    _ => true,
                }
        });
        if call.res.is_none() && call.st == Some("22008") && msg_ok {
            Ok(())
        } else {
            Err(format!(
                "gave {:?} error {:?} {:?}, expected 22008",
                call.res, call.st, call.msg
            ))
        }
    };
    match name {
        "objectid_from_time" => match m_from_time(t) {
            Some(want) => {
                value(want)?;
                // The smallest id of t's second: objectid_timestamp(it) <= t < it + 1 s.
                let at = call.time.unwrap();
                if !(at <= t && t - at < 1_000_000) {
                    return Err(format!(
                        "objectid_timestamp of the result {at} is not the second of t"
                    ));
                }
                Ok(())
            }
            None => out_of_range(),
        },
        "gen_objectid_at" => match m_from_time(t) {
            Some(want) => {
                let id = got.filter(|_| call.st.is_none()).ok_or_else(|| {
                    format!(
                        "gave {:?} error {:?} {:?}, expected an id of second {}",
                        call.res,
                        call.st,
                        call.msg,
                        hex::encode(&want[..4])
                    )
                })?;
                if id[..4] != want[..4] {
                    return Err(format!(
                        "gave {}, expected the second {}",
                        hex::encode(id),
                        hex::encode(&want[..4])
                    ));
                }
                // It shares the generator's counter: every id it makes is new.
                if !gen_seen.insert(id) {
                    return Err(format!("gave {} a second time", hex::encode(id)));
                }
                Ok(())
            }
            None => out_of_range(),
        },
        "objectid_lower_bound" => {
            let want = m_bound(t, 0);
            value(want)?;
            // objectid_timestamp(objectid_lower_bound(t)) <= t, unless t is before every id.
            if want != OID_MIN && call.time.unwrap() > t {
                return Err("objectid_timestamp(objectid_lower_bound(t)) > t".into());
            }
            Ok(())
        }
        "objectid_upper_bound" => value(m_bound(t, 0xff)),
        "objectid_upper_bound_before" => value(m_upper_before(t)),
        "objectid_first_at_or_after"
        | "objectid_first_after"
        | "objectid_last_at_or_before"
        | "objectid_last_before" => {
            // The model's answer, and the condition on objectid_timestamp(id) as a test.
            type Condition = fn(i64, i64) -> bool;
            let (want, satisfies): (Option<[u8; 12]>, Condition) = match name {
                "objectid_first_at_or_after" => (m_first_at_or_after(t), |a, t| a >= t),
                "objectid_first_after" => (m_first_after(t), |a, t| a > t),
                "objectid_last_at_or_before" => (m_last_at_or_before(t), |a, t| a <= t),
                _ => (m_last_before(t), |a, t| a < t),
            };
            value_or_null(want)?;
            // The documented relation: the result satisfies objectid_timestamp(id) <op> t and
            // its neighbour on the open side does not (or there is none).
            if let Some(id) = got {
                if !satisfies(call.time.unwrap(), t) {
                    return Err(format!(
                        "objectid_timestamp({}) does not satisfy the condition",
                        hex::encode(id)
                    ));
                }
                let first = name.starts_with("objectid_first");
                let edge = if first { OID_MIN } else { OID_MAX };
                if id != edge {
                    let neighbour = step(&id, !first);
                    if satisfies(oid_time(&neighbour), t) {
                        return Err(format!(
                            "{} also satisfies the condition",
                            hex::encode(neighbour)
                        ));
                    }
                }
            }
            Ok(())
        }
        _ => unreachable!("{name}"),
    }
}

fn check_uuid_call(name: &str, t: i64, call: &Call) -> Result<(), String> {
    let got = match call.res {
        Some(s) => Some(parse_uuid(s).ok_or_else(|| format!("not a uuid's text: {s:?}"))?),
        None => None,
    };
    if let Some(u) = &got {
        // uuid_extract_timestamp reads the millisecond of a v7, NULL for anything else.
        if call.time != extracted(u) {
            return Err(format!(
                "uuid_extract_timestamp({}) gave {:?}, expected {:?}",
                hex::encode(u),
                call.time,
                extracted(u)
            ));
        }
    }
    let value = |want: [u8; 16]| -> Result<(), String> {
        match (&got, call.st) {
            (Some(u), None) if u.as_slice() == want => Ok(()),
            _ => Err(format!(
                "gave {:?} error {:?} {:?}, expected {}",
                call.res,
                call.st,
                call.msg,
                hex::encode(want)
            )),
        }
    };
    let out_of_range = || -> Result<(), String> {
        // docs/reference.md: SQLSTATE 22008 timestamp out of range for UUID version 7.
        if got.is_none()
            && call.st == Some("22008")
            && call.msg == Some("timestamp out of range for UUID version 7")
        {
            Ok(())
        } else {
            Err(format!(
                "gave {:?} error {:?} {:?}, expected 22008",
                call.res, call.st, call.msg
            ))
        }
    };
    match name {
        "uuidv7_from_time" => match m_v7_from_time(t) {
            Some(want) => value(want),
            None => out_of_range(),
        },
        "uuidv7_at" => match m_v7_from_time(t) {
            Some(first) => {
                let u = got.filter(|_| call.st.is_none()).ok_or_else(|| {
                    format!(
                        "gave {:?} error {:?} {:?}, expected a v7",
                        call.res, call.st, call.msg
                    )
                })?;
                // A v7 of t's millisecond whose 12-bit fraction is t's microseconds in it.
                let fraction = (u16::from(u[6] & 0x0f) << 8) | u16::from(u[7]);
                let want_fraction = (unix_us(t).rem_euclid(1_000) * 4096 / 1_000) as u16;
                if u[..6] != first[..6]
                    || u[6] >> 4 != 7
                    || u[8] >> 6 != 0b10
                    || fraction != want_fraction
                {
                    return Err(format!(
                        "gave {}, expected millisecond {}, version 7, variant 10, fraction {want_fraction:#05x}",
                        hex::encode(&u),
                        hex::encode(&first[..6])
                    ));
                }
                Ok(())
            }
            None => out_of_range(),
        },
        "uuidv7_lower_bound" => value(m_v7_bound(t, false)),
        "uuidv7_upper_bound" => value(m_v7_bound(t, true)),
        "uuidv7_upper_bound_before" => value(m_v7_upper_before(t)),
        _ => unreachable!("{name}"),
    }
}

/// Functions of `TIME_FUNCTIONS` this build has in schema public, taking one timestamptz.
fn present_time_functions(c: &mut Client) -> Vec<(&'static str, Returns)> {
    let names: Vec<String> = c
        .query(
            "SELECT proname::text FROM pg_proc WHERE pronamespace = 'public'::regnamespace \
             AND pronargs = 1 AND proargtypes[0] = 'timestamptz'::regtype",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut present = Vec::new();
    for (name, returns, always) in TIME_FUNCTIONS {
        if names.iter().any(|n| n == name) {
            present.push((*name, *returns));
        } else if *always {
            panic!("{name}(timestamptz) is missing from the extension");
        } else {
            println!("fuzz::time_functions: {name}(timestamptz) is not in this build; skipped");
        }
    }
    present
}

#[test]
fn time_functions() {
    let mut run = Run::new("time_functions");
    let total = run.count(30_000);
    let inputs: Vec<i64> = (0..total).map(|_| random_time(&mut run.rng)).collect();
    let mut c = database_with_extension("").client;
    let functions = present_time_functions(&mut c);
    c.batch_execute(&time_function_sql(&functions)).unwrap();
    let pid = backend_pid(&mut c);
    let mut gen_seen = HashSet::new();
    let zones = [
        "UTC",
        "America/New_York",
        "Asia/Kathmandu",
        "Pacific/Chatham",
        "Etc/GMT+12",
    ];
    for batch in inputs.chunks(1_000) {
        // The functions are about instants: the session's time zone must not matter.
        let zone = *zones.choose(&mut run.rng).unwrap();
        c.batch_execute(&format!("SET TimeZone = '{zone}'"))
            .unwrap();
        let params: Vec<Ts> = batch.iter().map(|t| Ts(*t)).collect();
        let rows = c
            .query("SELECT * FROM fuzz_time($1)", &[&params])
            .unwrap_or_else(|e| run.abort(format!("a batch of times failed as a whole: {e:?}")));
        assert_eq!(rows.len(), batch.len());
        for (row, &t) in rows.iter().zip(batch) {
            let res: Vec<Option<String>> = row.get("res");
            let st: Vec<Option<String>> = row.get("st");
            let msg: Vec<Option<String>> = row.get("msg");
            let times: Vec<Option<Ts>> = row.get("ts_out");
            for (k, (name, returns)) in functions.iter().enumerate() {
                let call = Call {
                    res: res[k].as_deref(),
                    st: st[k].as_deref(),
                    msg: msg[k].as_deref(),
                    time: times[k].map(|t| t.0),
                };
                let outcome = match returns {
                    Returns::ObjectId => check_objectid_call(name, t, &call, &mut gen_seen),
                    Returns::Uuid => check_uuid_call(name, t, &call),
                };
                if let Err(why) = outcome {
                    run.fail(format!(
                        "{name}({}) with TimeZone {zone}: {why}",
                        show_time(t)
                    ));
                }
            }
        }
    }
    assert_server_survived(&run, &mut c, pid);
    let names: Vec<&str> = functions.iter().map(|f| f.0).collect();
    run.finish(
        total,
        &format!(
            "each through {} functions: {}",
            names.len(),
            names.join(", ")
        ),
    );
}
