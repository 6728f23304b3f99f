//! What the toolkit tells a superuser to run next, followed verbatim in a database whose owner
//! planted a text-taking overload of every documented routine (issue 36): in `public`, which the
//! database owner owns from PostgreSQL 15 on and where a trusted install puts the extension, and in
//! a schema named like the superuser, which `"$user"` puts first on its search_path. An untyped
//! literal prefers the planted `text` version even in a qualified call; every call the toolkit
//! prints is qualified and cast, so none of them reaches a planted one, and the plan and the
//! assessment name every planted function.

use std::str::FromStr;
use std::sync::{Arc, Mutex};

use postgres::error::SqlState;
use postgres::{Client, NoTls};

use super::counted;
use crate::common::*;

const DBO: &str = "rekey_printed_dbo";

/// The overloads planted, `(routine, kind, parameters)`, with the documented parameter names so
/// that named notation (`time_column =>`) reaches them too.
const PLANTED: &[(&str, &str, &str)] = &[
    ("rekey_assess", "f", "tbl text"),
    ("rekey_assess_schema", "f", "schema_name text"),
    ("rekey_references", "f", "tbl text"),
    ("rekey_plan", "f", "tbl text"),
    ("rekey_plan", "f", "tbl text, time_column text"),
    ("rekey_switch_default", "f", "tbl text"),
    ("rekey_run", "p", "tbl text"),
    ("rekey_run", "p", "tbl text, time_column text"),
    ("rekey_translate", "f", "tbl text, old_key text"),
    ("rekey_verify", "f", "tbl text"),
    ("rekey_forget", "f", "tbl text"),
    ("uuidv7_at", "f", "at text"),
];

/// Counts its call, and makes the database owner a superuser when it runs as one.
const BODY: &str = "BEGIN
        PERFORM nextval('planted.calls');
        IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
            EXECUTE 'ALTER ROLE rekey_printed_dbo SUPERUSER';
        END IF;";

fn plant(schema: &str) -> String {
    let mut sql = String::new();
    for (name, kind, params) in PLANTED {
        sql.push_str(&if *kind == "p" {
            format!(
                "CREATE PROCEDURE {schema}.{name}({params}) LANGUAGE plpgsql AS $p$ {BODY} END $p$;\n"
            )
        } else {
            format!(
                "CREATE FUNCTION {schema}.{name}({params}) RETURNS SETOF text LANGUAGE plpgsql AS $p$ {BODY} RETURN; END $p$;\n"
            )
        });
    }
    sql
}

/// A connection as the superuser that keeps every NOTICE and WARNING it receives.
fn connect_keeping_notices(db: &str) -> (Client, Arc<Mutex<Vec<String>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let kept = notices.clone();
    let client = postgres::Config::from_str(&format!("{} dbname={db}", dsn()))
        .unwrap()
        .notice_callback(move |n| kept.lock().unwrap().push(n.message().to_string()))
        .connect(NoTls)
        .unwrap();
    (client, notices)
}

/// The call that `text` prints after `opening` (`SELECT * FROM `, `CALL `, `SELECT `): the
/// routine's name and its parenthesised arguments, quotes respected.
fn printed_call(text: &str, opening: &str) -> String {
    let start = text
        .find(opening)
        .unwrap_or_else(|| panic!("no {opening:?} in {text:?}"));
    let mut depth = 0;
    let mut quoted = false;
    for (i, ch) in text[start..].char_indices() {
        match ch {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth -= 1;
                if depth == 0 {
                    return text[start..=start + i].to_string();
                }
            }
            _ => {}
        }
    }
    panic!("no call closes in {text:?}")
}

/// The error `sql` raises, with its HINT.
fn error_with_hint(c: &mut Client, sql: &str) -> (SqlState, String, String) {
    let e = c.batch_execute(sql).expect_err(&format!("{sql} succeeded"));
    let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e:?}"));
    (
        db.code().clone(),
        db.message().to_string(),
        db.hint().unwrap_or_default().to_string(),
    )
}

fn last_notice(notices: &Arc<Mutex<Vec<String>>>, containing: &str) -> String {
    notices
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|n| n.contains(containing))
        .cloned()
        .unwrap_or_else(|| panic!("no notice with {containing:?}"))
}

#[test]
fn a_superuser_who_follows_every_printed_call_runs_only_the_toolkit() {
    let Database {
        name: db,
        client: mut setup,
    } = empty_database("");
    hostile_role(&mut setup, DBO);
    setup
        .batch_execute(&format!(
            "ALTER DATABASE {db} OWNER TO {DBO}; GRANT CREATE ON SCHEMA public TO {DBO};"
        ))
        .unwrap();
    let mut dbo = connect_as(&db, DBO);
    // A trusted install by the database owner, into public; its traps there and in "postgres",
    // the schema "$user" names for the superuser that runs the toolkit below.
    dbo.batch_execute(&format!(
        "CREATE EXTENSION pg_objectid;
         CREATE SCHEMA planted; CREATE SEQUENCE planted.calls;
         GRANT USAGE ON SCHEMA planted TO PUBLIC; GRANT USAGE ON SEQUENCE planted.calls TO PUBLIC;
         CREATE FUNCTION planted.rows() RETURNS SETOF text LANGUAGE plpgsql AS $p$ {BODY} RETURN; END $p$;
         CREATE SCHEMA postgres;
         CREATE VIEW postgres.rekey_status AS SELECT * FROM planted.rows();
         {}{}
         -- The extension is the database owner's: it may make its own plants members.
         ALTER EXTENSION pg_objectid ADD FUNCTION postgres.rekey_verify(text);
         ALTER EXTENSION pg_objectid ADD PROCEDURE postgres.rekey_run(text, text);
         ALTER EXTENSION pg_objectid ADD VIEW postgres.rekey_status;",
        plant("public"),
        plant("postgres")
    ))
    .unwrap();

    let (mut admin, notices) = connect_keeping_notices(&db);
    assert_eq!(
        one_string(&mut admin, "SHOW search_path"),
        "\"$user\", public"
    );
    admin
        .batch_execute(
            "CREATE TABLE public.customers (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                                            created_at timestamptz NOT NULL, other_at timestamptz);
             CREATE TABLE public.orders (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                                         customer_id uuid REFERENCES public.customers ON UPDATE CASCADE);
             INSERT INTO public.customers (created_at)
                 SELECT '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 minute' FROM generate_series(1, 60) i;
             INSERT INTO public.orders (customer_id) SELECT id FROM public.customers;",
        )
        .unwrap();

    // The assessment and the plan name every planted function and the planted view.
    let notes = one_string(
        &mut admin,
        "SELECT array_to_string(notes, E'\\n') FROM public.rekey_assess('public.customers'::regclass)",
    );
    let plan = strings(
        &mut admin,
        "SELECT * FROM public.rekey_plan('public.customers'::regclass, time_column => 'created_at'::name)",
    )
    .join("\n");
    for schema in ["public", "postgres"] {
        for (name, _, params) in PLANTED {
            let types: Vec<&str> = params
                .split(", ")
                .map(|p| p.split(' ').nth(1).unwrap())
                .collect();
            let signature = format!("{schema}.{name}({})", types.join(","));
            assert!(notes.contains(&signature), "{signature} not in\n{notes}");
            assert!(plan.contains(&signature), "{signature} not in\n{plan}");
        }
    }
    assert!(
        plan.contains("postgres.rekey_status (a relation of rekey_printed_dbo)"),
        "{plan}"
    );
    assert!(plan.contains("\nWarnings:\n"), "{plan}");

    // The plan's steps, as printed; the first CALL stops at a problem, whose HINT prints the plan.
    let step = |opening: &str| {
        let line = plan
            .lines()
            .find(|l| {
                l.trim_start().starts_with(|c: char| c.is_ascii_digit()) && l.contains(opening)
            })
            .unwrap_or_else(|| panic!("no step {opening:?} in\n{plan}"));
        printed_call(line, opening)
    };
    let switch = step("SELECT public.rekey_switch_default(");
    let run = step("CALL public.rekey_run(");
    let verify = step("SELECT * FROM public.rekey_verify(");
    assert_eq!(
        run,
        "CALL public.rekey_run('public.customers'::pg_catalog.regclass, time_column => 'created_at'::pg_catalog.name)"
    );
    // Before the switch, the run is refused, and the problem says how to switch.
    let e = admin.batch_execute(&run).unwrap_err();
    let detail = e.as_db_error().unwrap().detail().unwrap().to_string();
    assert_eq!(
        printed_call(&detail, "SELECT public.rekey_switch_default("),
        switch
    );
    admin.batch_execute(&switch).unwrap();
    let (_, message, hint) = error_with_hint(&mut admin, &run);
    assert!(message.contains("no btree index"), "{message}");
    let plan_again = printed_call(&hint, "SELECT * FROM ");
    assert!(
        strings(&mut admin, &plan_again)
            .iter()
            .any(|l| l.contains("no btree index")),
        "{plan_again}"
    );
    admin
        .batch_execute("CREATE INDEX ON public.orders (customer_id)")
        .unwrap();

    // A run paused after one batch prints how to go on; a run whose batch cannot get its row
    // locks prints how to resume.
    admin
        .batch_execute(
            "CALL public.rekey_run('public.customers'::regclass, time_column => 'created_at'::name,
                                   batch_size => 10, max_batches => 1)",
        )
        .unwrap();
    let paused = last_notice(&notices, "paused after");
    let go_on = printed_call(&paused, "CALL ");
    let mut locker = connect_to(&db);
    locker
        .batch_execute("BEGIN; SELECT FROM public.customers FOR UPDATE")
        .unwrap();
    let (state, message, hint) = error_with_hint(
        &mut admin,
        "CALL public.rekey_run('public.customers'::regclass, lock_timeout => '20ms'::interval, max_retries => 0)",
    );
    assert_eq!(state, SqlState::LOCK_NOT_AVAILABLE, "{message}");
    let resume = printed_call(&hint, "CALL ");
    locker.batch_execute("ROLLBACK").unwrap();
    admin.batch_execute(&go_on).unwrap();
    let finished = last_notice(&notices, "finished:");
    admin.batch_execute(&resume).unwrap();
    admin.batch_execute(&run).unwrap();
    for check in [printed_call(&finished, "SELECT * FROM "), verify.clone()] {
        let failed = strings(
            &mut admin,
            &format!("SELECT check_name || ': ' || status FROM ({check}) v WHERE status <> 'ok'"),
        );
        assert!(failed.is_empty(), "{check}: {failed:?}");
    }
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM public.customers WHERE public.uuid_extract_version(id) = 7"
        ),
        60
    );
    assert!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM public.rekey_status WHERE state = 'finished'"
        ) == 1
    );

    // Another time column: the HINT prints how to forget the rekey. A record whose primary key
    // changed: so does rekey_state_of's. The first forgets; the second then finds nothing to forget.
    let (state, _, hint) = error_with_hint(
        &mut admin,
        "CALL public.rekey_run('public.customers'::regclass, time_column => 'other_at'::name)",
    );
    assert_eq!(state, SqlState::INVALID_PARAMETER_VALUE);
    let forget_1 = printed_call(&hint, "SELECT ");
    admin
        .batch_execute("UPDATE objectid_internal.rekey_state SET key_constraint = 0")
        .unwrap();
    let (state, _, hint) = error_with_hint(&mut admin, &verify);
    assert_eq!(state, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE);
    let forget_2 = printed_call(&hint, "SELECT ");
    assert!(one_string(&mut admin, &forget_2).starts_with("forgot the rekey of public.customers"));
    let (state, message, _) = error_with_hint(&mut admin, &forget_1);
    assert_eq!(state, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE);
    assert!(
        message.contains("no rekey of public.customers is recorded"),
        "{message}"
    );

    // A table partitioned by its time: the refusal's HINT names the function to rewrite its keys
    // with, qualified and cast.
    admin
        .batch_execute(
            "CREATE TABLE public.readings (id uuid DEFAULT gen_random_uuid(), created_at timestamptz NOT NULL,
                                           PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at)",
        )
        .unwrap();
    let (state, _, hint) = error_with_hint(
        &mut admin,
        "SELECT * FROM public.rekey_plan('public.readings'::regclass, time_column => 'created_at'::name)",
    );
    assert_eq!(state, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE);
    assert!(
        hint.contains("SET id = public.uuidv7_at(created_at::pg_catalog.timestamptz)"),
        "{hint}"
    );
    admin
        .batch_execute("SELECT public.uuidv7_at(now()::pg_catalog.timestamptz)")
        .unwrap();

    // A batch of a rekey not started: its HINT names the run to start it with.
    let (_, _, hint) = error_with_hint(
        &mut admin,
        "SELECT objectid_internal.rekey_batch('public.customers'::regclass, 10, false)",
    );
    let start = printed_call(&hint, "CALL ").replace("TIME_COLUMN", "created_at");
    admin.batch_execute(&start).unwrap();

    assert_eq!(
        counted(&mut admin, "planted.calls"),
        0,
        "a planted routine ran"
    );
    assert!(!is_superuser(&mut admin, DBO));
    // And the planted ones are there to be reached: an untyped call takes one.
    admin
        .batch_execute("SELECT * FROM public.rekey_verify('public.customers')")
        .unwrap();
    assert_eq!(counted(&mut admin, "planted.calls"), 1);
    admin
        .batch_execute(&format!("ALTER ROLE {DBO} NOSUPERUSER"))
        .unwrap();
}

/// The run a plan prints is the run it planned: with the batch size, mapping table and
/// fire_triggers it was asked about; a refusal's HINT prints the plan the same way.
#[test]
fn the_printed_run_carries_the_arguments_of_the_plan() {
    let Database { client: mut c, .. } = database_with_extension("");
    c.batch_execute(
        "CREATE SCHEMA \"Sch'ema\";
         CREATE TABLE \"Sch'ema\".\"Ta'b le\\x\" (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                                             \"Creat'd At\" timestamptz NOT NULL DEFAULT now(), touched timestamptz);
         INSERT INTO \"Sch'ema\".\"Ta'b le\\x\" SELECT FROM generate_series(1, 30);
         CREATE FUNCTION public.touch() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN NEW.touched := pg_catalog.now(); RETURN NEW; END $$;
         CREATE TRIGGER touch BEFORE UPDATE ON \"Sch'ema\".\"Ta'b le\\x\" FOR EACH ROW EXECUTE FUNCTION public.touch();",
    )
    .unwrap();
    let plan = strings(
        &mut c,
        "SELECT * FROM public.rekey_plan('\"Sch''ema\".\"Ta''b le\\x\"'::regclass, time_column => 'Creat''d At'::name,
                                         batch_size => 7, mapping_table => '\"Sch''ema\".\"my ''map\"'::text,
                                         fire_triggers => true)",
    )
    .join("\n");
    assert!(plan.contains("Problems that stop it: none"), "{plan}");
    let line = plan
        .lines()
        .find(|l| l.contains("CALL public.rekey_run("))
        .unwrap();
    let run = printed_call(line, "CALL ");
    assert_eq!(
        run,
        "CALL public.rekey_run(E'\"Sch''ema\".\"Ta''b le\\\\x\"'::pg_catalog.regclass, \
         time_column => 'Creat''d At'::pg_catalog.name, batch_size => 7, \
         mapping_table => '\"Sch''ema\".\"my ''map\"'::pg_catalog.text, fire_triggers => true)"
    );
    let switch = printed_call(
        plan.lines()
            .find(|l| l.contains("SELECT public.rekey_switch_default("))
            .unwrap(),
        "SELECT ",
    );
    c.batch_execute(&switch).unwrap();
    // Without fire_triggers the run is refused, and its HINT prints the plan it was asked about.
    let e = c
        .batch_execute(&run.replace(", fire_triggers => true", ""))
        .unwrap_err();
    let hint = e.as_db_error().unwrap().hint().unwrap().to_string();
    let plan_again = printed_call(&hint, "SELECT * FROM ");
    assert!(
        plan_again.contains("mapping_table => '\"Sch''ema\".\"my ''map\"'::pg_catalog.text"),
        "{plan_again}"
    );
    assert!(
        strings(&mut c, &plan_again)
            .iter()
            .any(|l| l.contains("trigger")),
        "{plan_again}"
    );
    c.batch_execute(&run).unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM \"Sch'ema\".\"my 'map\" m JOIN \"Sch'ema\".\"Ta'b le\\x\" t ON t.id = m.new_key
              WHERE public.uuid_extract_version(t.id) = 7 AND t.touched IS NOT NULL"
        ),
        30
    );
}
