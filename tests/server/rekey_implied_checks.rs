//! The foreign-key checks a rekey batch leaves out because its rewrite satisfies them
//! (src/rekey/implied_checks.rs, `pg_objectid.rekey_implied_checks`): left out exactly where the
//! construction holds, and the references that come and go around a batch end the same way as
//! with PostgreSQL's checks.

use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, NoTls};

use crate::common::*;

const PARENTS: i64 = 300;

/// Parents with UUIDv4 keys, three children each through a NO ACTION foreign key, a
/// self-reference, and a child of the children through a composite key (depth 2, whose checks
/// always run).
fn create_family(c: &mut Client) {
    c.batch_execute(&format!(
        "CREATE TABLE parent (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int NOT NULL UNIQUE,
                              created_at timestamptz NOT NULL, referred_by uuid REFERENCES parent);
         INSERT INTO parent (n, created_at)
              SELECT i, '2024-01-01+00'::timestamptz + i * interval '1 min' FROM generate_series(1, {PARENTS}) i;
         UPDATE parent p SET referred_by = r.id FROM parent r WHERE r.n = p.n / 2;
         CREATE INDEX ON parent (referred_by);
         CREATE TABLE child (parent_id uuid NOT NULL REFERENCES parent, line int NOT NULL,
                             PRIMARY KEY (parent_id, line));
         INSERT INTO child SELECT id, j FROM parent, generate_series(1, 3) j;
         CREATE TABLE grandchild (parent_id uuid NOT NULL, line int NOT NULL, note text,
                                  FOREIGN KEY (parent_id, line) REFERENCES child ON UPDATE CASCADE);
         CREATE INDEX ON grandchild (parent_id, line);
         INSERT INTO grandchild SELECT c.parent_id, c.line, 'g' FROM child c JOIN parent p ON p.id = c.parent_id
                               WHERE c.line = 1 AND p.n % 10 = 0;
         SELECT rekey_switch_default('parent');
         ANALYZE"
    ))
    .unwrap();
}

fn assert_consistent(c: &mut Client) {
    for (what, sql) in [
        ("v4 keys left", "SELECT count(*) FROM parent WHERE uuid_extract_version(id) <> 7"),
        (
            "orphan children",
            "SELECT count(*) FROM child c WHERE NOT EXISTS (SELECT FROM parent p WHERE p.id = c.parent_id)",
        ),
        (
            "orphan references",
            "SELECT count(*) FROM parent c WHERE c.referred_by IS NOT NULL
                AND NOT EXISTS (SELECT FROM parent p WHERE p.id = c.referred_by)",
        ),
        (
            "orphan grandchildren",
            "SELECT count(*) FROM grandchild g
              WHERE NOT EXISTS (SELECT FROM child c WHERE (c.parent_id, c.line) = (g.parent_id, g.line))",
        ),
    ] {
        assert_eq!(one_i64(c, sql), 0, "{what}");
    }
    assert_eq!(one_i64(c, "SELECT count(*) FROM child"), 3 * PARENTS);
    assert_eq!(one_i64(c, "SELECT count(*) FROM grandchild"), PARENTS / 10);
    let bad: Vec<String> = strings(
        c,
        "SELECT check_name || ': ' || detail FROM rekey_verify('parent') WHERE status <> 'ok'",
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

/// A connection to `db` that adds up the triggers the rekey batches report (at DEBUG1) they left
/// out of their rewrite.
fn connect_counting(db: &str) -> (Client, Arc<Mutex<usize>>) {
    let left_out = Arc::new(Mutex::new(0usize));
    let count = left_out.clone();
    let mut client = postgres::Config::from_str(&format!("{} dbname={db}", dsn()))
        .unwrap()
        .notice_callback(move |n| {
            if let Some(rest) = n
                .message()
                .strip_prefix("the rekey batch's rewrite leaves out ")
            {
                *count.lock().unwrap() += rest.split(' ').next().unwrap().parse::<usize>().unwrap();
            }
        })
        .connect(NoTls)
        .unwrap();
    client
        .batch_execute("SET client_min_messages = debug1")
        .unwrap();
    (client, left_out)
}

/// The whole rekey in one transaction, in the test's database `suffix`, after `before` in that
/// transaction (and `after_start` once the rekey has started, with its mapping table): the
/// triggers its batches left out.
fn rekey_leaving_out(suffix: &str, before: &str, after_start: &str) -> usize {
    let db = database_with_extension(suffix).name;
    let (mut c, left_out) = connect_counting(&db);
    create_family(&mut c);
    let mut tx = c.transaction().unwrap();
    tx.batch_execute(before).unwrap();
    let run = |tx: &mut postgres::Transaction, max: &str| {
        tx.batch_execute(&format!(
            "CALL rekey_run('parent', 'created_at', batch_size => 100, in_one_transaction => true,
                            fire_triggers => true{max})"
        ))
        .unwrap()
    };
    run(&mut tx, ", max_batches => 0");
    tx.batch_execute(after_start).unwrap();
    run(&mut tx, "");
    tx.commit().unwrap();
    assert_consistent(&mut c);
    let n = *left_out.lock().unwrap();
    n
}

/// The batches leave PostgreSQL's checks of the foreign keys to the key out of their rewrite
/// (each batch reports how many triggers at DEBUG1), and check those keys themselves after it;
/// with the setting off every check runs, and with a BEFORE trigger of the owner's that fires on
/// a table that changes, that table's per-row checks. The rekey ends consistent every time. (rekey_run refuses every isolation level but
/// READ COMMITTED, the one under which the construction holds; the batch keeps every check
/// under another, whoever calls it.)
#[test]
fn checks_are_left_out_only_where_the_rewrite_satisfies_them() {
    let on = rekey_leaving_out("on", "SELECT", "SELECT");
    let off = rekey_leaving_out(
        "off",
        "SET LOCAL pg_objectid.rekey_implied_checks = off",
        "SELECT",
    );
    let trigger = rekey_leaving_out(
        "trigger",
        "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
         CREATE TRIGGER touch BEFORE UPDATE ON child FOR EACH ROW EXECUTE FUNCTION touch()",
        "SELECT",
    );
    let after = rekey_leaving_out(
        "after",
        "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
         CREATE TRIGGER touch AFTER UPDATE ON child FOR EACH ROW EXECUTE FUNCTION touch();
         CREATE TRIGGER renamed BEFORE UPDATE OF line ON child FOR EACH ROW EXECUTE FUNCTION touch()",
        "SELECT",
    );
    eprintln!("triggers left out: on {on}, off {off}, with a BEFORE trigger {trigger}, with an AFTER one {after}");
    // The parent's NO ACTION trigger and the child's check, of child's foreign key and of the
    // self-reference, in each of the three batches and the second pass's.
    assert!(on >= 3 * 4, "on: {on} triggers left out");
    assert_eq!(off, 0, "off");
    // A BEFORE trigger on child keeps child's per-row check (one a batch), and only that; an AFTER
    // trigger, and a BEFORE UPDATE OF a column the rewrite does not change, keep none.
    assert!(
        trigger > 0 && trigger < on,
        "with a BEFORE trigger: {trigger}"
    );
    assert_eq!(after, on, "with an AFTER trigger");
}

/// The order that the left-out checks depend on: a child inserted (its check holding the
/// parent's key) before the batch locks that key makes the batch wait, and once it commits the
/// batch's rewrite sees the child and gives it the new key. A child whose check is deferred to
/// its COMMIT does not hold the key: the batch goes on, and that COMMIT then fails with 23503,
/// as it would against PostgreSQL's own checks.
#[test]
fn references_made_around_a_batch_end_as_with_every_check() {
    let Database {
        name: db,
        client: mut c,
    } = database_with_extension("");
    create_family(&mut c);
    c.batch_execute("CALL rekey_run('parent', 'created_at', max_batches => 0)")
        .unwrap();
    let key: String = one_string(&mut c, "SELECT id::text FROM parent WHERE n = 1");

    let mut writer = connect_to(&db);
    writer
        .batch_execute(&format!("BEGIN; INSERT INTO child VALUES ('{key}', 10)"))
        .unwrap();
    let mut runner = connect_to(&db);
    let pid = backend_pid(&mut runner);
    let run = thread::spawn(move || {
        runner.batch_execute("CALL rekey_run('parent', lock_timeout => '60s')")
    });
    wait_until_waiting_for_a_lock(
        &mut c,
        pid,
        Duration::from_secs(30),
        "the batch did not wait for the writer",
    );
    writer.batch_execute("COMMIT").unwrap();
    run.join().unwrap().unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM child c JOIN parent p ON p.id = c.parent_id
              WHERE c.line = 10 AND p.n = 1 AND uuid_extract_version(p.id) = 7",
        ),
        1,
        "the child committed while the batch waited has its parent's new key"
    );

    // A deferred check: the new child takes no lock before its COMMIT.
    let Database {
        name: deferred,
        client: mut c,
    } = database_with_extension("deferred");
    create_family(&mut c);
    c.batch_execute(
        "ALTER TABLE child DROP CONSTRAINT child_parent_id_fkey;
         ALTER TABLE child ADD FOREIGN KEY (parent_id) REFERENCES parent DEFERRABLE INITIALLY DEFERRED",
    )
    .unwrap();
    c.batch_execute("CALL rekey_run('parent', 'created_at', max_batches => 0)")
        .unwrap();
    let key: String = one_string(&mut c, "SELECT id::text FROM parent WHERE n = 1");
    let mut writer = connect_to(&deferred);
    writer
        .batch_execute(&format!("BEGIN; INSERT INTO child VALUES ('{key}', 10)"))
        .unwrap();
    c.batch_execute("CALL rekey_run('parent')").unwrap();
    expect_error(&mut writer, "COMMIT", &SqlState::FOREIGN_KEY_VIOLATION);
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM child WHERE line = 10"),
        0
    );
    assert_consistent(&mut c);
}

/// A child partitioned by its reference, whose rows move to a partition that the rewrite's plan
/// prunes (the executor opens it only when the first row arrives, too late for the executor's
/// own look at its triggers): a BEFORE trigger there is honoured, the arriving rows checked as
/// PostgreSQL checks them (adversarial review of the change). Before
/// 15 such a child is refused (rekey::partitioned_tables_are_rekeyed_through_their_root).
#[test]
fn a_trigger_on_a_partition_rows_move_to_keeps_the_checks() {
    if server_version(&mut connect_to("postgres")) < 150000 {
        return;
    }
    let count = |suffix: &str, trigger: Option<&str>| -> Result<usize, SqlState> {
        let db = database_with_extension(suffix).name;
        let (mut c, left_out) = connect_counting(&db);
        c.batch_execute(&format!(
            "CREATE TABLE parent (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz NOT NULL);
             INSERT INTO parent (id, created_at)
                  SELECT ('a' || substr(gen_random_uuid()::text, 2))::uuid,
                         '2024-01-01+00'::timestamptz + i * interval '1 min'
                    FROM generate_series(1, {PARENTS}) i;
             CREATE TABLE child (parent_id uuid NOT NULL REFERENCES parent, line int NOT NULL)
                 PARTITION BY RANGE (parent_id);
             CREATE TABLE child_new PARTITION OF child FOR VALUES FROM (MINVALUE) TO ('02000000-0000-0000-0000-000000000000');
             CREATE TABLE child_old PARTITION OF child FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);
             CREATE INDEX ON child (parent_id);
             INSERT INTO child SELECT id, j FROM parent, generate_series(1, 3) j;
             SELECT rekey_switch_default('parent');
             ANALYZE"
        ))
        .unwrap();
        if let Some(body) = trigger {
            c.batch_execute(&format!(
                "CREATE FUNCTION arrived() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} RETURN NEW; END $$;
                 CREATE TRIGGER arrived BEFORE INSERT ON child_new FOR EACH ROW EXECUTE FUNCTION arrived()"
            ))
            .unwrap();
        }
        let mut tx = c.transaction().unwrap();
        tx.batch_execute(
            "CALL rekey_run('parent', 'created_at', in_one_transaction => true, max_batches => 0,
                            fire_triggers => true)",
        )
        .unwrap();
        if let Err(e) = tx.batch_execute(
            "CALL rekey_run('parent', batch_size => 100, in_one_transaction => true, fire_triggers => true)",
        ) {
            return Err(e.code().unwrap().clone());
        }
        tx.commit().unwrap();
        assert_eq!(
            one_i64(
                &mut c,
                "SELECT count(*) FROM child_new c JOIN parent p ON p.id = c.parent_id
                  WHERE uuid_extract_version(p.id) = 7"
            ),
            3 * PARENTS
        );
        let n = *left_out.lock().unwrap();
        Ok(n)
    };
    let without = count("routed", None).unwrap();
    let with = count("routed_trigger", Some("")).unwrap();
    eprintln!("triggers left out: {without} without the trigger, {with} with it");
    assert!(without > 0);
    // What a moved row's arrival fires (its INSERT check) is never left out, and the parent's
    // checks, which the set-based check after the rewrite replaces, are left out either way.
    assert!(
        with > 0 && with <= without,
        "with a trigger where the rows move: {with}"
    );
    // And a trigger there that stores a parent that does not exist is refused by that check.
    assert_eq!(
        count(
            "routed_elsewhere",
            Some("NEW.parent_id := '01000000-0000-4000-8000-000000000000';")
        ),
        Err(SqlState::FOREIGN_KEY_VIOLATION)
    );
}

/// rekey_batch_as_owner runs whatever statements it is given (anyone may call it, as the owner of
/// the table), and the construction holds only for the toolkit's own: with any others, every
/// check runs (adversarial review of the change).
#[test]
fn only_the_toolkits_own_statements_leave_checks_out() {
    let mut c = database_with_extension("").client;
    create_family(&mut c);
    c.batch_execute("CALL rekey_run('parent', 'created_at', max_batches => 0)")
        .unwrap();
    expect_error(
        &mut c,
        "SELECT * FROM objectid_internal.rekey_batch_as_owner('parent'::regclass::oid,
           'SELECT ARRAY[$1]::uuid[] WHERE $2 > 0',
           'SELECT ARRAY(SELECT id FROM public.parent WHERE n = 1), ARRAY[gen_random_uuid()]
             WHERE $1 IS NOT NULL AND $2 IS NOT NULL AND $3 > 0',
           'WITH u AS (UPDATE public.parent SET id = gen_random_uuid() WHERE id = ANY ($1) RETURNING 1)
            SELECT ARRAY[(SELECT count(*) FROM u)]',
           '{}', '{}', '00000000-0000-0000-0000-000000000000', 1, now(), 1)",
        &SqlState::FOREIGN_KEY_VIOLATION,
    );
    assert_consistent_before_rekey(&mut c);
}

fn assert_consistent_before_rekey(c: &mut Client) {
    assert_eq!(
        one_i64(
            c,
            "SELECT count(*) FROM child c WHERE NOT EXISTS (SELECT FROM parent p WHERE p.id = c.parent_id)"
        ),
        0
    );
}

/// A mapping table that is no longer unique on old_key, from which a parent and its child could
/// each read another new key for the same key, keeps every check (second adversarial review).
#[test]
fn a_mapping_without_its_unique_key_keeps_the_checks() {
    let plain = rekey_leaving_out("plain", "SELECT", "SELECT");
    let mapping = rekey_leaving_out(
        "mapping",
        "SELECT",
        "ALTER TABLE parent_rekey_map DROP CONSTRAINT parent_rekey_map_pkey;
         CREATE INDEX ON parent_rekey_map (old_key)",
    );
    eprintln!(
        "triggers left out: {plain} plain, {mapping} with a mapping table not unique on old_key"
    );
    assert!(plain > 0);
    assert_eq!(mapping, 0);
}

/// The owner's code can run inside the rewrite without a trigger (a CHECK calling a function, and
/// a domain cast in an index expression, here; a range type's subtype_diff or query_to_xml do the
/// same, third adversarial review) and reference a key of the batch that the statement has not
/// rewritten yet: the batch's own check after the statement refuses it (23503), as PostgreSQL's
/// check does with the setting off, and nothing changes.
#[test]
fn a_reference_made_by_the_owners_code_during_the_rewrite_is_refused() {
    let variants = [
        (
            "check",
            "ALTER TABLE parent ADD CHECK (sneak(id)) NOT VALID",
        ),
        (
            "domain_index",
            "CREATE DOMAIN sneaky AS uuid CHECK (sneak(VALUE));
             CREATE INDEX ON parent (((id::text)::sneaky))",
        ),
    ];
    for ((variant, owner_code), setting) in variants
        .iter()
        .flat_map(|v| ["on", "off"].map(move |s| (v, s)))
    {
        let mut c = database_with_extension(&format!("{variant}_{setting}")).client;
        create_family(&mut c);
        c.batch_execute("CALL rekey_run('parent', 'created_at', max_batches => 0)")
            .unwrap();
        c.batch_execute(
            "CREATE SEQUENCE sneaked START 1000;
             CREATE FUNCTION sneak(k uuid) RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF public.uuid_extract_version(k) = 7 THEN
                 INSERT INTO public.child
                 SELECT p.id, pg_catalog.nextval('public.sneaked') FROM public.parent p
                  WHERE public.uuid_extract_version(p.id) = 4
                    AND p.id IN (SELECT m.old_key FROM public.parent_rekey_map m)
                  ORDER BY p.id DESC LIMIT 1;
               END IF;
               RETURN true;
             END $$;",
        )
        .unwrap();
        c.batch_execute(owner_code).unwrap();
        c.batch_execute(&format!("SET pg_objectid.rekey_implied_checks = {setting}"))
            .unwrap();
        let message = expect_error(
            &mut c,
            "CALL rekey_run('parent', batch_size => 100, max_retries => 0)",
            &SqlState::FOREIGN_KEY_VIOLATION,
        );
        eprintln!("{variant}, {setting}: {message}");
        assert_eq!(
            one_i64(
                &mut c,
                "SELECT count(*) FROM parent WHERE uuid_extract_version(id) = 7"
            ),
            0,
            "{variant}, {setting}: no batch committed"
        );
        assert_consistent_before_rekey(&mut c);
    }
}

/// The armed statement's own executor only: code that runs while the rewrite is planned (a
/// partition's CHECK, which the planner folds to see whether the partition can be skipped) can
/// run a statement of exactly the rewrite's text, which must keep every check. The fourth
/// adversarial review's repro, as its role: the owner (not a superuser) reads the rewrite's text,
/// and while a superuser's batch plans its rewrite, runs it for a key outside the batch whose
/// child it adds meanwhile; with the checks taken for that statement the child was left without
/// its parent and the batch committed.
#[test]
fn a_statement_run_while_the_rewrite_is_planned_keeps_its_checks() {
    for setting in ["on", "off"] {
        let mut c = database_with_extension(setting).client;
        c.batch_execute("DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='implied_mallory') THEN CREATE ROLE implied_mallory LOGIN; END IF; END$$;
CREATE SCHEMA m AUTHORIZATION implied_mallory;
SET ROLE implied_mallory;
CREATE TABLE m.flag (x int);
CREATE TABLE m.q (q text);
CREATE FUNCTION m.pchk(k uuid) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
  IF current_setting('m.nested', true) = '1' AND k = '01900000-0000-7000-8000-0000000000ff' THEN
    INSERT INTO m.child (a) VALUES ('01900000-0000-7000-8000-000000000001');
    RAISE NOTICE 'pchk: inserted child referencing Z mid nested rewrite';
  END IF;
  RETURN true;
END $f$;
CREATE TABLE m.parent (id uuid PRIMARY KEY, created_at timestamptz NOT NULL, CHECK (m.pchk(id)));
CREATE TABLE m.child (id serial, a uuid NOT NULL REFERENCES m.parent) PARTITION BY RANGE (id);
CREATE TABLE m.child1 PARTITION OF m.child FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
CREATE INDEX ON m.child(a);
INSERT INTO m.parent SELECT gen_random_uuid(), '2024-01-01'::timestamptz + i*interval '1 min' FROM generate_series(1,20) i;
INSERT INTO m.parent VALUES ('01900000-0000-7000-8000-000000000001', '2024-01-01');
INSERT INTO m.child (a) SELECT id FROM m.parent;
CREATE FUNCTION m.act() RETURNS void LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
  IF NOT EXISTS (SELECT FROM m.parent_rekey_map) THEN RETURN; END IF;
  RAISE NOTICE 'act as %, flag busy', current_user;
  INSERT INTO m.flag VALUES (1);
  PERFORM set_config('m.busy', '1', true);
  INSERT INTO m.parent_rekey_map VALUES ('01900000-0000-7000-8000-000000000001', '01900000-0000-7000-8000-0000000000ff', 0);
  PERFORM set_config('m.nested', '1', true);
  EXECUTE (SELECT q FROM m.q) USING ARRAY['01900000-0000-7000-8000-000000000001'::uuid], ARRAY['01900000-0000-7000-8000-0000000000ff'::uuid];
  PERFORM set_config('m.nested', '0', true);
  RAISE NOTICE 'act: nested rewrite done';
END $f$;
CREATE FUNCTION m.trip() RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
  RAISE NOTICE 'trip called as %: busy=% flag=% q=%', current_user, current_setting('m.busy', true), (SELECT count(*) FROM m.flag), left(current_query(), 40);
  IF coalesce(current_setting('m.busy', true), '') <> '1' AND to_regclass('m.parent_rekey_map') IS NOT NULL
     AND NOT EXISTS (SELECT FROM m.flag) THEN
    PERFORM m.act();
  END IF;
  RETURN '';
END $f$;
RESET ROLE;
SELECT rekey_switch_default('m.parent');").unwrap();
        c.batch_execute("CALL rekey_run('m.parent','created_at', max_batches => 0);")
            .unwrap();
        c.batch_execute("SET ROLE implied_mallory;
INSERT INTO m.q SELECT (objectid_internal.rekey_statements('m.parent'::regclass, st.time_column, st.time_zone, objectid_internal.rekey_name(st.mapping_table))).rewrite_query FROM objectid_internal.rekey_state_of('m.parent') st;
ALTER TABLE m.child1 ADD CHECK (m.trip() = '');
\nRESET ROLE").unwrap();
        c.batch_execute(&format!("SET pg_objectid.rekey_implied_checks = {setting}"))
            .unwrap();
        expect_error(
            &mut c,
            "CALL rekey_run('m.parent', batch_size => 5, max_batches => 1, max_retries => 0)",
            &SqlState::FOREIGN_KEY_VIOLATION,
        );
        assert_eq!(
            one_i64(
                &mut c,
                "SELECT count(*) FROM m.child c WHERE NOT EXISTS (SELECT FROM m.parent p WHERE p.id = c.a)"
            ),
            0,
            "{setting}: a child without its parent"
        );
        assert!(!is_superuser(&mut c, "implied_mallory"));
    }
}
