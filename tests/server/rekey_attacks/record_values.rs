//! What a table's owner may write into the record of its table's rekey, and what another role may
//! read from it (issue 36): no value breaks rekey_status for anyone else, the counts a rekey starts
//! with show only to a role that may read what they count, and a mapping table that numbers its
//! batches itself does not qualify.

use postgres::Client;

use crate::common::*;

/// Every kind of value the record's columns hold, at its extremes, each written by the table's
/// owner into its own row (row-level security lets it).
const FORGED: &[&str] = &[
    "last_batch_at = 'infinity', run_started_at = '-infinity'",
    "last_batch_at = 'infinity'",
    "run_started_at = '-infinity', last_batch_at = now()",
    "run_started_at = 'infinity', last_batch_at = 'infinity'",
    "last_batch_at = '294276-12-31 23:59:59+00', run_started_at = '4714-11-24 00:00:00+00 BC'",
    "last_batch_at = now(), run_started_at = now() - interval '1 microsecond',
     run_keys_done = 9223372036854775807, keys_total = 9223372036854775807, keys_done = -9223372036854775808",
    "keys_done = 9223372036854775807, keys_total = -9223372036854775808, run_keys_done = -9223372036854775808",
    "keys_total = 0, keys_done = 0, run_keys_done = 0, last_batch_at = now(), run_started_at = now() - interval '1 s'",
    "started_at = 'infinity', finished_at = '-infinity', pass = -2147483648, batches = 9223372036854775807,
     runs = 2147483647",
    "pass = 2147483647, batches = -9223372036854775808, runs = -2147483648, finished_at = NULL,
     last_batch_at = NULL",
    "key_column = repeat('k', 63), time_column = '\"; DROP TABLE x; --', time_zone = 'no such zone'",
    "key_column = '', time_column = '', time_zone = ''",
    "mapping_table = 0, key_constraint = 4294967295, fallback_time = 'infinity'",
    "mapping_table = 4294967295, high_water = 'ffffffff-ffff-ffff-ffff-ffffffffffff'",
    "runner_pid = 2147483647, runner_started = 'infinity'",
    "runner_pid = -2147483648, runner_started = '-infinity'",
    "runner_pid = NULL, runner_started = NULL",
];

/// Every column of every row of rekey_status as text, which reads each column.
fn status(c: &mut Client) -> Result<Vec<String>, postgres::Error> {
    Ok(c.query(
        "SELECT r::text FROM public.rekey_status r ORDER BY r.table_name::text",
        &[],
    )?
    .iter()
    .map(|r| r.get(0))
    .collect())
}

#[test]
fn no_value_an_owner_writes_into_its_record_breaks_rekey_status_for_anyone() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    hostile_role(&mut admin, "rekey_record_writer");
    hostile_role(&mut admin, "rekey_record_reader");
    admin
        .batch_execute(
            "CREATE SCHEMA m AUTHORIZATION rekey_record_writer;
             CREATE TABLE public.victim (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                                         created_at timestamptz NOT NULL DEFAULT now());
             INSERT INTO public.victim SELECT FROM generate_series(1, 20);
             SELECT public.rekey_switch_default('public.victim'::regclass);
             GRANT SELECT ON public.victim TO rekey_record_reader;",
        )
        .unwrap();
    admin
        .batch_execute(
            "CALL public.rekey_run('public.victim'::regclass, time_column => 'created_at'::name)",
        )
        .unwrap();
    let mut writer = connect_as(&db, "rekey_record_writer");
    writer
        .batch_execute(
            "CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz NOT NULL DEFAULT now());
             INSERT INTO m.t SELECT FROM generate_series(1, 20);
             SELECT public.rekey_switch_default('m.t'::regclass);
             GRANT USAGE ON SCHEMA m TO rekey_record_reader; GRANT SELECT ON m.t TO rekey_record_reader;",
        )
        .unwrap();
    writer
        .batch_execute("CALL public.rekey_run('m.t'::regclass, time_column => 'created_at'::name)")
        .unwrap();
    let mut reader = connect_as(&db, "rekey_record_reader");
    assert_eq!(status(&mut admin).unwrap().len(), 2);
    let victim = |rows: &[String]| {
        rows.iter()
            .filter(|r| r.starts_with("(victim,id,finished,"))
            .count()
    };
    // The forged row poses as run by the reading session itself, which is busy reading: the view
    // then computes the time left too.
    let admin_session = one_string(
        &mut admin,
        "SELECT format('runner_pid = %s, runner_started = %L', pid, backend_start)
           FROM pg_stat_activity WHERE pid = pg_backend_pid()",
    );
    for forged in FORGED
        .iter()
        .map(|f| f.to_string())
        .chain([admin_session.clone()])
    {
        writer
            .batch_execute(&format!(
                "UPDATE objectid_internal.rekey_state SET {forged} WHERE relid = 'm.t'::regclass"
            ))
            .unwrap_or_else(|e| panic!("{forged}: {e:?}"));
        for (who, c) in [("the superuser", &mut admin), ("a reader", &mut reader)] {
            let rows = status(c).unwrap_or_else(|e| panic!("{forged}, read by {who}: {e:?}"));
            assert_eq!(rows.len(), 2, "{forged}, read by {who}: {rows:?}");
            assert_eq!(victim(&rows), 1, "{forged}, read by {who}: {rows:?}");
        }
        // Each on top of a rate the reading session can be running at.
        if !forged.starts_with("runner_") {
            writer
                .batch_execute(&format!(
                    "UPDATE objectid_internal.rekey_state SET {admin_session} WHERE relid = 'm.t'::regclass"
                ))
                .unwrap();
            let rows = status(&mut admin).unwrap_or_else(|e| panic!("{forged}, running: {e:?}"));
            assert_eq!(victim(&rows), 1, "{forged}, running: {rows:?}");
        }
    }
    assert!(!is_superuser(&mut admin, "rekey_record_writer"));
}

/// The counts a rekey starts with: a role that may read the key table, and so its record, but not
/// a table that references it sees neither that table's row count nor the join's.
#[test]
fn the_starting_counts_show_only_to_who_may_read_what_they_count() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    hostile_role(&mut admin, "rekey_counts_reader");
    admin
        .batch_execute(
            "CREATE TABLE public.parent (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                                         created_at timestamptz NOT NULL DEFAULT now());
             CREATE TABLE public.secret_child (id serial PRIMARY KEY,
                                               parent_id uuid REFERENCES public.parent ON UPDATE CASCADE);
             CREATE INDEX ON public.secret_child (parent_id);
             INSERT INTO public.parent SELECT FROM generate_series(1, 7);
             INSERT INTO public.secret_child (parent_id) SELECT p.id FROM public.parent p, generate_series(1, 3);
             SELECT public.rekey_switch_default('public.parent'::regclass);
             GRANT SELECT ON public.parent TO rekey_counts_reader;",
        )
        .unwrap();
    admin
        .batch_execute(
            "CALL public.rekey_run('public.parent'::regclass, time_column => 'created_at'::name)",
        )
        .unwrap();
    let counts = "SELECT coalesce(string_agg(format('%s %s %s', counted::regclass, constraint_id IS NOT NULL, n), '; '
                                             ORDER BY counted::regclass::text, constraint_id IS NOT NULL), '')
                    FROM objectid_internal.rekey_snapshot";
    assert_eq!(
        one_string(&mut admin, counts),
        "parent f 7; secret_child f 21; secret_child t 21"
    );
    let mut reader = connect_as(&db, "rekey_counts_reader");
    assert_eq!(one_string(&mut reader, counts), "parent f 7");
    // The record it reads holds no count, nor does the status it reads. (Its keys per second, the
    // 7 keys over the run's time, is no count of anything, and on a loaded machine was 21 once,
    // on PostgreSQL 15 in CI.)
    for record in [
        "SELECT to_jsonb(s) FROM objectid_internal.rekey_state s",
        "SELECT to_jsonb(objectid_internal.rekey_state_of('public.parent'::regclass))",
        "SELECT to_jsonb(r) FROM public.rekey_status r",
    ] {
        assert_eq!(
            one_i64(
                &mut reader,
                &format!(
                    "SELECT count(*) FROM ({record}) r(j), jsonb_each_text(r.j) e
                           WHERE e.value = '21' AND e.key <> 'keys_per_second'"
                )
            ),
            0,
            "{record}"
        );
    }
    // Nor may it write counts for a table it does not own.
    let (state, message) = error_of(
        &mut reader,
        "INSERT INTO objectid_internal.rekey_snapshot (relid, counted, n)
         VALUES ('public.parent'::regclass, 'public.parent'::regclass, 1)",
    );
    assert_eq!(
        state,
        postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
        "{message}"
    );
    // The owner's verification still compares every count.
    let checks = strings(
        &mut admin,
        "SELECT check_name || ' ' || status FROM public.rekey_verify('public.parent'::regclass)
          WHERE check_name LIKE 'rows%' OR check_name LIKE 'join%'",
    );
    assert_eq!(
        checks,
        [
            "rows of public.parent ok",
            "rows of public.secret_child ok",
            "join public.secret_child -> public.parent (secret_child_parent_id_fkey) ok"
        ]
    );
    // Forgetting the rekey forgets its counts.
    admin
        .batch_execute("SELECT public.rekey_forget('public.parent'::regclass)")
        .unwrap();
    assert_eq!(one_string(&mut admin, counts), "");
}

/// A mapping table whose batch column numbers itself (an identity) runs the owner's sequence as
/// whoever inserts into it, as a default would: it does not qualify.
#[test]
fn a_mapping_table_with_an_identity_column_does_not_qualify() {
    let Database {
        name: _db,
        client: mut admin,
    } = database_with_extension("");
    admin
        .batch_execute(
            "CREATE TABLE public.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz NOT NULL);
             CREATE TABLE public.plain_map (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE, batch bigint NOT NULL);
             CREATE TABLE public.by_default_map (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE,
                                                 batch bigint GENERATED BY DEFAULT AS IDENTITY);
             CREATE TABLE public.always_map (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE,
                                             batch bigint GENERATED ALWAYS AS IDENTITY);
             SELECT public.rekey_switch_default('public.t'::regclass);
             DO $$ BEGIN
                 EXECUTE format('COMMENT ON TABLE public.plain_map IS %L', objectid_internal.rekey_mapping_comment('public.t'));
                 EXECUTE format('COMMENT ON TABLE public.by_default_map IS %L', objectid_internal.rekey_mapping_comment('public.t'));
                 EXECUTE format('COMMENT ON TABLE public.always_map IS %L', objectid_internal.rekey_mapping_comment('public.t'));
             END $$;",
        )
        .unwrap();
    let problem = |c: &mut Client, map: &str| {
        c.query_one(
            &format!("SELECT objectid_internal.rekey_mapping_problem('public.t'::regclass, 'public.{map}'::regclass)"),
            &[],
        )
        .unwrap()
        .get::<_, Option<String>>(0)
    };
    assert_eq!(problem(&mut admin, "plain_map"), None);
    for map in ["by_default_map", "always_map"] {
        let found = problem(&mut admin, map).unwrap_or_else(|| panic!("{map} qualified"));
        assert!(found.contains("identity"), "{found}");
    }
    let message = expect_error(
        &mut admin,
        "CALL public.rekey_run('public.t'::regclass, time_column => 'created_at'::name,
                               mapping_table => 'public.by_default_map'::text)",
        &postgres::error::SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
    );
    assert!(message.contains("identity"), "{message}");
}

/// The counts are of whole tables: a role that row-level security shows only some rows of a table
/// sees neither its record (rekey_status) nor its starting counts; the owner sees both, even
/// once row-level security is forced on it too.
#[test]
fn a_role_that_row_level_security_shows_some_rows_sees_no_counts() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    hostile_role(&mut admin, "rekey_rls_owner");
    hostile_role(&mut admin, "rekey_rls_tenant");
    admin
        .batch_execute("CREATE SCHEMA m AUTHORIZATION rekey_rls_owner")
        .unwrap();
    let mut owner = connect_as(&db, "rekey_rls_owner");
    owner
        .batch_execute(
            "CREATE TABLE m.accounts (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), tenant name NOT NULL,
                                      created_at timestamptz NOT NULL DEFAULT now());
             CREATE TABLE m.notes (id serial PRIMARY KEY, account_id uuid REFERENCES m.accounts ON UPDATE CASCADE,
                                   tenant name NOT NULL);
             CREATE INDEX ON m.notes (account_id);
             INSERT INTO m.accounts (tenant) SELECT CASE WHEN i <= 3 THEN 'rekey_rls_tenant' ELSE 'other' END
               FROM generate_series(1, 40) i;
             INSERT INTO m.notes (account_id, tenant) SELECT id, tenant FROM m.accounts;
             ALTER TABLE m.accounts ENABLE ROW LEVEL SECURITY;
             ALTER TABLE m.notes ENABLE ROW LEVEL SECURITY;
             CREATE POLICY mine ON m.accounts USING (tenant = current_user OR current_user = 'rekey_rls_owner');
             CREATE POLICY mine ON m.notes USING (tenant = current_user OR current_user = 'rekey_rls_owner');
             GRANT USAGE ON SCHEMA m TO rekey_rls_tenant;
             GRANT SELECT ON m.accounts, m.notes TO rekey_rls_tenant;
             SELECT public.rekey_switch_default('m.accounts'::regclass);",
        )
        .unwrap();
    owner
        .batch_execute(
            "CALL public.rekey_run('m.accounts'::regclass, time_column => 'created_at'::name)",
        )
        .unwrap();
    let status =
        "SELECT coalesce(string_agg(format('%s %s %s', table_name, state, keys_total), '; '), '')
                    FROM public.rekey_status";
    let counts = "SELECT coalesce(string_agg(format('%s %s', counted::regclass, n), '; '
                                             ORDER BY counted::regclass::text, constraint_id IS NOT NULL), '')
                    FROM objectid_internal.rekey_snapshot";
    assert_eq!(one_string(&mut owner, status), "m.accounts finished 40");
    assert_eq!(
        one_string(&mut owner, counts),
        "m.accounts 40; m.notes 40; m.notes 40"
    );
    let failed = strings(
        &mut owner,
        "SELECT check_name FROM public.rekey_verify('m.accounts'::regclass) WHERE status <> 'ok'",
    );
    assert!(failed.is_empty(), "{failed:?}");
    // Forced on the owner too, later: the owner still sees what it may turn off.
    owner
        .batch_execute(
            "ALTER TABLE m.accounts FORCE ROW LEVEL SECURITY; ALTER TABLE m.notes FORCE ROW LEVEL SECURITY",
        )
        .unwrap();
    assert_eq!(one_string(&mut owner, status), "m.accounts finished 40");
    assert_eq!(
        one_string(&mut owner, counts),
        "m.accounts 40; m.notes 40; m.notes 40"
    );
    let mut tenant = connect_as(&db, "rekey_rls_tenant");
    assert_eq!(one_i64(&mut tenant, "SELECT count(*) FROM m.accounts"), 3);
    assert_eq!(one_string(&mut tenant, status), "");
    assert_eq!(one_string(&mut tenant, counts), "");
    assert_eq!(
        one_i64(
            &mut tenant,
            "SELECT count(*) FROM objectid_internal.rekey_state"
        ),
        0
    );
    // The superuser, whom row-level security does not filter, sees them.
    assert_eq!(one_string(&mut admin, status), "m.accounts finished 40");
}

/// The update from 0.6.0 moves the counts out of the record's `snapshot`, which the table's owner
/// could write anything into: what does not read as a count of a table or a foreign key stays
/// behind, and nothing written there stops the update (a leading zero read as octal by oidin did).
#[test]
fn the_update_moves_only_counts_out_of_a_forged_snapshot() {
    let Database {
        name: db,
        client: mut admin,
    } = empty_database("");
    hostile_role(&mut admin, "rekey_snapshot_forger");
    admin
        .batch_execute(
            "CREATE EXTENSION pg_objectid VERSION '0.6.0';
             CREATE SCHEMA m AUTHORIZATION rekey_snapshot_forger;",
        )
        .unwrap();
    let mut owner = connect_as(&db, "rekey_snapshot_forger");
    owner
        .batch_execute(
            "CREATE TABLE m.t (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz NOT NULL DEFAULT now());
             CREATE TABLE m.c (id serial PRIMARY KEY, t_id uuid REFERENCES m.t);
             CREATE INDEX ON m.c (t_id);
             INSERT INTO m.t SELECT FROM generate_series(1, 5);
             INSERT INTO m.c (t_id) SELECT id FROM m.t;
             SELECT public.rekey_switch_default('m.t'::regclass);",
        )
        .unwrap();
    owner
        .batch_execute("CALL public.rekey_run('m.t'::regclass, time_column => 'created_at'::name, max_batches => 0)")
        .unwrap();
    let genuine = one_string(
        &mut owner,
        "SELECT snapshot::text FROM objectid_internal.rekey_state",
    );
    assert!(genuine.contains("\"joins\""), "{genuine}");
    owner
        .batch_execute(
            "UPDATE objectid_internal.rekey_state
                SET snapshot = jsonb_set(snapshot, '{rows}', (snapshot -> 'rows')
                    || '{\"09\": 1, \"010\": 2, \"x\": 3, \"4294967296\": 4, \"0\": 5, \" 7\": 6, \"12\": \"many\", \"13\": 1.5}'::jsonb)
                    || '{\"joins\": {\"09\": 1, \"abc\": 2}, \"extra\": [1]}'::jsonb",
        )
        .unwrap();
    admin
        .batch_execute("ALTER EXTENSION pg_objectid UPDATE")
        .unwrap();
    assert_eq!(
        one_string(
            &mut admin,
            "SELECT string_agg(format('%s %s %s', counted::regclass, constraint_id IS NOT NULL, n), '; '
                               ORDER BY counted::regclass::text, constraint_id IS NOT NULL)
               FROM objectid_internal.rekey_snapshot"
        ),
        "m.c f 5; m.t f 5"
    );
    assert_eq!(
        one_string(
            &mut admin,
            "SELECT extversion FROM pg_extension WHERE extname = 'pg_objectid'"
        ),
        env!("CARGO_PKG_VERSION")
    );
}
