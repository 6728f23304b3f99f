//! What the caller's session holds and the owner's code must not reach: its temporary objects,
//! its large-object descriptors and its dblink connections.

use postgres::Client;

use super::{owner_with_a_mode, quote, refused};
use crate::common::*;

/// The seventh review (High): the check of the caller's temporary schema compared how many objects
/// it held, so the owner's code could drop one of the caller's temporary objects (a temporary view
/// over a function of the owner's goes with DROP FUNCTION ... CASCADE, which checks no privilege
/// on the view) and create a domain named uuid there, with a CHECK of its own: the count was the
/// same, the rekey committed, and the superuser's next uuid cast ran the owner's CHECK as
/// superuser. The objects themselves are compared now. Where the server refuses the domain
/// (15.20 refuses types in a temporary schema inside a security-restricted operation), the owner
/// swaps in a collation instead, so that every server sees a swap of one object for another.
#[test]
fn review_7_a_temporary_object_swapped_for_another_is_refused() {
    let (
        Database {
            client: mut admin, ..
        },
        mut owner,
    ) = owner_with_a_mode("rekey_swap_owner");
    owner
        .batch_execute(
            "GRANT USAGE ON SCHEMA m TO PUBLIC;
             CREATE FUNCTION m.aux() RETURNS int LANGUAGE sql AS 'SELECT 1';
             CREATE FUNCTION m.pwn(u uuid) RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                 EXECUTE 'ALTER ROLE rekey_swap_owner SUPERUSER';
               END IF;
               RETURN true;
             END $$;
             CREATE FUNCTION m.act() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_swap_owner' THEN
                 BEGIN
                   EXECUTE 'DROP FUNCTION m.aux() CASCADE';
                   BEGIN
                     EXECUTE 'CREATE DOMAIN pg_temp.uuid AS pg_catalog.uuid CHECK (m.pwn(VALUE))';
                   EXCEPTION WHEN insufficient_privilege THEN
                     -- Newer minor releases (15.20 has it) refuse types in a temporary schema
                     -- inside a security-restricted operation; any other object keeps the count.
                     EXECUTE 'CREATE COLLATION pg_temp.swapped FROM \"C\"';
                   END;
                 EXCEPTION WHEN OTHERS THEN NULL;
                 END;
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.act()));
             INSERT INTO m.t (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.t ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    for call in [
        "CALL rekey_run('m.t', 'at')",
        "CALL rekey_run('m.t', 'at', in_one_transaction => true)",
    ] {
        admin
            .batch_execute("CREATE TEMP VIEW tv AS SELECT m.aux() AS v")
            .unwrap();
        let message = refused(&mut admin, call);
        assert!(message.contains("temporary schema"), "{call}: {message}");
        // The caller's view is back, no uuid domain of the owner's is there, and a cast to uuid
        // runs nothing of the owner's.
        assert_eq!(one_i64(&mut admin, "SELECT v::bigint FROM tv"), 1, "{call}");
        assert_eq!(
            one_i64(
                &mut admin,
                "SELECT count(*) FROM pg_type WHERE typname = 'uuid' AND typnamespace = pg_my_temp_schema()"
            ),
            0,
            "{call}"
        );
        admin
            .batch_execute("SELECT '00000000-0000-4000-8000-000000000000'::uuid; DROP VIEW tv")
            .unwrap();
        assert_eq!(
            one_i64(
                &mut admin,
                "SELECT count(*) FROM m.t WHERE uuid_extract_version(id) = 4"
            ),
            5,
            "{call}"
        );
        assert!(!is_superuser(&mut admin, "rekey_swap_owner"), "{call}");
    }
}

/// The eighth review (High): a large-object descriptor serves whoever holds it, with no check of
/// rights after lo_open, until the transaction ends. With one of the caller's open, the owner's
/// code read and overwrote the caller's large object through it; opening one of its own under the
/// caller's next descriptor number, it had the caller write there. The toolkit refuses to run the
/// owner's code while the transaction has opened a large object, and refuses code that opens one.
#[test]
fn review_8_large_objects_of_the_callers_transaction_are_out_of_reach() {
    let (
        Database {
            client: mut admin, ..
        },
        mut owner,
    ) = owner_with_a_mode("rekey_lo_owner");
    owner
        .batch_execute(
            "CREATE SEQUENCE m.seen;
             CREATE FUNCTION m.act() RETURNS boolean LANGUAGE plpgsql AS $$
             DECLARE b bytea;
             BEGIN
               IF session_user <> 'rekey_lo_owner' THEN
                 IF (SELECT action FROM m.mode) = 'open' THEN
                   PERFORM pg_catalog.lo_open(777802, x'60000'::int);
                 END IF;
                 FOR i IN 0..3 LOOP
                   BEGIN
                     b := pg_catalog.loread(i, 100);
                     PERFORM pg_catalog.nextval('m.seen');
                     PERFORM pg_catalog.lo_lseek(i, 0, 0);
                     PERFORM pg_catalog.lowrite(i, 'PWNED'::bytea);
                   EXCEPTION WHEN OTHERS THEN NULL;
                   END;
                 END LOOP;
               END IF;
               RETURN true;
             END $$;
             SELECT pg_catalog.lo_from_bytea(777802, 'the owner''s');
             GRANT SELECT, UPDATE ON LARGE OBJECT 777802 TO PUBLIC;
             CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.act()));
             INSERT INTO m.t (at) SELECT now() - i * interval '1 hour' FROM generate_series(1, 5) i;
             ALTER TABLE m.t ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    admin
        .batch_execute(
            "SELECT lo_from_bytea(777801, 'superuser secret');
             REVOKE ALL ON LARGE OBJECT 777801 FROM PUBLIC;",
        )
        .unwrap();
    let secret =
        |admin: &mut Client| one_string(admin, "SELECT convert_from(lo_get(777801), 'UTF8')");
    // The caller's descriptor open: refused before any of the owner's code runs, for a rekey in
    // one transaction and for a read (the counts run the owner's index expressions).
    for call in [
        "CALL rekey_run('m.t', 'at', in_one_transaction => true)",
        "SELECT count(*) FROM rekey_assess('m.t')",
    ] {
        admin
            .batch_execute("BEGIN; SELECT lo_open(777801, x'60000'::int)")
            .unwrap();
        let message = refused(&mut admin, call);
        assert!(message.contains("large object"), "{call}: {message}");
        admin.batch_execute("ROLLBACK").unwrap();
        assert_eq!(secret(&mut admin), "superuser secret", "{call}");
        assert!(
            !one_bool(&mut admin, "SELECT is_called FROM m.seen"),
            "{call}: the owner's code read a descriptor"
        );
    }
    // The owner's code opening a large object of its own is refused, in both run modes, and
    // nothing it opened is left for the caller.
    owner
        .batch_execute("UPDATE m.mode SET action = 'open'")
        .unwrap();
    for call in [
        "CALL rekey_run('m.t', 'at')",
        "CALL rekey_run('m.t', 'at', in_one_transaction => true)",
    ] {
        let message = refused(&mut admin, call);
        assert!(message.contains("large objects"), "{call}: {message}");
        let _ = admin.batch_execute("SELECT rekey_forget('m.t')");
    }
    assert_eq!(
        one_string(&mut admin, "SELECT convert_from(lo_get(777802), 'UTF8')"),
        "the owner's"
    );
    // Without large objects, the same table is rekeyed.
    owner
        .batch_execute("UPDATE m.mode SET action = 'none'")
        .unwrap();
    admin.batch_execute("CALL rekey_run('m.t', 'at')").unwrap();
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM m.t WHERE uuid_extract_version(id) = 7"
        ),
        5
    );
    admin
        .batch_execute("BEGIN; SELECT lo_open(777801, x'60000'::int)")
        .unwrap();
    let message = refused(&mut admin, "SELECT count(*) FROM rekey_verify('m.t')");
    assert!(message.contains("large object"), "{message}");
    admin.batch_execute("ROLLBACK").unwrap();
    assert_eq!(secret(&mut admin), "superuser secret");
    assert!(!is_superuser(&mut admin, "rekey_lo_owner"));
}

/// The ninth review (High, with dblink in use): a dblink connection serves whoever calls
/// dblink_exec on it, with the rights it was opened with, and its functions are PUBLIC. With the
/// superuser's connection open, the owner's CHECK ran ALTER ROLE ... SUPERUSER through it (as a
/// materialized view's query can during PostgreSQL's own REFRESH). The toolkit now runs no owner
/// code in a session that has loaded dblink. Servers without dblink (13's here) skip the attack.
#[test]
fn review_9_the_callers_dblink_connections_are_out_of_reach() {
    let (
        Database {
            name: db,
            client: mut admin,
        },
        mut owner,
    ) = owner_with_a_mode("rekey_dblink_owner");
    if admin.batch_execute("CREATE EXTENSION dblink").is_err() {
        println!("dblink is not available on this server: attack not run");
        return;
    }
    owner
        .batch_execute(
            "CREATE FUNCTION m.act() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_dblink_owner' THEN
                 BEGIN
                   PERFORM public.dblink_exec('admin', 'ALTER ROLE rekey_dblink_owner SUPERUSER');
                 EXCEPTION WHEN OTHERS THEN NULL;
                 END;
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.act()));
             INSERT INTO m.t (at) SELECT now() - i * interval '1 hour' FROM generate_series(1, 5) i;
             ALTER TABLE m.t ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    let connected = admin.batch_execute(&format!(
        "SELECT public.dblink_connect('admin', {})",
        quote(&format!("{} dbname={db}", dsn()))
    ));
    if let Err(e) = connected {
        println!("dblink cannot connect here ({e}): attack not run");
        return;
    }
    for call in [
        "CALL rekey_run('m.t', 'at')",
        "SELECT count(*) FROM rekey_assess('m.t')",
    ] {
        let message = refused(&mut admin, call);
        assert!(message.contains("dblink"), "{call}: {message}");
        assert!(!is_superuser(&mut admin, "rekey_dblink_owner"), "{call}");
    }
    // A session that has not loaded dblink rekeys a table whose owner's code does not use it
    // (code that does loads dblink in the caller's session: the next batch is refused).
    owner
        .batch_execute(
            "CREATE OR REPLACE FUNCTION m.act() RETURNS boolean LANGUAGE sql AS 'SELECT true'",
        )
        .unwrap();
    drop(admin);
    let mut admin = connect_as(&db, "postgres");
    admin.batch_execute("CALL rekey_run('m.t', 'at')").unwrap();
    assert!(!is_superuser(&mut admin, "rekey_dblink_owner"));
}
