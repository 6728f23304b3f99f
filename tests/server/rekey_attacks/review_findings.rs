//! What the first three adversarial reviews of 0.6.0, and the review of 0.8.0's narrowed checks,
//! found, each now refused.

use postgres::Client;

use super::{counted, refused};
use crate::common::*;

/// What the first adversarial review of 0.6.0 found, each now refused: a statistics object on a
/// mapping table (its expression is folded when rekey_translate plans its read, as the caller); a
/// domain named text on the caller's path (rekey_run, a procedure, compiles its variables' types
/// there); a session-level advisory lock taken by the owner's code (it outlives the operation and
/// would pose as a run of another table's rekey), or a cursor (its query runs as whoever fetches);
/// pgstattuple's pgstatindex called through the
/// toolkit without EXECUTE on it; and a schema whose name needs quoting.
#[test]
fn review_1_findings_stay_closed() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    let version = server_version(&mut admin);
    hostile_role(&mut admin, "rekey_review_owner");
    hostile_role(&mut admin, "rekey_review_nobody");
    admin
        .batch_execute(
            "CREATE SCHEMA m AUTHORIZATION rekey_review_owner;
             CREATE TABLE public.orders (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
             INSERT INTO public.orders SELECT gen_random_uuid(), now() FROM generate_series(1, 20);",
        )
        .unwrap();
    let mut owner = connect_as(&db, "rekey_review_owner");
    owner
        .batch_execute(
            "GRANT USAGE ON SCHEMA m TO PUBLIC;
             CREATE SEQUENCE m.ran_as_someone_else; GRANT USAGE ON SEQUENCE m.ran_as_someone_else TO PUBLIC;
             CREATE FUNCTION m.evil_v() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
             BEGIN
               IF current_user <> 'rekey_review_owner' THEN PERFORM nextval('m.ran_as_someone_else'); END IF;
               IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                 EXECUTE 'ALTER ROLE rekey_review_owner SUPERUSER';
               END IF;
               RETURN true;
             END $$;
             CREATE FUNCTION m.evil(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS
                 'BEGIN RETURN m.evil_v(); END';
             CREATE DOMAIN m.text AS pg_catalog.text CHECK (m.evil_v());
             CREATE DOMAIN m.float8 AS pg_catalog.float8 CHECK (m.evil_v());
             CREATE TABLE m.q (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz);
             CREATE TABLE m.q_fake (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE, batch bigint NOT NULL);
             DO $$ BEGIN
                 EXECUTE format('COMMENT ON TABLE m.q_fake IS %L', objectid_internal.rekey_mapping_comment('m.q'));
             END $$;
             CREATE FUNCTION m.grab() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_review_owner' THEN
                 PERFORM pg_advisory_lock((1919249273::bigint << 32) | 'public.orders'::regclass::oid::bigint);
               END IF;
               RETURN true;
             END $$;
             CREATE FUNCTION m.open_cursor() RETURNS boolean LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_review_owner'
                  AND NOT EXISTS (SELECT FROM pg_cursors WHERE name = 'planted') THEN
                 EXECUTE 'DECLARE planted CURSOR FOR SELECT m.evil_v()';
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE m.p (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.grab()));
             CREATE TABLE m.r (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), at timestamptz NOT NULL DEFAULT now(),
                               c int DEFAULT 1 CHECK (m.open_cursor()));
             INSERT INTO m.r (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.r ALTER COLUMN id SET DEFAULT public.uuidv7();
             INSERT INTO m.p (at) SELECT now() FROM generate_series(1, 5);
             ALTER TABLE m.p ALTER COLUMN id SET DEFAULT public.uuidv7();",
        )
        .unwrap();
    if version >= 140000 {
        owner
            .batch_execute(
                "CREATE STATISTICS m.q_fake_stats ON ((old_key IS NULL) AND m.evil(1)) FROM m.q_fake",
            )
            .unwrap();
        // The owner's mapping table with a statistics object is refused, never read.
        let key = "5f838efb-8a34-430b-a07d-b3a7611f031a";
        let message = expect_error(
            &mut admin,
            &format!("SELECT rekey_translate('m.q', '{key}')"),
            &postgres::error::SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
        );
        assert!(message.contains("statistics object"), "{message}");
    }
    admin
        .batch_execute("SET search_path = m, pg_catalog, public")
        .unwrap();
    admin
        .batch_execute("CALL public.rekey_run('public.orders', 'at')")
        .unwrap();
    admin.batch_execute("RESET search_path").unwrap();
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM public.orders WHERE public.uuid_extract_version(id) = 7"
        ),
        20
    );
    let message = expect_error(
        &mut admin,
        "CALL rekey_run('m.p', 'at')",
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(message.contains("advisory locks"), "{message}");
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        ),
        0
    );
    // A cursor declared by the owner's code, which would run its query as whoever fetches from it.
    let message = expect_error(
        &mut admin,
        "CALL rekey_run('m.r', 'at', in_one_transaction => true)",
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(message.contains("cursors"), "{message}");
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM pg_cursors WHERE name = 'planted'"
        ),
        0
    );
    assert_eq!(counted(&mut admin, "m.ran_as_someone_else"), 0);
    assert!(!is_superuser(&mut admin, "rekey_review_owner"));

    // pgstattuple is not on PostgreSQL 13's server here (no contrib).
    if one_bool(
        &mut admin,
        "SELECT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'pgstattuple')",
    ) {
        admin.batch_execute("CREATE EXTENSION pgstattuple").unwrap();
        let mut nobody = connect_as(&db, "rekey_review_nobody");
        refused(
            &mut nobody,
            "SELECT objectid_internal.rekey_leaf_density('public.orders_pkey'::regclass::oid)",
        );
    }

    // A schema whose name needs quoting.
    admin
        .batch_execute(
            "CREATE SCHEMA \"Sales\";
             CREATE TABLE \"Sales\".t (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz);
             INSERT INTO \"Sales\".t SELECT gen_random_uuid(), now() FROM generate_series(1, 3)",
        )
        .unwrap();
    admin
        .batch_execute("CALL rekey_run('\"Sales\".t', 'at')")
        .unwrap();
    assert_eq!(
        one_i64(&mut admin, "SELECT count(*) FROM \"Sales\".t_rekey_map"),
        3
    );
}

/// What the second adversarial review found, each now refused: an index expression added to a
/// mapping table between rekey_translate's checks and its read (the read now runs as the mapping
/// table's owner); a partition of another owner, whose statistics expression assess, plan and
/// verify would fold as the table's owner; a foreign key to a partition rather than its
/// partitioned table, whose ON DELETE action a row moving between partitions would fire; and a
/// materialized view whose query leaves an advisory lock and a temporary function behind when
/// rekey_run refreshes it. Also assess of a partitioned key table with pgstattuple installed.
#[test]
fn review_2_findings_stay_closed() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    let version = server_version(&mut admin);
    hostile_role(&mut admin, "rekey_review2_owner");
    admin
        .batch_execute("CREATE SCHEMA h AUTHORIZATION rekey_review2_owner")
        .unwrap();
    let mut owner = connect_as(&db, "rekey_review2_owner");
    owner
        .batch_execute(
            "GRANT USAGE ON SCHEMA h TO PUBLIC;
             CREATE SEQUENCE h.ran_as_someone_else; GRANT USAGE ON SEQUENCE h.ran_as_someone_else TO PUBLIC;
             CREATE FUNCTION h.evil_v() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
             BEGIN
               IF current_user <> 'rekey_review2_owner' THEN PERFORM nextval('h.ran_as_someone_else'); END IF;
               IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                 EXECUTE 'ALTER ROLE rekey_review2_owner SUPERUSER';
               END IF;
               RETURN true;
             END $$;
             CREATE FUNCTION h.evil_imm(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS
                 'BEGIN RETURN h.evil_v(); END';
             CREATE TABLE h.t (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
             INSERT INTO h.t SELECT gen_random_uuid(), now() FROM generate_series(1, 5);",
        )
        .unwrap();
    admin.batch_execute("CALL rekey_run('h.t', 'at')").unwrap();
    let old_key = one_string(
        &mut admin,
        "SELECT old_key::text FROM h.t_rekey_map ORDER BY 1 LIMIT 1",
    );

    // 1. The owner adds an index expression to the mapping table, inside a transaction that holds
    // the table while the superuser's rekey_translate runs.
    owner
        .batch_execute(
            "BEGIN; LOCK TABLE h.t_rekey_map IN ACCESS EXCLUSIVE MODE;
             CREATE INDEX trap ON h.t_rekey_map ((old_key IS NULL AND h.evil_imm(1)))",
        )
        .unwrap();
    let dsn = format!("{} dbname={db}", dsn());
    let key = old_key.clone();
    let translating = std::thread::spawn(move || {
        let mut c = Client::connect(&dsn, postgres::NoTls).unwrap();
        c.query_one(
            &format!("SELECT rekey_translate('h.t', '{key}')::text"),
            &[],
        )
        .map(|r| r.get::<_, String>(0))
    });
    std::thread::sleep(std::time::Duration::from_millis(1500));
    owner.batch_execute("COMMIT").unwrap();
    // Either the translation (read as the owner) or a refusal; never the owner's code as the caller.
    let _ = translating.join().unwrap();
    assert_eq!(counted(&mut admin, "h.ran_as_someone_else"), 0);
    owner.batch_execute("DROP INDEX h.trap").unwrap();

    // 2. A partition of another owner under a superuser's partitioned table.
    admin
        .batch_execute(
            "CREATE TABLE public.sp (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now())
                 PARTITION BY HASH (id);
             CREATE TABLE public.sp0 PARTITION OF public.sp FOR VALUES WITH (MODULUS 2, REMAINDER 0);
             CREATE TABLE public.sp1 PARTITION OF public.sp FOR VALUES WITH (MODULUS 2, REMAINDER 1);
             INSERT INTO public.sp SELECT gen_random_uuid(), now() FROM generate_series(1, 20);
             ALTER TABLE public.sp1 OWNER TO rekey_review2_owner",
        )
        .unwrap();
    if version >= 140000 {
        owner
            .batch_execute(
                "CREATE STATISTICS h.trap ON ((id IS NULL AND h.evil_imm(1))) FROM public.sp1",
            )
            .unwrap();
    } else {
        owner
            .batch_execute("CREATE INDEX sp1_trap ON public.sp1 ((id IS NULL AND h.evil_imm(1)))")
            .unwrap();
    }
    for sql in [
        "SELECT * FROM rekey_plan('public.sp', 'at')",
        "SELECT * FROM rekey_assess('public.sp')",
        "SELECT * FROM rekey_assess_schema('public')",
        "CALL rekey_run('public.sp', 'at')",
    ] {
        let _ = admin.batch_execute(sql);
    }
    assert_eq!(counted(&mut admin, "h.ran_as_someone_else"), 0);
    // Counted without planning a read of public.sp as a superuser: PostgreSQL itself would fold
    // the statistics expression of its hostile partition as whoever plans the query.
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM ONLY public.sp0 WHERE public.uuid_extract_version(id) = 4"
        ) + one_i64(
            &mut owner,
            "SELECT count(*) FROM ONLY public.sp1 WHERE public.uuid_extract_version(id) = 4"
        ),
        20
    );

    // 3. A foreign key to a partition, not to its partitioned table.
    admin
        .batch_execute(
            "CREATE TABLE public.p (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now())
                 PARTITION BY HASH (id);
             CREATE TABLE public.p0 PARTITION OF public.p FOR VALUES WITH (MODULUS 2, REMAINDER 0);
             CREATE TABLE public.p1 PARTITION OF public.p FOR VALUES WITH (MODULUS 2, REMAINDER 1);
             INSERT INTO public.p SELECT gen_random_uuid(), now() - i * interval '1 min' FROM generate_series(1, 200) i;
             CREATE TABLE public.c_cascade (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                 p_id uuid REFERENCES public.p0 (id) ON DELETE CASCADE ON UPDATE CASCADE);
             CREATE INDEX ON public.c_cascade (p_id);
             INSERT INTO public.c_cascade (p_id) SELECT id FROM public.p0",
        )
        .unwrap();
    let children = one_i64(&mut admin, "SELECT count(*) FROM public.c_cascade");
    let plan = strings(&mut admin, "SELECT * FROM rekey_plan('public.p', 'at')");
    assert!(
        plan.iter()
            .any(|l| l.contains("references partition public.p0 of public.p")),
        "{plan:#?}"
    );
    let _ = admin.batch_execute("CALL rekey_run('public.p', 'at')");
    assert_eq!(
        one_i64(&mut admin, "SELECT count(*) FROM public.c_cascade"),
        children
    );

    // 4. A materialized view whose query leaves an advisory lock and a temporary function.
    owner
        .batch_execute(
            "CREATE FUNCTION h.plant(uuid) RETURNS uuid LANGUAGE plpgsql AS $$
             BEGIN
               IF session_user <> 'rekey_review2_owner' THEN
                 PERFORM pg_advisory_lock(4242);
                 BEGIN
                   EXECUTE 'CREATE FUNCTION pg_temp.left_behind() RETURNS int LANGUAGE sql AS ''SELECT 1''';
                 EXCEPTION WHEN duplicate_function THEN NULL;
                 END;
               END IF;
               RETURN $1;
             END $$;
             CREATE TABLE h.t2 (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
             INSERT INTO h.t2 SELECT gen_random_uuid(), now() FROM generate_series(1, 5);
             CREATE MATERIALIZED VIEW h.mv AS SELECT h.plant(id) AS id FROM h.t2;",
        )
        .unwrap();
    let message = expect_error(
        &mut admin,
        "CALL rekey_run('h.t2', 'at', refresh_materialized_views => true)",
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    );
    assert!(message.contains("materialized view h.mv"), "{message}");
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        ),
        0
    );
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM pg_proc WHERE proname = 'left_behind' AND pronamespace = pg_my_temp_schema()"
        ),
        0
    );
    assert!(!is_superuser(&mut admin, "rekey_review2_owner"));

    // rekey_translate_read reads as a table's owner, so never a table with row-level security,
    // whose policies would then not hide rows from its caller.
    hostile_role(&mut admin, "rekey_review2_reader");
    admin
        .batch_execute(
            "CREATE TABLE public.hidden (old_key uuid PRIMARY KEY, new_key uuid, batch bigint);
             INSERT INTO public.hidden VALUES ('5f838efb-8a34-430b-a07d-b3a7611f031a', gen_random_uuid(), 1);
             ALTER TABLE public.hidden ENABLE ROW LEVEL SECURITY;
             CREATE POLICY none ON public.hidden USING (false);
             GRANT SELECT ON public.hidden TO rekey_review2_reader",
        )
        .unwrap();
    let mut reader = connect_as(&db, "rekey_review2_reader");
    expect_error(
        &mut reader,
        "SELECT objectid_internal.rekey_translate_read('public.hidden'::regclass::oid,
                                                      '5f838efb-8a34-430b-a07d-b3a7611f031a')",
        &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
    );

    // 5. Assess of a partitioned key table, with pgstattuple where the server has it.
    if one_bool(
        &mut admin,
        "SELECT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'pgstattuple')",
    ) {
        admin.batch_execute("CREATE EXTENSION pgstattuple").unwrap();
    }
    let notes: Vec<String> = admin
        .query_one("SELECT notes FROM rekey_assess('public.p')", &[])
        .unwrap()
        .get(0);
    assert!(
        notes.iter().any(|n| n.contains("partitioned index")),
        "{notes:?}"
    );
}

/// What the third adversarial review found, each now refused: the owner's code reading, moving or
/// replacing a cursor the caller has open (no owner code runs while one is); on 16 and later, a
/// member granted the owner's role WITH INHERIT but not SET running code with the owner's
/// attributes; and a role that locks objectid_internal.rekey_state stopping rekey_translate.
#[test]
fn review_3_findings_stay_closed() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    let version = server_version(&mut admin);
    hostile_role(&mut admin, "rekey_review3_owner");
    hostile_role(&mut admin, "rekey_review3_member");
    admin
        .batch_execute(
            "CREATE SCHEMA a AUTHORIZATION rekey_review3_owner;
             CREATE TABLE public.orders (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL DEFAULT now());
             INSERT INTO public.orders SELECT gen_random_uuid(), now() FROM generate_series(1, 10);",
        )
        .unwrap();
    let mut owner = connect_as(&db, "rekey_review3_owner");
    owner
        .batch_execute(
            "GRANT USAGE ON SCHEMA a TO PUBLIC;
             CREATE SEQUENCE a.swapped; GRANT USAGE ON SEQUENCE a.swapped TO PUBLIC;
             CREATE FUNCTION a.swap() RETURNS boolean LANGUAGE plpgsql AS $$
             DECLARE c refcursor; n text;
             BEGIN
               IF session_user <> 'rekey_review3_owner' THEN
                 FOR n IN SELECT name FROM pg_cursors WHERE name <> '' LOOP
                   c := n;
                   BEGIN
                     CLOSE c;
                     OPEN c FOR SELECT 'swapped'::text;
                     PERFORM nextval('a.swapped');
                   EXCEPTION WHEN OTHERS THEN NULL;
                   END;
                 END LOOP;
               END IF;
               RETURN true;
             END $$;
             CREATE TABLE a.t (id uuid PRIMARY KEY, at timestamptz NOT NULL DEFAULT now());
             INSERT INTO a.t SELECT gen_random_uuid() FROM generate_series(1, 10);
             ALTER TABLE a.t ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
             CREATE POLICY p ON a.t USING (a.swap());",
        )
        .unwrap();
    admin
        .batch_execute("BEGIN; DECLARE mycur CURSOR FOR SELECT relname::text FROM pg_class LIMIT 1")
        .unwrap();
    let message = refused(&mut admin, "SELECT * FROM rekey_assess('a.t')");
    assert!(message.contains("cursor \"mycur\" is open"), "{message}");
    admin.batch_execute("ROLLBACK").unwrap();
    assert_eq!(counted(&mut admin, "a.swapped"), 0);

    if version >= 160000 {
        // The member may use the owner's privileges but not become it (no SET ROLE): no code runs
        // as the owner on its behalf.
        admin
            .batch_execute(
                "GRANT rekey_review3_owner TO rekey_review3_member WITH INHERIT TRUE, SET FALSE",
            )
            .unwrap();
        let mut member = connect_as(&db, "rekey_review3_member");
        let message = expect_error(
            &mut member,
            "SELECT objectid_internal.rekey_read_as_owner('a.t'::regclass::oid, 'SELECT current_user AS cu')",
            &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE,
        );
        assert!(message.contains("permission denied"), "{message}");
    }

    // Anyone may lock rekey_state (it is everyone's to read and write, through its policies): the
    // application's translations go on, by the mapping table's comment.
    admin
        .batch_execute("CALL rekey_run('public.orders', 'at')")
        .unwrap();
    let (old_key, new_key): (String, String) = {
        let row = admin
            .query_one(
                "SELECT old_key::text, new_key::text FROM public.orders_rekey_map ORDER BY 1 LIMIT 1",
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    let mut locker = connect_as(&db, "rekey_review3_member");
    locker
        .batch_execute("BEGIN; LOCK TABLE objectid_internal.rekey_state IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    assert_eq!(
        one_string(
            &mut admin,
            &format!("SELECT rekey_translate('public.orders', '{old_key}')::text")
        ),
        new_key
    );
    locker.batch_execute("ROLLBACK").unwrap();
}

/// What the review of 0.8.0's narrowed ON UPDATE refusal found: a chain of ON UPDATE CASCADE
/// foreign keys two tables deep from a table the rekey rewrites, the first step between tables of
/// one owner (allowed) and the second to a table of a hostile role. An AFTER trigger of the
/// victim's, which the run fires, changes the column the first step follows, whose cascade
/// changes the column the second follows, whose cascade queues the hostile role's trigger with
/// the victim's statement: it would run as the victim. Refused before anything changes; the
/// hostile role gains nothing (no privilege on the victim's table, no superuser) and its code
/// never runs.
#[test]
fn review_4_findings_stay_closed() {
    let Database {
        name: db,
        client: mut admin,
    } = database_with_extension("");
    let victim = "rekey_review4_victim";
    let hostile = "rekey_review4_hostile";
    hostile_role(&mut admin, victim);
    hostile_role(&mut admin, hostile);
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA vs AUTHORIZATION {victim}; CREATE SCHEMA hs AUTHORIZATION {hostile};"
        ))
        .unwrap();
    let mut v = connect_as(&db, victim);
    v.batch_execute(&format!(
        "CREATE TABLE vs.accounts (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz NOT NULL);
         CREATE TABLE vs.orders (id bigserial PRIMARY KEY, code text UNIQUE NOT NULL, account_id uuid REFERENCES vs.accounts);
         CREATE INDEX ON vs.orders (account_id);
         CREATE TABLE vs.order_items (id bigserial PRIMARY KEY,
                                      order_code text UNIQUE REFERENCES vs.orders (code) ON UPDATE CASCADE);
         CREATE TABLE vs.secret (s text); INSERT INTO vs.secret VALUES ('the victim''s');
         GRANT USAGE ON SCHEMA vs TO {hostile}; GRANT REFERENCES ON vs.order_items TO {hostile};
         INSERT INTO vs.accounts SELECT gen_random_uuid(), now() - g * interval '1 hour' FROM generate_series(1, 5) g;
         INSERT INTO vs.orders (code, account_id) SELECT 'o' || row_number() OVER (), id FROM vs.accounts;
         INSERT INTO vs.order_items (order_code) SELECT code FROM vs.orders;
         CREATE FUNCTION vs.bump() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $$
         BEGIN UPDATE vs.orders SET code = code || '+' WHERE id = NEW.id; RETURN NULL; END $$;
         CREATE TRIGGER bump AFTER UPDATE OF account_id ON vs.orders FOR EACH ROW EXECUTE FUNCTION vs.bump();
         SELECT rekey_switch_default('vs.accounts')"
    ))
    .unwrap();
    let mut h = connect_as(&db, hostile);
    h.batch_execute(&format!(
        "CREATE TABLE hs.log (cu name, su name); GRANT USAGE ON SCHEMA hs TO PUBLIC; GRANT INSERT ON hs.log TO PUBLIC;
         CREATE TABLE hs.hx (ref text REFERENCES vs.order_items (order_code) ON UPDATE CASCADE);
         INSERT INTO hs.hx SELECT 'o' || g FROM generate_series(1, 5) g;
         CREATE FUNCTION hs.spy() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $$
         BEGIN
           INSERT INTO hs.log VALUES (current_user, session_user);
           EXECUTE 'GRANT SELECT ON vs.secret TO {hostile}';
           IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
             EXECUTE 'ALTER ROLE {hostile} SUPERUSER';
           END IF;
           RETURN NULL;
         END $$;
         CREATE TRIGGER spy AFTER UPDATE ON hs.hx FOR EACH ROW EXECUTE FUNCTION hs.spy()"
    ))
    .unwrap();
    let keys = "SELECT string_agg(id::text, ',' ORDER BY id) FROM vs.accounts";
    // The foreign-key problems of a rekey of vs.accounts that fires triggers.
    const FK_PROBLEMS: &str = "SELECT p.problem FROM objectid_internal.rekey_problems('vs.accounts'::regclass, 'created_at'::name, NULL::text, true) p
          WHERE p.problem LIKE 'foreign key %'";
    let before = one_string(&mut admin, keys);
    let problems = strings(&mut admin, FK_PROBLEMS);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with(&format!(
            "foreign key hx_ref_fkey of hs.hx references vs.order_items ON UPDATE, in a chain of ON UPDATE actions from a table the rekey rewrites (owned by {victim}), and hs.hx is owned by {hostile}"
        )),
        "{problems:?}"
    );
    for runner in ["postgres", victim] {
        let mut c = connect_as(&db, runner);
        expect_error(
            &mut c,
            "CALL rekey_run('vs.accounts', 'created_at', fire_triggers => true)",
            &postgres::error::SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
        );
    }
    assert_eq!(one_string(&mut admin, keys), before, "keys changed");
    assert_eq!(
        one_i64(&mut admin, "SELECT count(*) FROM hs.log"),
        0,
        "the hostile trigger ran"
    );
    assert!(!one_bool(
        &mut admin,
        &format!("SELECT has_table_privilege('{hostile}', 'vs.secret', 'SELECT')")
    ));
    assert!(!is_superuser(&mut admin, hostile));

    // The first step's partition of another owner: its triggers would fire as the victim too.
    h.batch_execute("DROP TABLE hs.hx").unwrap();
    v.batch_execute(
        "CREATE TABLE vs.lines (order_code text REFERENCES vs.orders (code) ON UPDATE CASCADE) PARTITION BY LIST (order_code);
         CREATE TABLE vs.lines_all PARTITION OF vs.lines DEFAULT",
    )
    .unwrap();
    admin
        .batch_execute(&format!("ALTER TABLE vs.lines_all OWNER TO {hostile}"))
        .unwrap();
    let problems = strings(&mut admin, FK_PROBLEMS);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains(&format!("and vs.lines_all is owned by {hostile}")),
        "{problems:?}"
    );
    v.batch_execute("DROP TABLE vs.lines").unwrap();

    // One step is between tables of one owner, with nothing of another role's down the chain: the
    // rekey runs, and the victim's own trigger and cascade do what they would for any update.
    admin
        .batch_execute("CALL rekey_run('vs.accounts', 'created_at', fire_triggers => true)")
        .unwrap();
    assert_eq!(
        one_i64(
            &mut admin,
            "SELECT count(*) FROM vs.order_items i JOIN vs.orders o ON o.code = i.order_code
              WHERE o.account_id IN (SELECT id FROM vs.accounts WHERE uuid_extract_version(id) = 7)"
        ),
        5
    );
    assert!(!is_superuser(&mut admin, hostile));
}
