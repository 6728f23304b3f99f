//! The rekey's record and the caller's advisory locks, which the owner's code must not change.

use std::thread;
use std::time::{Duration, Instant};

use postgres::Client;

use super::{owner_with_a_mode, refused};
use crate::common::*;

/// A table's owner writes the record of its table's rekey (row-level security lets it): no value it
/// writes there breaks rekey_status for the other roles, even while it poses as running.
#[test]
fn a_forged_record_does_not_break_rekey_status() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    hostile_role(&mut admin, "rekey_forger");
    admin
        .batch_execute("CREATE SCHEMA m AUTHORIZATION rekey_forger")
        .unwrap();
    let mut owner = connect_as(&db, "rekey_forger");
    owner
        .batch_execute(
            "CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz DEFAULT now());
             INSERT INTO objectid_internal.rekey_state (relid, key_constraint, key_column, time_column, time_zone,
                 fallback_time, mapping_table, keys_total, keys_done, run_keys_done, started_at, run_started_at,
                 last_batch_at)
             VALUES ('m.t'::regclass, (SELECT oid FROM pg_constraint WHERE conrelid = 'm.t'::regclass AND contype = 'p'),
                     'id', 'created_at', 'UTC', now(), 'm.t'::regclass, 9000000000000000000, -9000000000000000000, 1,
                     now() - interval '1000000 s', now() - interval '1000000 s', now())",
        )
        .unwrap();
    let key = one_i64(
        &mut owner,
        "SELECT (1919249273::bigint << 32) | 'm.t'::regclass::oid::bigint",
    );
    // Holding the table's rekey lock and busy: what rekey_status calls running.
    let holder = thread::spawn(move || {
        owner
            .batch_execute(&format!("SELECT pg_advisory_lock({key}), pg_sleep(3)"))
            .unwrap();
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while one_i64(
        &mut admin,
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 'm.t'::regclass::oid AND granted",
    ) == 0
    {
        assert!(Instant::now() < deadline, "the lock was never taken");
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        one_string(
            &mut admin,
            "SELECT state || ' ' || coalesce(time_left::text, 'unknown') FROM rekey_status"
        ),
        "running unknown"
    );
    holder.join().unwrap();
}

/// The owner's code takes a session-level advisory lock, releases one the caller holds, then fails,
/// or releases every lock of the caller's session and returns: neither leaves the caller's locks
/// changed (src/rekey/as_owner.rs runs the code in a
/// subtransaction of its own and puts the session's advisory locks back before the error goes on).
#[test]
fn an_error_in_the_owners_code_leaves_the_callers_locks_as_they_were() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    hostile_role(&mut admin, "rekey_error_owner");
    admin
        .batch_execute("CREATE SCHEMA m AUTHORIZATION rekey_error_owner")
        .unwrap();
    let mut owner = connect_as(&db, "rekey_error_owner");
    owner
        .batch_execute(
            "CREATE FUNCTION m.grab_and_fail() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_error_owner' THEN
                 PERFORM pg_advisory_lock(4711);
                 PERFORM pg_advisory_unlock(7);
                 RAISE EXCEPTION 'the owner''s code fails';
               END IF;
               RETURN true;
             END $$;
             CREATE FUNCTION m.release_all() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_error_owner' THEN PERFORM pg_advisory_unlock_all(); END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.grab_and_fail()));
             INSERT INTO m.t (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.t ALTER COLUMN id SET DEFAULT public.uuidv7();
             CREATE TABLE m.u (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.release_all()));
             INSERT INTO m.u (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.u ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    let locks = "SELECT coalesce(string_agg(objid::text, ',' ORDER BY objid), '') FROM pg_locks
                  WHERE locktype = 'advisory' AND pid = pg_backend_pid()";
    admin.batch_execute("SELECT pg_advisory_lock(7)").unwrap();
    assert_eq!(one_string(&mut admin, locks), "7");
    for call in [
        "CALL rekey_run('m.t', 'at')",
        "CALL rekey_run('m.t', 'at', in_one_transaction => true)",
    ] {
        let message = expect_error(
            &mut admin,
            call,
            &postgres::error::SqlState::RAISE_EXCEPTION,
        );
        assert!(
            message.contains("the owner's code fails"),
            "{call}: {message}"
        );
        assert_eq!(one_string(&mut admin, locks), "7", "{call}");
    }
    // Released without an error: refused (42501), and the caller's lock is taken again.
    let message = expect_error(
        &mut admin,
        "CALL rekey_run('m.u', 'at')",
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(message.contains("advisory locks"), "{message}");
    assert_eq!(one_string(&mut admin, locks), "7");
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM m.t WHERE uuid_extract_version(id) = 4"
        ),
        5
    );
    assert!(!is_superuser(&mut admin, "rekey_error_owner"));
}

/// The fourth review: the owner's code could change the caller's advisory locks in ways the set
/// of (key, mode) pairs pg_locks shows does not reveal: a second session-level hold of a lock the
/// caller holds (the caller's unlock would then leave it held), a session-level hold swapped for a
/// transaction-level one (gone at the transaction's end), a transaction-level hold added to one
/// the caller holds, and a session-level hold of the rekey's own lock (the table would show as
/// being rekeyed until the session ends). The holds are now counted: each is refused and undone.
/// A lock taken and released again inside leaves nothing, and is no reason to refuse.
#[test]
fn review_4_every_change_to_the_callers_advisory_locks_is_refused() {
    let (
        Database {
            name: db,
            client: mut admin,
        },
        mut owner,
    ) = owner_with_a_mode("rekey_lock_owner");
    owner
        .batch_execute(
            "CREATE FUNCTION m.act() RETURNS boolean LANGUAGE plpgsql AS $$
             DECLARE a text := (SELECT action FROM m.mode);
             BEGIN
               IF session_user = 'rekey_lock_owner' THEN RETURN true; END IF;
               IF a = 'again' THEN PERFORM pg_advisory_lock(7);
               ELSIF a = 'swap' THEN PERFORM pg_advisory_unlock(7); PERFORM pg_advisory_xact_lock(7);
               ELSIF a = 'xact' THEN PERFORM pg_advisory_xact_lock(7);
               ELSIF a = 'rekey lock' THEN
                 PERFORM pg_advisory_lock((1919249273::bigint << 32) | 'm.t'::regclass::oid::bigint);
               ELSIF a = 'balanced' THEN PERFORM pg_advisory_lock(8), pg_advisory_unlock(8);
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.act()));
             INSERT INTO m.t (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.t ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    // How many times the session holds lock 7 at session level (each unlock that succeeds is one),
    // then held once again; and every other advisory lock the session holds.
    let holds_of_7 = |admin: &mut Client| -> i64 {
        let n = one_i64(
            admin,
            "SELECT count(*) FROM (SELECT pg_advisory_unlock(7) AS u FROM generate_series(1, 5)) x WHERE u",
        );
        admin.batch_execute("SELECT pg_advisory_lock(7)").unwrap();
        n
    };
    let others = "SELECT coalesce(string_agg(objid::text || ' ' || mode, ',' ORDER BY objid), '') FROM pg_locks
                   WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objid <> 7";
    admin
        .batch_execute("SET client_min_messages = error; SELECT pg_advisory_lock(7)")
        .unwrap();
    for action in ["again", "swap", "xact", "rekey lock"] {
        owner
            .execute("UPDATE m.mode SET action = $1", &[&action])
            .unwrap();
        for call in [
            "CALL rekey_run('m.t', 'at')",
            "CALL rekey_run('m.t', 'at', in_one_transaction => true)",
        ] {
            let message = refused(&mut admin, call);
            assert!(
                message.contains("advisory locks"),
                "{action}, {call}: {message}"
            );
            assert_eq!(holds_of_7(&mut admin), 1, "{action}, {call}");
            assert_eq!(one_string(&mut admin, others), "", "{action}, {call}");
            assert_eq!(
                one_i64(
                    &mut admin,
                    "SELECT count(*) FROM m.t WHERE uuid_extract_version(id) = 4"
                ),
                5,
                "{action}, {call}"
            );
        }
    }
    // Another session can rekey the table: no lock of it was left behind.
    owner
        .batch_execute("UPDATE m.mode SET action = 'balanced'")
        .unwrap();
    let mut second = connect_to(&db);
    second.batch_execute("CALL rekey_run('m.t', 'at')").unwrap();
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM m.t WHERE uuid_extract_version(id) = 7"
        ),
        5
    );
    assert_eq!(holds_of_7(&mut admin), 1);
    assert!(!is_superuser(&mut admin, "rekey_lock_owner"));
}

/// The fifth review: the owner's code could release the caller's advisory lock for a while, so
/// that another session took it (and then put the hold back, which left no change to refuse), or
/// release it and fail with an error rekey_run retries, after which the hold could not be taken
/// back and the run went on without an error. The caller's locks are now pinned while the owner's
/// code runs: another session waiting for the lock gets it only when the caller releases it.
#[test]
fn review_5_no_other_session_takes_the_callers_lock_while_the_owners_code_runs() {
    let (
        Database {
            name: db,
            client: mut admin,
        },
        mut owner,
    ) = owner_with_a_mode("rekey_pin_owner");
    owner
        .batch_execute(
            "CREATE SEQUENCE m.once; GRANT USAGE ON SEQUENCE m.once TO PUBLIC;
             CREATE FUNCTION m.act() RETURNS boolean LANGUAGE plpgsql AS $$
             DECLARE a text := (SELECT action FROM m.mode);
             BEGIN
               IF session_user = 'rekey_pin_owner' OR nextval('m.once') > 1 THEN RETURN true; END IF;
               IF a = 'pause' THEN
                 PERFORM pg_advisory_unlock(100), pg_advisory_unlock(100); PERFORM pg_sleep(0.5);
                 PERFORM pg_advisory_lock(100), pg_advisory_lock(100);
               ELSIF a = 'drop and fail' THEN
                 PERFORM pg_advisory_unlock_all(); PERFORM pg_sleep(0.5);
                 RAISE unique_violation USING MESSAGE = 'retry me';
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.t1 (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                                c int DEFAULT 1 CHECK (m.act()));
             INSERT INTO m.t1 (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.t1 ALTER COLUMN id SET DEFAULT public.uuidv7();
             CREATE TABLE m.t2 (LIKE m.t1 INCLUDING ALL);
             INSERT INTO m.t2 SELECT gen_random_uuid(), now(), 1 FROM generate_series(1, 5);",
        )
        .unwrap();
    admin
        .batch_execute("SET client_min_messages = error")
        .unwrap();
    for (action, table) in [("pause", "m.t1"), ("drop and fail", "m.t2")] {
        owner
            .execute("UPDATE m.mode SET action = $1", &[&action])
            .unwrap();
        owner
            .batch_execute("SELECT setval('m.once', 1, false)")
            .unwrap();
        admin
            .batch_execute("SELECT pg_advisory_lock(100), pg_advisory_lock(100)")
            .unwrap();
        // Another session waits for lock 100 and says when it got it.
        let mut waiter = connect_as(&db, "rekey_pin_owner");
        let got = thread::spawn(move || {
            let at: f64 = waiter
                .query_one(
                    "SELECT extract(epoch FROM clock_timestamp())::float8 FROM (SELECT pg_advisory_lock(100)) l",
                    &[],
                )
                .unwrap()
                .get(0);
            waiter
                .batch_execute("SELECT pg_advisory_unlock(100)")
                .unwrap();
            at
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while one_i64(
            &mut admin,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 100 AND NOT granted",
        ) == 0
        {
            assert!(Instant::now() < deadline, "{action}: the other session never waited");
            thread::sleep(Duration::from_millis(20));
        }
        admin
            .batch_execute(&format!("CALL rekey_run('{table}', 'at')"))
            .unwrap_or_else(|e| panic!("{action}: {e:?}"));
        let done: f64 = admin
            .query_one("SELECT extract(epoch FROM clock_timestamp())::float8", &[])
            .unwrap()
            .get(0);
        // Still held twice: the first unlock leaves it held, the second releases it.
        let unlocks = one_i64(
            &mut admin,
            "SELECT count(*) FROM (SELECT pg_advisory_unlock(100) AS u FROM generate_series(1, 3)) x WHERE u",
        );
        let at = got.join().unwrap();
        assert_eq!(unlocks, 2, "{action}");
        assert!(
            at > done,
            "{action}: the other session took the caller's lock {:.3} s before the rekey ended",
            done - at
        );
        assert_eq!(
            one_i64(
                &mut admin,
                &format!("SELECT count(*) FROM {table} WHERE uuid_extract_version(id) = 7")
            ),
            5,
            "{action}"
        );
    }
    assert!(!is_superuser(&mut admin, "rekey_pin_owner"));
}
