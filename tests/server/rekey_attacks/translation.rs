//! Who may translate old keys (issue 38): whoever may read every row of the key column of the table
//! the mapping table was made for, or was granted SELECT on the mapping table, whoever ran the
//! rekey. A superuser runs the rekey of another role's table (whose mapping table it makes, with
//! its own default privileges); the application's role, which reads the table, translates (0.7.0
//! refused it, 42501); every role that may not read every key learns no key, through
//! rekey_translate or by calling its internal read with any table.

use postgres::error::SqlState;

use crate::common::*;

#[test]
fn whoever_may_read_every_key_translates_it_and_nobody_else() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    let owner = "rekey_tr_owner";
    let app = "rekey_tr_app";
    let tenant = "rekey_tr_tenant";
    let names_only = "rekey_tr_names";
    let nobody = "rekey_tr_nobody";
    for role in [owner, app, tenant, names_only, nobody] {
        hostile_role(&mut admin, role);
    }
    admin
        .batch_execute(&format!(
            "GRANT CREATE ON SCHEMA public TO {owner}, {nobody}"
        ))
        .unwrap();
    let mut o = connect_as(&db, owner);
    o.batch_execute(&format!(
        "CREATE TABLE accounts (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text, tenant int NOT NULL,
                                created_at timestamptz NOT NULL);
         INSERT INTO accounts (name, tenant, created_at)
              SELECT 'a' || i, i % 2, '2024-01-01+00'::timestamptz + i * interval '1 min' FROM generate_series(1, 50) i;
         GRANT SELECT ON accounts TO {app}, {tenant};
         GRANT SELECT (name, tenant) ON accounts TO {names_only};
         CREATE TABLE old_keys AS SELECT id, tenant FROM accounts;
         SELECT rekey_switch_default('accounts')"
    ))
    .unwrap();
    // The superuser runs it: the mapping table is the superuser's making, the owner's property.
    admin
        .batch_execute("CALL rekey_run('accounts', 'created_at')")
        .unwrap();
    // (old key, new key) of a tenant-0 row, read through the mapping table by the owner.
    let (old0, new0) = {
        let row = o
            .query_one(
                "SELECT m.old_key::text, m.new_key::text FROM accounts_rekey_map m
                   JOIN accounts a ON a.id = m.new_key WHERE a.tenant = 0 ORDER BY m.old_key LIMIT 1",
                &[],
            )
            .unwrap();
        (row.get::<_, String>(0), row.get::<_, String>(1))
    };
    let translate = format!("SELECT rekey_translate('public.accounts', '{old0}')::text");

    // The application reads every row: it translates, as the owner and the superuser do.
    for (who, c) in [
        (app, &mut connect_as(&db, app)),
        (owner, &mut o),
        ("the superuser", &mut admin),
    ] {
        assert_eq!(one_string(c, &translate), new0, "{who}");
    }

    // The others learn no key: a tenant whose policy shows it some rows (this one among them),
    // and with it every role the policies now filter (the application, whose rows no policy
    // shows), a role that may read other columns only, a role that may read nothing.
    o.batch_execute(&format!(
        "ALTER TABLE accounts ENABLE ROW LEVEL SECURITY;
         CREATE POLICY own ON accounts TO {tenant} USING (tenant = 0)"
    ))
    .unwrap();
    assert_eq!(one_string(&mut o, &translate), new0, "the owner");
    let mapping: u32 = admin
        .query_one("SELECT 'public.accounts_rekey_map'::regclass::oid", &[])
        .unwrap()
        .get(0);
    for role in [tenant, app, names_only, nobody] {
        let mut c = connect_as(&db, role);
        let message = expect_error(&mut c, &translate, &SqlState::INSUFFICIENT_PRIVILEGE);
        assert!(
            message.contains("permission denied to translate keys through the mapping table public.accounts_rekey_map"),
            "{role}: {message}"
        );
        expect_error(
            &mut c,
            &format!(
                "SELECT objectid_internal.rekey_translate_read({mapping}::oid, '{old0}')::text"
            ),
            &SqlState::INSUFFICIENT_PRIVILEGE,
        );
    }

    // Row-level security that applies to a role refuses it whatever its policies show: one that
    // shows the application every row does not make it a reader of every key (what a policy shows
    // cannot be told from the catalogs), as docs/migration.md says.
    o.batch_execute(&format!(
        "CREATE POLICY everything ON accounts TO {app} USING (true)"
    ))
    .unwrap();
    let mut a = connect_as(&db, app);
    assert_eq!(one_i64(&mut a, "SELECT count(*) FROM public.accounts"), 50);
    expect_error(&mut a, &translate, &SqlState::INSUFFICIENT_PRIVILEGE);
    drop(a);

    // A role cannot bind the owner's mapping table to a table of its own, nor a table of its own
    // to the owner's table: the comment that binds them is the mapping table's owner's to write,
    // and a mapping table of another owner than its table's binds nothing.
    let mut n = connect_as(&db, nobody);
    let comment = one_string(
        &mut n,
        "SELECT objectid_internal.rekey_mapping_comment('public.accounts'::regclass)",
    );
    expect_error(
        &mut n,
        &format!("COMMENT ON TABLE public.accounts_rekey_map IS '{comment}'"),
        &SqlState::INSUFFICIENT_PRIVILEGE,
    );
    n.batch_execute(&format!(
        "CREATE TABLE public.mine (id uuid PRIMARY KEY, created_at timestamptz);
         CREATE TABLE public.forged (old_key uuid PRIMARY KEY, new_key uuid NOT NULL, batch bigint NOT NULL);
         INSERT INTO public.forged VALUES ('{old0}', gen_random_uuid(), 1);
         COMMENT ON TABLE public.forged IS '{comment}'"
    ))
    .unwrap();
    // Its own table it may read anyway; what it reads there is what it wrote, never the owner's.
    assert_ne!(
        one_string(
            &mut n,
            &format!("SELECT objectid_internal.rekey_translate_read('public.forged'::regclass::oid, '{old0}')::text")
        ),
        new0
    );
    expect_error(&mut n, &translate, &SqlState::INSUFFICIENT_PRIVILEGE);

    for role in [owner, app, tenant, names_only, nobody] {
        assert!(!is_superuser(&mut admin, role), "{role}");
    }
}
