//! uuidv7(interval).

use super::generators::{random_interval, NEG_INF, POS_INF};
use super::models::{ms_floor, parse_uuid, unix_us, v7_ms, V7_MAX_MS};
use super::wire::{Iv, Ts, IV_INFINITY, IV_NEG_INFINITY};
use super::{assert_server_survived, Run};
use crate::common::*;

/// The loop over intervals; with `builtin` (PostgreSQL 18) also the server's own uuidv7(interval).
fn interval_function_sql(builtin: bool) -> String {
    let builtin = if builtin {
        "BEGIN
            u := pg_catalog.uuidv7(iv[i]);
            res18 := u::text;
        EXCEPTION WHEN OTHERS THEN
            st18 := SQLSTATE; msg18 := SQLERRM;
        END;"
    } else {
        ""
    };
    format!(
        "CREATE FUNCTION fuzz_interval(iv interval[])
            RETURNS TABLE (n int, res text, st text, msg text, lo timestamptz, lo_st text,
                           hi timestamptz, hi_st text, res18 text, st18 text, msg18 text)
            LANGUAGE plpgsql AS $fn$
        DECLARE
            t0 timestamptz;
            t1 timestamptz;
            u uuid;
        BEGIN
            FOR i IN 1 .. coalesce(array_length(iv, 1), 0) LOOP
                n := i; res := NULL; st := NULL; msg := NULL; lo := NULL; lo_st := NULL; hi := NULL;
                hi_st := NULL; res18 := NULL; st18 := NULL; msg18 := NULL;
                t0 := clock_timestamp();
                BEGIN
                    u := public.uuidv7(iv[i]);
                    res := u::text;
                EXCEPTION WHEN OTHERS THEN
                    st := SQLSTATE; msg := SQLERRM;
                END;
                t1 := clock_timestamp();
                -- The clock reading uuidv7 shifted lies between t0 and t1.
                BEGIN lo := t0 + iv[i]; EXCEPTION WHEN OTHERS THEN lo_st := SQLSTATE; END;
                BEGIN hi := t1 + iv[i]; EXCEPTION WHEN OTHERS THEN hi_st := SQLSTATE; END;
                {builtin}
                RETURN NEXT;
            END LOOP;
        END
        $fn$"
    )
}

/// As 18.6 bounds uuidv7(interval): in microseconds, so only the first one of the last millisecond.
fn v7_carries(t: Option<Ts>) -> bool {
    t.is_some_and(|Ts(t)| {
        t != NEG_INF && t != POS_INF && (0..=V7_MAX_MS * 1000).contains(&unix_us(t))
    })
}

#[test]
fn interval_shift() {
    let mut run = Run::new("interval_shift");
    let total = run.count(20_000);
    let mut c = database_with_extension("").client;
    // Infinite intervals exist from PostgreSQL 17 on.
    let infinite = server_version(&mut c) >= 170000;
    let inputs: Vec<Iv> = (0..total)
        .map(|_| random_interval(&mut run.rng, infinite))
        .collect();
    // In UTC, adding an interval to a later time never gives an earlier one.
    // PostgreSQL 18 has its own uuidv7(interval): ours must fail where it fails, alike.
    let builtin = server_version(&mut c) >= 180000;
    c.batch_execute(&format!(
        "SET TimeZone = 'UTC'; {}",
        interval_function_sql(builtin)
    ))
    .unwrap();
    let pid = backend_pid(&mut c);
    let (mut made, mut refused) = (0, 0);
    for batch in inputs.chunks(1_000) {
        let rows = c
            .query("SELECT * FROM fuzz_interval($1)", &[&batch.to_vec()])
            .unwrap_or_else(|e| {
                run.abort(format!("a batch of intervals failed as a whole: {e:?}"))
            });
        assert_eq!(rows.len(), batch.len());
        for (row, iv) in rows.iter().zip(batch) {
            let res: Option<String> = row.get("res");
            let st: Option<String> = row.get("st");
            let msg: Option<String> = row.get("msg");
            let lo: Option<Ts> = row.get("lo");
            let hi: Option<Ts> = row.get("hi");
            let lo_st: Option<String> = row.get("lo_st");
            let hi_st: Option<String> = row.get("hi_st");
            let res18: Option<String> = row.get("res18");
            let st18: Option<String> = row.get("st18");
            let msg18: Option<String> = row.get("msg18");
            let is_infinite = infinite && (*iv == IV_INFINITY || *iv == IV_NEG_INFINITY);
            let must_work = !is_infinite && v7_carries(lo) && v7_carries(hi);
            let must_fail = is_infinite || (!v7_carries(lo) && !v7_carries(hi));
            let what = match (&res, &st) {
                (Some(text), None) => {
                    made += 1;
                    match parse_uuid(text) {
                        Some(u) => {
                            let ms = v7_ms(&u);
                            let lo_ms = lo.filter(|_| v7_carries(lo)).map(|Ts(t)| ms_floor(t));
                            let hi_ms = hi.filter(|_| v7_carries(hi)).map(|Ts(t)| ms_floor(t));
                            if u[6] >> 4 != 7 || u[8] >> 6 != 0b10 {
                                Some(format!("{text} is not a v7 of the RFC variant"))
                            } else if must_fail {
                                Some(format!("made {text} where clock + interval is {lo:?} .. {hi:?} ({lo_st:?}, {hi_st:?})"))
                            } else if lo_ms.is_some_and(|l| ms < l) || hi_ms.is_some_and(|h| ms > h)
                            {
                                Some(format!("{text} carries millisecond {ms}, outside clock + interval {lo_ms:?} .. {hi_ms:?}"))
                            } else {
                                None
                            }
                        }
                        None => Some(format!("not a uuid's text: {text:?}")),
                    }
                }
                (None, Some(state)) => {
                    refused += 1;
                    let msg = msg.as_deref().unwrap_or("");
                    if must_work {
                        Some(format!(
                            "error {state} {msg:?} where clock + interval is {lo:?} .. {hi:?}"
                        ))
                    } else if state != "22008" {
                        Some(format!("error {state} {msg:?}, expected 22008"))
                    } else if is_infinite && msg != "interval out of range for UUID version 7" {
                        Some(format!("error {msg:?} for an infinite interval"))
                    } else {
                        None
                    }
                }
                _ => Some(format!("gave {res:?} and error {st:?}")),
            };
            // Where the outcome is settled (not at the edge of the range), 18's own function
            // gives the same: a value, or the same SQLSTATE and message.
            let what = what.or_else(|| {
                let settled = must_work || must_fail;
                (builtin && settled && (st != st18 || msg != msg18 || res.is_some() != res18.is_some())).then(|| {
                    format!("ours gave {res:?} error {st:?} {msg:?}, 18's own {res18:?} error {st18:?} {msg18:?}")
                })
            });
            if let Some(why) = what {
                run.fail(format!(
                    "uuidv7(interval {} months {} days {} µs): {why}",
                    iv.months, iv.days, iv.micros
                ));
            }
        }
    }
    assert_server_survived(&run, &mut c, pid);
    run.finish(
        total,
        &format!("{made} made, {refused} refused; infinite intervals: {infinite}; compared with 18's own: {builtin}"),
    );
}
