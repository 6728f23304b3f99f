//! The fast path on real schemas (issue 38): a batch's rewrite leaves out the foreign-key checks
//! it satisfies by construction wherever nothing of the owner's can change what it stores, decided
//! per table as PostgreSQL decides what runs (a policy only where it applies to the owner, a
//! trigger only where it fires); a BEFORE trigger that fires keeps its own table's per-row checks
//! and is honoured; rekey_plan, every batch's NOTICE and rekey_status say which; and an ON UPDATE
//! action of a foreign key to columns the rekey does not change is refused only where those
//! columns can change or the owners differ.

use std::str::FromStr;
use std::sync::{Arc, Mutex};

use postgres::error::SqlState;
use postgres::{Client, NoTls};

use crate::common::*;

/// A connection to `db` as the tests' superuser that keeps every notice (DEBUG1 too: the count of
/// foreign-key triggers each batch left out).
fn connect_collecting(db: &str) -> (Client, Arc<Mutex<Vec<String>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let kept = notices.clone();
    let mut client = postgres::Config::from_str(&format!("{} dbname={db}", dsn()))
        .unwrap()
        .notice_callback(move |n| kept.lock().unwrap().push(n.message().to_owned()))
        .connect(NoTls)
        .unwrap();
    client
        .batch_execute("SET client_min_messages = debug1")
        .unwrap();
    (client, notices)
}

/// The foreign-key triggers the batches reported leaving out.
fn left_out(notices: &[String]) -> usize {
    notices
        .iter()
        .filter_map(|n| n.strip_prefix("the rekey batch's rewrite leaves out "))
        .map(|rest| rest.split(' ').next().unwrap().parse::<usize>().unwrap())
        .sum()
}

/// The fast-path part of each batch's progress NOTICE.
fn batch_fast_paths(notices: &[String]) -> Vec<String> {
    notices
        .iter()
        .filter(|n| n.contains(" keys/s, about "))
        .map(|n| n.rsplit_once("; fast path ").unwrap().1.to_owned())
        .collect()
}

/// The held-out schema's shape (issue 38), owned by `owner`: accounts <- orders <- order_items, each
/// ON UPDATE CASCADE (orders.id is a plain column the rekey of accounts never changes), a policy
/// for the application role on orders (not forced, so never the owner's), an AFTER UPDATE OF name
/// trigger (never fired by the rewrite) and an audit trigger on orders that does fire, writing who
/// it ran as.
fn create_chain(c: &mut Client, app: &str) {
    c.batch_execute(&format!(
        "CREATE TABLE accounts (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL,
                                created_at timestamptz NOT NULL);
         INSERT INTO accounts (name, created_at)
              SELECT 'a' || i, '2024-01-01+00'::timestamptz + i * interval '1 min' FROM generate_series(1, 400) i;
         CREATE TABLE orders (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                              account_id uuid NOT NULL REFERENCES accounts ON UPDATE CASCADE,
                              updated_at timestamptz);
         CREATE INDEX ON orders (account_id);
         INSERT INTO orders (account_id) SELECT id FROM accounts, generate_series(1, 3);
         CREATE TABLE order_items (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                                   order_id uuid NOT NULL REFERENCES orders ON UPDATE CASCADE, qty int);
         CREATE INDEX ON order_items (order_id);
         INSERT INTO order_items (order_id, qty) SELECT id, 1 FROM orders, generate_series(1, 2);
         ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
         CREATE POLICY tenant ON orders TO {app} USING (false);
         CREATE FUNCTION renamed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'renamed'; RETURN NEW; END $$;
         CREATE TRIGGER renamed AFTER UPDATE OF name ON accounts FOR EACH ROW EXECUTE FUNCTION renamed();
         CREATE TABLE audit (tbl text, op text, who name, at timestamptz DEFAULT now());
         CREATE FUNCTION audited() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN INSERT INTO public.audit (tbl, op, who) VALUES (TG_TABLE_NAME, TG_OP, current_user); RETURN NULL; END $$;
         CREATE TRIGGER audited AFTER UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION audited();
         SELECT rekey_switch_default('accounts');
         ANALYZE"
    ))
    .unwrap();
}

/// On the held-out schema's shape, run by a superuser on another role's tables: no refusal of the
/// three-level ON UPDATE CASCADE chain (0.7.0 refused it), the fast path on in the plan, in every
/// batch and in rekey_status (0.7.0 turned it off for the policy and for either trigger), the
/// audit trigger run for every rewritten order as the tables' owner, and everything consistent.
#[test]
fn a_real_schema_takes_the_fast_path_where_nothing_can_run() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    let (owner, app) = ("rekey_fp_owner", "rekey_fp_app");
    hostile_role(&mut admin, owner);
    hostile_role(&mut admin, app);
    admin
        .batch_execute(&format!("GRANT CREATE ON SCHEMA public TO {owner}"))
        .unwrap();
    create_chain(&mut connect_as(&db, owner), app);
    let (mut c, notices) = connect_collecting(&db);
    let plan = strings(
        &mut c,
        "SELECT * FROM rekey_plan('accounts', 'created_at', fire_triggers => true)",
    )
    .join("\n");
    assert!(plan.contains("Problems that stop it: none"), "{plan}");
    assert!(plan.contains("        fast path on: "), "{plan}");
    c.batch_execute(
        "CALL rekey_run('accounts', 'created_at', batch_size => 100, fire_triggers => true)",
    )
    .unwrap();
    let notices = notices.lock().unwrap().clone();
    let paths = batch_fast_paths(&notices);
    assert!(paths.len() >= 4, "{notices:#?}");
    assert!(paths.iter().all(|p| p == "on"), "{paths:?}");
    assert!(left_out(&notices) >= 4 * 2, "{notices:#?}");
    assert!(
        !notices.iter().any(|n| n == "renamed"),
        "UPDATE OF name fired"
    );
    assert_eq!(
        one_string(
            &mut c,
            "SELECT fast_path FROM rekey_status WHERE table_name = 'accounts'::regclass"
        ),
        "on"
    );
    assert_eq!(
        one_string(
            &mut c,
            "SELECT count(*) || ' ' || string_agg(DISTINCT who, ',') FROM audit WHERE op = 'UPDATE'"
        ),
        format!("1200 {owner}"),
        "the audit trigger fired for every order, as the tables' owner"
    );
    let bad: Vec<String> = strings(
        &mut c,
        "SELECT check_name || ': ' || detail FROM rekey_verify('accounts') WHERE status <> 'ok'",
    );
    assert!(bad.is_empty(), "{bad:#?}");
    for (what, sql) in [
        ("v4 keys", "SELECT count(*) FROM accounts WHERE uuid_extract_version(id) <> 7"),
        (
            "orphan orders",
            "SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT FROM accounts a WHERE a.id = o.account_id)",
        ),
        (
            "orphan items",
            "SELECT count(*) FROM order_items i WHERE NOT EXISTS (SELECT FROM orders o WHERE o.id = i.order_id)",
        ),
    ] {
        assert_eq!(one_i64(&mut c, sql), 0, "{what}");
    }
    assert_eq!(one_i64(&mut c, "SELECT count(*) FROM order_items"), 2400);
    assert!(!is_superuser(&mut c, owner));
}

/// Parents and children with a BEFORE UPDATE trigger of the owner's on the children, which fires on
/// the rewrite (fire_triggers): `body` is the trigger's body.
fn family_with_before_trigger(db: &str, body: &str) -> Client {
    family_with_before_trigger_on(db, body, "NO ACTION")
}

/// The same, the children's foreign key ON UPDATE `action`.
fn family_with_before_trigger_on(db: &str, body: &str, action: &str) -> Client {
    let mut c = connect_to(db);
    c.batch_execute(&format!(
        "CREATE TABLE parent (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz NOT NULL);
         INSERT INTO parent (created_at)
              SELECT '2024-01-01+00'::timestamptz + i * interval '1 min' FROM generate_series(1, 300) i;
         CREATE TABLE child (id serial PRIMARY KEY, parent_id uuid NOT NULL REFERENCES parent ON UPDATE {action},
                             updated_at timestamptz);
         CREATE INDEX ON child (parent_id);
         INSERT INTO child (parent_id) SELECT id FROM parent, generate_series(1, 2);
         CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} END $$;
         CREATE TRIGGER touch BEFORE UPDATE ON child FOR EACH ROW EXECUTE FUNCTION touch();
         SELECT rekey_switch_default('parent');
         ANALYZE"
    ))
    .unwrap();
    c
}

/// An `updated_at` trigger (BEFORE UPDATE, every row) keeps the per-row checks of its own table
/// only: the plan, each batch and rekey_status name it, the parent's checks are still left out, and
/// the trigger ran for every child. A BEFORE trigger that stores another parent than the new key,
/// or keeps the row from changing, is honoured as PostgreSQL's checks would honour it: the batch
/// fails (23503) and nothing changes.
#[test]
fn a_before_trigger_keeps_the_per_row_checks_of_its_table() {
    let db = database_with_extension("").name;
    let mut c = family_with_before_trigger(&db, "NEW.updated_at := now(); RETURN NEW;");
    let plan = strings(
        &mut c,
        "SELECT * FROM rekey_plan('parent', 'created_at', fire_triggers => true)",
    )
    .join("\n");
    let expected =
        "on, but for the per-row checks of the tables where BEFORE trigger touch fires on public.child";
    assert!(plan.contains(&format!("fast path {expected}: ")), "{plan}");
    let (mut runner, notices) = connect_collecting(&db);
    runner
        .batch_execute(
            "CALL rekey_run('parent', 'created_at', batch_size => 100, fire_triggers => true)",
        )
        .unwrap();
    let notices = notices.lock().unwrap().clone();
    let paths = batch_fast_paths(&notices);
    assert!(
        !paths.is_empty() && paths.iter().all(|p| p == expected),
        "{paths:?}"
    );
    // The parent's NO ACTION trigger, in each of the three batches.
    assert!(left_out(&notices) >= 3, "{notices:#?}");
    assert_eq!(
        one_string(&mut c, "SELECT fast_path FROM rekey_status"),
        expected
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM child WHERE updated_at IS NOT NULL"
        ),
        600
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM child c JOIN parent p ON p.id = c.parent_id WHERE uuid_extract_version(p.id) = 7"
        ),
        600
    );

    // Skipped under a cascade too, which PostgreSQL's own cascade would not notice: the check
    // after the rewrite does.
    for (suffix, body, action) in [
        (
            "elsewhere",
            "NEW.parent_id := gen_random_uuid(); RETURN NEW;",
            "NO ACTION",
        ),
        ("skipped", "RETURN NULL;", "NO ACTION"),
        ("skipped_cascade", "RETURN NULL;", "CASCADE"),
    ] {
        let db = database_with_extension(suffix).name;
        let mut c = family_with_before_trigger_on(&db, body, action);
        let before = one_string(
            &mut c,
            "SELECT string_agg(c.id || ' ' || c.parent_id, ',' ORDER BY c.id) FROM child c",
        );
        let (state, message) = error_of(
            &mut c,
            "CALL rekey_run('parent', 'created_at', batch_size => 100, fire_triggers => true, max_retries => 1)",
        );
        assert_eq!(
            state,
            SqlState::FOREIGN_KEY_VIOLATION,
            "{suffix}: {message}"
        );
        assert_eq!(
            one_string(
                &mut c,
                "SELECT string_agg(c.id || ' ' || c.parent_id, ',' ORDER BY c.id) FROM child c"
            ),
            before,
            "{suffix}"
        );
        assert_eq!(
            one_i64(
                &mut c,
                "SELECT count(*) FROM parent WHERE uuid_extract_version(id) = 7"
            ),
            0,
            "{suffix}"
        );
    }
}

/// Row-level security forced on the owner, the one kind that applies to the rewrite, is refused as
/// before, and the plan says the fast path would be off for it.
#[test]
fn a_policy_that_applies_to_the_owner_is_refused_and_named() {
    let db = database_with_extension("").name;
    let mut c = family_with_before_trigger(&db, "RETURN NEW;");
    c.batch_execute(
        "DROP TRIGGER touch ON child;
         ALTER TABLE child ENABLE ROW LEVEL SECURITY;
         CREATE POLICY half ON child USING (id % 2 = 0)",
    )
    .unwrap();
    // Not forced: it never applies to the owner, who runs the rewrite.
    let plan = strings(&mut c, "SELECT * FROM rekey_plan('parent', 'created_at')").join("\n");
    assert!(plan.contains("fast path on: "), "{plan}");
    // The test runs as a superuser, which row-level security never applies to: the table goes to
    // a role it does apply to once forced.
    hostile_role(&mut c, "rekey_fp_forced");
    c.batch_execute(
        "ALTER TABLE child FORCE ROW LEVEL SECURITY;
         ALTER TABLE parent OWNER TO rekey_fp_forced;
         ALTER TABLE child OWNER TO rekey_fp_forced",
    )
    .unwrap();
    let plan = strings(&mut c, "SELECT * FROM rekey_plan('parent', 'created_at')").join("\n");
    assert!(
        plan.contains("row-level security applies to rekey_fp_forced on public.child"),
        "{plan}"
    );
    assert!(
        plan.contains(
            "fast path off: row-level security applies to rekey_fp_forced on public.child: "
        ),
        "{plan}"
    );
}

/// A foreign key to columns the rekey does not change, with an ON UPDATE action (here the middle
/// link of accounts <- orders <- order_items, which the rekey of accounts reaches as orders'
/// table), is refused only where those columns can change in the rewrite or another role owns the
/// referencing table; between tables of one owner with a plain column it is not (the first test).
#[test]
fn an_on_update_action_is_refused_only_where_it_can_run() {
    let Database {
        client: mut admin, ..
    } = database_with_extension("");
    hostile_role(&mut admin, "rekey_fp_app2");
    let fresh = |admin: &mut Client| {
        admin
            .batch_execute(
                "DROP TABLE IF EXISTS order_items, orders, accounts, audit CASCADE;
                 DROP FUNCTION IF EXISTS renamed(), audited(), touch()",
            )
            .unwrap();
        create_chain(admin, "rekey_fp_app2");
        admin
            .batch_execute("DROP TRIGGER audited ON orders")
            .unwrap();
    };
    let problems = |admin: &mut Client, fire: bool| -> Vec<String> {
        strings(
            admin,
            &format!(
                "SELECT p.problem FROM objectid_internal.rekey_problems('accounts'::regclass, 'created_at'::name,
                                                                           NULL::text, {fire})
                     p WHERE p.problem LIKE 'foreign key %'"
            ),
        )
    };
    fresh(&mut admin);
    assert!(problems(&mut admin, false).is_empty());

    // A BEFORE trigger the run fires on orders could change orders.id.
    admin
        .batch_execute(
            "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
             CREATE TRIGGER touch BEFORE UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION touch()",
        )
        .unwrap();
    let found = problems(&mut admin, true);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with(
            "foreign key order_items_order_id_fkey of public.order_items references columns of public.orders ON UPDATE CASCADE, and the run fires BEFORE trigger touch on public.orders"
        ),
        "{found:?}"
    );

    // A stored generated column made from the rewritten one.
    fresh(&mut admin);
    admin
        .batch_execute(
            "ALTER TABLE order_items DROP CONSTRAINT order_items_order_id_fkey;
             ALTER TABLE orders ADD COLUMN code text GENERATED ALWAYS AS (account_id::text || '-' || id::text) STORED UNIQUE;
             ALTER TABLE order_items ADD COLUMN order_code text REFERENCES orders (code) ON UPDATE CASCADE",
        )
        .unwrap();
    let found = problems(&mut admin, false);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with(
            "foreign key order_items_order_code_fkey of public.order_items references public.orders (code), generated from columns the rekey rewrites, ON UPDATE CASCADE"
        ),
        "{found:?}"
    );

    // Another owner's referencing table.
    fresh(&mut admin);
    admin
        .batch_execute("ALTER TABLE order_items OWNER TO rekey_fp_app2")
        .unwrap();
    let found = problems(&mut admin, false);
    let me = one_string(&mut admin, "SELECT current_user::text");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with(&format!(
            "foreign key order_items_order_id_fkey of public.order_items (owned by rekey_fp_app2) references columns of public.orders (owned by {me}) other than the key, ON UPDATE CASCADE"
        )),
        "{found:?}"
    );
}
