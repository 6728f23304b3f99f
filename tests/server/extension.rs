use postgres::error::SqlState;

use crate::common::*;

/// Every function the extension creates, with the properties we promise for it: (name, qualified
/// when it lives in objectid_internal, volatility, strict, parallel, leakproof); none is security
/// definer.
const FUNCTIONS: &[(&str, &str, bool, &str, bool)] = &[
    ("bytea", "i", true, "s", true),
    ("gen_objectid", "v", true, "s", false),
    ("gen_objectid_at", "v", true, "s", false),
    ("gen_objectid_subsecond", "v", true, "s", false),
    ("jsonb", "i", true, "s", true),
    ("max", "i", false, "s", false),
    ("min", "i", false, "s", false),
    ("objectid", "i", true, "s", false),
    ("objectid_cmp", "i", true, "s", true),
    ("objectid_eq", "i", true, "s", true),
    ("objectid_first_after", "i", true, "s", true),
    ("objectid_first_at_or_after", "i", true, "s", true),
    ("objectid_from_jsonb", "i", true, "s", false),
    ("objectid_from_time", "i", true, "s", false),
    ("objectid_ge", "i", true, "s", true),
    ("objectid_generator_mode", "s", true, "s", false),
    ("objectid_gt", "i", true, "s", true),
    ("objectid_hash", "i", true, "s", true),
    ("objectid_hash_extended", "i", true, "s", true),
    ("objectid_in", "i", true, "s", false),
    ("objectid_internal.rekey_api_schema", "s", true, "s", false),
    ("objectid_internal.rekey_assess", "v", true, "u", false),
    ("objectid_internal.rekey_batch", "v", true, "u", false),
    (
        "objectid_internal.rekey_batch_as_owner",
        "v",
        true,
        "u",
        false,
    ),
    (
        "objectid_internal.rekey_batch_catalog",
        "v",
        true,
        "u",
        false,
    ),
    (
        "objectid_internal.rekey_batch_catalog_read",
        "v",
        true,
        "u",
        false,
    ),
    ("objectid_internal.rekey_batch_size", "i", false, "s", false),
    ("objectid_internal.rekey_call", "s", false, "s", false),
    ("objectid_internal.rekey_can_commit", "v", true, "r", false),
    (
        "objectid_internal.rekey_column_indexed",
        "s",
        true,
        "s",
        false,
    ),
    ("objectid_internal.rekey_columns", "s", true, "s", false),
    (
        "objectid_internal.rekey_counts_query",
        "s",
        true,
        "s",
        false,
    ),
    (
        "objectid_internal.rekey_default_is_v7",
        "s",
        true,
        "s",
        false,
    ),
    ("objectid_internal.rekey_fast_path", "s", false, "s", false),
    (
        "objectid_internal.rekey_fired_triggers",
        "s",
        true,
        "s",
        false,
    ),
    ("objectid_internal.rekey_key_column", "s", true, "s", false),
    (
        "objectid_internal.rekey_last_fast_path",
        "v",
        false,
        "r",
        false,
    ),
    (
        "objectid_internal.rekey_leaf_density",
        "v",
        true,
        "u",
        false,
    ),
    ("objectid_internal.rekey_lookalikes", "s", false, "s", false),
    (
        "objectid_internal.rekey_mapping_comment",
        "s",
        true,
        "s",
        false,
    ),
    (
        "objectid_internal.rekey_mapping_name",
        "s",
        false,
        "s",
        false,
    ),
    (
        "objectid_internal.rekey_mapping_problem",
        "s",
        true,
        "s",
        false,
    ),
    (
        "objectid_internal.rekey_materialized_views",
        "s",
        true,
        "s",
        false,
    ),
    ("objectid_internal.rekey_name", "s", true, "s", false),
    ("objectid_internal.rekey_new_key", "i", true, "s", false),
    ("objectid_internal.rekey_problems", "v", false, "u", false),
    (
        "objectid_internal.rekey_read_as_owner",
        "v",
        true,
        "u",
        false,
    ),
    ("objectid_internal.rekey_readable", "s", true, "s", false),
    (
        "objectid_internal.rekey_reads_every_row",
        "s",
        true,
        "s",
        false,
    ),
    ("objectid_internal.rekey_references", "s", true, "s", false),
    (
        "objectid_internal.rekey_refresh_materialized_view",
        "v",
        true,
        "u",
        false,
    ),
    ("objectid_internal.rekey_relation", "s", true, "s", false),
    (
        "objectid_internal.rekey_run_arguments",
        "s",
        false,
        "s",
        false,
    ),
    ("objectid_internal.rekey_run_end", "v", true, "u", false),
    ("objectid_internal.rekey_runner", "s", true, "r", false),
    ("objectid_internal.rekey_start", "v", false, "u", false),
    (
        "objectid_internal.rekey_state_guard",
        "v",
        false,
        "u",
        false,
    ),
    ("objectid_internal.rekey_state_of", "s", true, "s", false),
    ("objectid_internal.rekey_statements", "s", false, "s", false),
    (
        "objectid_internal.rekey_status_rows",
        "s",
        false,
        "r",
        false,
    ),
    ("objectid_internal.rekey_tables", "s", true, "s", false),
    (
        "objectid_internal.rekey_time_columns",
        "s",
        true,
        "s",
        false,
    ),
    (
        "objectid_internal.rekey_time_expression",
        "s",
        true,
        "s",
        false,
    ),
    (
        "objectid_internal.rekey_translate_read",
        "v",
        true,
        "u",
        false,
    ),
    ("objectid_internal.rekey_usable_time", "i", true, "s", false),
    (
        "objectid_internal.rekey_uuidv7_functions",
        "s",
        true,
        "s",
        false,
    ),
    (
        "objectid_internal.uuid_extract_timestamp",
        "i",
        true,
        "s",
        true,
    ),
    (
        "objectid_internal.uuid_extract_version",
        "i",
        true,
        "s",
        true,
    ),
    ("objectid_internal.uuidv7_at", "v", true, "s", false),
    ("objectid_larger", "i", true, "s", true),
    ("objectid_last_at_or_before", "i", true, "s", true),
    ("objectid_last_before", "i", true, "s", true),
    ("objectid_le", "i", true, "s", true),
    ("objectid_lower_bound", "i", true, "s", true),
    ("objectid_lt", "i", true, "s", true),
    ("objectid_minmax_multi_distance", "i", true, "s", false),
    ("objectid_ne", "i", true, "s", true),
    ("objectid_out", "i", true, "s", false),
    ("objectid_recv", "i", true, "s", false),
    ("objectid_send", "i", true, "s", false),
    ("objectid_smaller", "i", true, "s", true),
    ("objectid_sortsupport", "i", true, "s", false),
    ("objectid_timestamp", "i", true, "s", true),
    ("objectid_timestamp_support", "i", true, "s", false),
    ("objectid_upper_bound", "i", true, "s", true),
    ("objectid_upper_bound_before", "i", true, "s", true),
    ("rekey_assess", "v", true, "u", false),
    ("rekey_assess_schema", "v", true, "u", false),
    ("rekey_forget", "v", true, "u", false),
    ("rekey_plan", "v", false, "u", false),
    ("rekey_references", "s", true, "s", false),
    // A procedure: its batch loop commits (sql/rekey/api/rekey_run.sql).
    ("rekey_run", "v", false, "u", false),
    ("rekey_switch_default", "v", true, "u", false),
    ("rekey_translate", "s", true, "u", false),
    ("rekey_verify", "v", true, "u", false),
    ("uuid_extract_timestamp", "i", true, "s", true),
    ("uuid_extract_timestamp_support", "i", true, "s", false),
    ("uuid_extract_version", "i", true, "s", true),
    ("uuidv4", "v", true, "s", false),
    ("uuidv7", "v", true, "s", false),
    ("uuidv7", "v", true, "s", false),
    ("uuidv7_at", "v", true, "s", false),
    ("uuidv7_from_time", "i", true, "s", false),
    ("uuidv7_lower_bound", "i", true, "s", true),
    ("uuidv7_upper_bound", "i", true, "s", true),
    ("uuidv7_upper_bound_before", "i", true, "s", true),
];

#[test]
fn function_properties_are_as_documented() {
    let mut c = database_with_extension("").client;
    let got: Vec<(String, String, bool, String, bool, bool)> = c
        .query(
            "SELECT CASE WHEN p.pronamespace = 'objectid_internal'::regnamespace \
                         THEN 'objectid_internal.' ELSE '' END || p.proname, \
                    p.provolatile::text, p.proisstrict, p.proparallel::text, \
                    p.proleakproof, p.prosecdef \
             FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid \
             WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' \
               AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid') \
               AND d.classid = 'pg_proc'::regclass \
             ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)))
        .collect();
    let server_version = one_i64(&mut c, "SELECT current_setting('server_version_num')::int8");
    let want: Vec<(String, String, bool, String, bool, bool)> = FUNCTIONS
        .iter()
        // minmax-multi BRIN exists from PostgreSQL 14 on.
        .filter(|f| f.0 != "objectid_minmax_multi_distance" || server_version >= 140000)
        .map(|&(n, v, s, p, l)| (n.to_string(), v.to_string(), s, p.to_string(), l, false))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn every_member_lives_in_the_extension_schema() {
    let mut c = empty_database("").client;
    c.batch_execute("CREATE SCHEMA ids; CREATE EXTENSION pg_objectid SCHEMA ids")
        .unwrap();
    let outside = one_i64(
        &mut c,
        "SELECT count(*) FROM pg_depend d \
         LEFT JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid \
         LEFT JOIN pg_type t ON d.classid = 'pg_type'::regclass AND t.oid = d.objid \
         LEFT JOIN pg_operator o ON d.classid = 'pg_operator'::regclass AND o.oid = d.objid \
         LEFT JOIN pg_opclass oc ON d.classid = 'pg_opclass'::regclass AND oc.oid = d.objid \
         LEFT JOIN pg_opfamily f ON d.classid = 'pg_opfamily'::regclass AND f.oid = d.objid \
         WHERE d.deptype = 'e' AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid') \
           AND coalesce(p.pronamespace, t.typnamespace, o.oprnamespace, oc.opcnamespace, f.opfnamespace, \
                        'ids'::regnamespace) NOT IN ('ids'::regnamespace, 'objectid_internal'::regnamespace)",
    );
    assert_eq!(outside, 0);
    let classes: Vec<String> = c
        .query(
            "SELECT opcname || '/' || amname FROM pg_opclass JOIN pg_am ON pg_am.oid = opcmethod \
             WHERE opcnamespace = 'ids'::regnamespace ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let server_version = one_i64(&mut c, "SELECT current_setting('server_version_num')::int8");
    let mut want = vec![
        "objectid_minmax_ops/brin",
        "objectid_ops/btree",
        "objectid_ops/hash",
    ];
    if server_version >= 140000 {
        want = vec![
            "objectid_bloom_ops/brin",
            "objectid_minmax_multi_ops/brin",
            "objectid_minmax_ops/brin",
            "objectid_ops/btree",
            "objectid_ops/hash",
        ];
    }
    assert_eq!(classes, want);
}

#[test]
fn works_from_a_schema_other_than_public() {
    let mut c = empty_database("").client;
    c.batch_execute(
        "CREATE SCHEMA ids; CREATE EXTENSION pg_objectid SCHEMA ids; \
         CREATE TABLE t (id ids.objectid PRIMARY KEY, n int); \
         INSERT INTO t SELECT lpad(to_hex(i), 24, '0')::ids.objectid, i FROM generate_series(1, 5000) i; \
         ANALYZE t",
    )
    .unwrap();
    // Not on the search path: reachable qualified, and the default opclass still serves.
    assert_eq!(one_string(&mut c, "SHOW search_path"), "\"$user\", public");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT n::int8 FROM t WHERE id OPERATOR(ids.=) '000000000000000000000010'"
        ),
        16
    );
    expect_error(
        &mut c,
        "SELECT n FROM t WHERE id = '000000000000000000000010'",
        &SqlState::UNDEFINED_FUNCTION,
    );
    c.batch_execute("SET enable_seqscan = off").unwrap();
    let plan = explain(
        &mut c,
        "SELECT n FROM t WHERE id OPERATOR(ids.<) '000000000000000000000010'",
    );
    assert!(plan.contains("Index Scan using t_pkey"), "{plan}");
    // On the search path, before or after public: plain operators and aggregates resolve, and
    // min() of other types still reaches pg_catalog's.
    for path in ["ids, public", "public, ids"] {
        c.batch_execute(&format!("SET search_path = {path}"))
            .unwrap();
        let row = c
            .query_one(
                "SELECT count(*) FILTER (WHERE id < '000000000000000000000010'), \
                        max(id)::text, min(n), max(n::text) \
                 FROM t",
                &[],
            )
            .unwrap();
        assert_eq!(row.get::<_, i64>(0), 15, "{path}");
        assert_eq!(
            row.get::<_, String>(1),
            "000000000000000000001388",
            "{path}"
        );
        assert_eq!(row.get::<_, i32>(2), 1, "{path}");
        assert_eq!(row.get::<_, String>(3), "999", "{path}");
    }
}

#[test]
fn create_and_drop_leave_nothing_behind() {
    let mut c = empty_database("").client;
    let count_objects =
        "SELECT (SELECT count(*) FROM pg_type WHERE typname IN ('objectid', '_objectid')) \
         + (SELECT count(*) FROM pg_proc WHERE proname LIKE 'objectid%' OR proname LIKE 'gen_objectid%' \
              OR (proname IN ('min', 'max', 'bytea') AND pronamespace = 'public'::regnamespace)) \
         + (SELECT count(*) FROM pg_opclass WHERE opcname LIKE 'objectid%') \
         + (SELECT count(*) FROM pg_opfamily WHERE opfname LIKE 'objectid%') \
         + (SELECT count(*) FROM pg_proc WHERE proname LIKE 'rekey%') \
         + (SELECT count(*) FROM pg_class WHERE relname LIKE 'rekey%') \
         + (SELECT count(*) FROM pg_policy WHERE polname LIKE 'rekey%') \
         + (SELECT count(*) FROM pg_operator WHERE oprnamespace = 'public'::regnamespace) \
         + (SELECT count(*) FROM pg_namespace WHERE nspname = 'objectid_internal')";
    assert_eq!(one_i64(&mut c, count_objects), 0);
    for _ in 0..2 {
        c.batch_execute("CREATE EXTENSION pg_objectid").unwrap();
        assert!(one_i64(&mut c, count_objects) > 30);
        c.batch_execute("DROP EXTENSION pg_objectid").unwrap();
        assert_eq!(one_i64(&mut c, count_objects), 0);
    }
    // Dropping refuses while a column uses the type, unless CASCADE.
    c.batch_execute("CREATE EXTENSION pg_objectid; CREATE TABLE t (id objectid)")
        .unwrap();
    expect_error(
        &mut c,
        "DROP EXTENSION pg_objectid",
        &SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
    );
    c.batch_execute("DROP EXTENSION pg_objectid CASCADE")
        .unwrap();
    assert_eq!(one_i64(&mut c, count_objects), 0);
}

#[test]
fn trusted_install_by_a_database_owner_with_a_hostile_temp_schema() {
    let Database {
        name: db,
        client: mut admin,
    } = empty_database("");
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS objectid_app; CREATE ROLE objectid_app LOGIN; \
             ALTER DATABASE {db} OWNER TO objectid_app"
        ))
        .unwrap();
    drop(admin);
    let mut app = postgres::Client::connect(
        &format!("{} dbname={db} user=objectid_app", dsn()),
        postgres::NoTls,
    )
    .unwrap();
    assert!(!one_bool(
        &mut app,
        "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
    ));
    // A temporary type named like ours: in type lookups the session's pg_temp comes before
    // public, so an install script naming `objectid` unqualified would bind to it.
    app.batch_execute("CREATE TYPE pg_temp.objectid AS (x int)")
        .unwrap();
    assert_eq!(
        one_i64(
            &mut app,
            "SELECT count(*) FROM pg_type WHERE oid = 'objectid'::regtype \
             AND typnamespace = pg_my_temp_schema()"
        ),
        1,
        "the decoy is what an unqualified name finds"
    );
    app.batch_execute("CREATE EXTENSION pg_objectid").unwrap();
    let bound_to_decoy = one_i64(
        &mut app,
        "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE n.nspname = 'public' AND (p.prorettype IN \
             (SELECT oid FROM pg_type WHERE typnamespace = pg_my_temp_schema()) \
           OR EXISTS (SELECT FROM unnest(p.proargtypes) a JOIN pg_type t ON t.oid = a \
                      WHERE t.typnamespace = pg_my_temp_schema()))",
    );
    assert_eq!(bound_to_decoy, 0);
    assert_eq!(
        one_string(
            &mut app,
            "SELECT prorettype::regtype::text FROM pg_proc WHERE proname = 'objectid_in'"
        ),
        "public.objectid"
    );
    app.batch_execute(
        "DISCARD TEMP; CREATE TABLE t (id objectid PRIMARY KEY); \
         INSERT INTO t VALUES ('507f1f77bcf86cd799439011')",
    )
    .unwrap();
    assert_eq!(one_i64(&mut app, "SELECT count(*) FROM t"), 1);
    app.batch_execute("DROP EXTENSION pg_objectid CASCADE")
        .unwrap();
}

/// Every script stops psql before its first statement, as contrib's scripts do: the install
/// script as the server has it, and every update script in sql/ (the frozen install scripts of
/// earlier releases in sql/releases/ are kept as they shipped).
#[test]
fn every_script_stops_psql_before_its_first_statement() {
    let mut c = database_with_extension("").client;
    let current = one_string(
        &mut c,
        "SELECT extversion FROM pg_extension WHERE extname = 'pg_objectid'",
    );
    let sharedir = one_string(
        &mut c,
        "SELECT setting FROM pg_config WHERE name = 'SHAREDIR'",
    );
    let mut scripts = vec![(
        server_path(&format!("{sharedir}/extension/pg_objectid--{current}.sql")),
        "CREATE EXTENSION pg_objectid".to_string(),
    )];
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/sql")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(to) = name
            .strip_suffix(".sql")
            .and_then(|n| n.strip_prefix("pg_objectid--"))
            .and_then(|n| n.split_once("--"))
            .map(|(_, to)| to.to_string())
        {
            scripts.push((
                format!("{}/sql/{name}", env!("CARGO_MANIFEST_DIR")),
                format!("ALTER EXTENSION pg_objectid UPDATE TO '{to}'"),
            ));
        }
    }
    assert!(scripts.len() >= 6, "{scripts:?}");
    for (path, command) in &scripts {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // The first line that is neither blank, nor a -- comment, nor inside a /* */ comment.
        let mut in_block = false;
        let first = text.lines().map(str::trim).find(|line| {
            if in_block {
                in_block = !line.ends_with("*/");
                return false;
            }
            if line.starts_with("/*") {
                in_block = !line.ends_with("*/");
                return false;
            }
            !line.is_empty() && !line.starts_with("--")
        });
        assert_eq!(
            first,
            Some(format!("\\echo Use \"{command}\" to load this file. \\quit").as_str()),
            "{path}"
        );
    }
}

/// Every object of the extension with what defines it, one line each, sorted: for comparing an
/// updated installation with a fresh one.
const EXTENSION_OBJECTS: &str = "
    SELECT pg_describe_object(d.classid, d.objid, d.objsubid) || ' | ' || coalesce(CASE d.classid
      WHEN 'pg_proc'::regclass THEN (SELECT concat_ws(' ', p.prokind, p.provolatile, p.proisstrict,
          p.proparallel, p.proleakproof, p.prosecdef, p.proretset, p.procost, p.prorows,
          p.prosupport::regproc, p.prorettype::regtype, p.proargtypes::regtype[], p.proargnames,
          p.prosrc, p.probin, p.proconfig,
          (SELECT concat_ws(' ', a.aggtransfn, a.aggfinalfn, a.aggcombinefn, a.aggsortop::regoperator,
                  a.aggtranstype::regtype, a.agginitval)
             FROM pg_aggregate a WHERE a.aggfnoid = p.oid))
        FROM pg_proc p WHERE p.oid = d.objid)
      WHEN 'pg_type'::regclass THEN (SELECT concat_ws(' ', t.typlen, t.typbyval, t.typalign,
          t.typstorage, t.typcategory, t.typispreferred, t.typinput, t.typoutput, t.typreceive,
          t.typsend, t.typanalyze, t.typelem::regtype, t.typarray::regtype)
        FROM pg_type t WHERE t.oid = d.objid)
      WHEN 'pg_operator'::regclass THEN (SELECT concat_ws(' ', o.oprcode, o.oprrest, o.oprjoin,
          o.oprcom::regoperator, o.oprnegate::regoperator, o.oprcanhash, o.oprcanmerge)
        FROM pg_operator o WHERE o.oid = d.objid)
      WHEN 'pg_opclass'::regclass THEN (SELECT concat_ws(' ', c.opcdefault, c.opcintype::regtype,
          c.opckeytype::regtype, f.opfname)
        FROM pg_opclass c JOIN pg_opfamily f ON f.oid = c.opcfamily WHERE c.oid = d.objid)
      WHEN 'pg_opfamily'::regclass THEN (SELECT concat_ws(' ',
          (SELECT string_agg(format('op %s %s %s %s', a.amopstrategy, a.amoplefttype::regtype,
                  a.amoprighttype::regtype, a.amopopr::regoperator), ', ' ORDER BY 1)
             FROM pg_amop a WHERE a.amopfamily = d.objid),
          (SELECT string_agg(format('proc %s %s %s %s', p.amprocnum, p.amproclefttype::regtype,
                  p.amprocrighttype::regtype, p.amproc::regprocedure), ', ' ORDER BY 1)
             FROM pg_amproc p WHERE p.amprocfamily = d.objid)))
      WHEN 'pg_namespace'::regclass THEN (SELECT concat_ws(' ', n.nspowner::regrole, n.nspacl)
        FROM pg_namespace n WHERE n.oid = d.objid)
      WHEN 'pg_cast'::regclass THEN (SELECT concat_ws(' ', c.castfunc::regprocedure,
          c.castcontext, c.castmethod)
        FROM pg_cast c WHERE c.oid = d.objid)
      WHEN 'pg_class'::regclass THEN (SELECT concat_ws(' ', c.relkind, c.relrowsecurity, c.relacl,
          (SELECT string_agg(format('%s %s %s', a.attname, format_type(a.atttypid, a.atttypmod),
                  a.attnotnull), ', ' ORDER BY a.attnum)
             FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
          (SELECT string_agg(format('%s %s %s %s', p.polname, p.polcmd, pg_get_expr(p.polqual, p.polrelid),
                  pg_get_expr(p.polwithcheck, p.polrelid)), ', ' ORDER BY p.polname)
             FROM pg_policy p WHERE p.polrelid = c.oid),
          (SELECT string_agg(pg_get_indexdef(i.indexrelid), ', ' ORDER BY 1)
             FROM pg_index i WHERE i.indrelid = c.oid),
          (SELECT string_agg(pg_get_triggerdef(t.oid), ', ' ORDER BY 1)
             FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal),
          CASE c.relkind WHEN 'v' THEN pg_get_viewdef(c.oid) END)
        FROM pg_class c WHERE c.oid = d.objid)
      END, '') || ' | ' || coalesce(obj_description(d.objid, d.classid::regclass::text), '')
    FROM pg_depend d
    WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
      AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid')
    ORDER BY 1";

fn extension_objects(c: &mut postgres::Client) -> Vec<String> {
    c.query(EXTENSION_OBJECTS, &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Each earlier release, installed from its frozen install script (sql/releases/, which
/// scripts/test.sh copies into the server), then updated with `ALTER EXTENSION … UPDATE`,
/// ends up with exactly the objects of a fresh install of the current version, and with data
/// made before the update still working.
#[test]
fn update_from_each_earlier_release_matches_a_fresh_install() {
    let mut fresh = database_with_extension("fresh").client;
    let current = one_string(
        &mut fresh,
        "SELECT extversion FROM pg_extension WHERE extname = 'pg_objectid'",
    );
    let want = extension_objects(&mut fresh);
    assert!(want.len() > 50, "{} objects", want.len());
    // Every release frozen in sql/releases/: each must update to this one.
    let releases = earlier_releases();
    assert!(releases.len() >= 5, "{releases:?}");
    for old in &releases {
        let old = old.as_str();
        assert_ne!(old, current);
        let mut c = empty_database("").client;
        c.batch_execute(&format!(
            "CREATE EXTENSION pg_objectid VERSION '{old}'; \
             CREATE TABLE t (id objectid PRIMARY KEY DEFAULT gen_objectid(), n int, \
                             u uuid DEFAULT public.uuidv7()); \
             INSERT INTO t (n) SELECT generate_series(1, 100); \
             CREATE INDEX ON t USING brin (id)"
        ))
        .unwrap();
        assert_eq!(
            one_string(
                &mut c,
                "SELECT extversion FROM pg_extension WHERE extname = 'pg_objectid'"
            ),
            old
        );
        c.batch_execute("ALTER EXTENSION pg_objectid UPDATE")
            .unwrap();
        assert_eq!(
            one_string(
                &mut c,
                "SELECT extversion FROM pg_extension WHERE extname = 'pg_objectid'"
            ),
            current
        );
        let got = extension_objects(&mut c);
        let missing: Vec<&String> = want.iter().filter(|o| !got.contains(o)).collect();
        let extra: Vec<&String> = got.iter().filter(|o| !want.contains(o)).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "after updating from {old}:\nmissing {missing:#?}\nextra {extra:#?}"
        );
        // The data and the new planner path work on the updated installation.
        c.batch_execute("INSERT INTO t (n) VALUES (101); ANALYZE t")
            .unwrap();
        assert_eq!(
            one_i64(
                &mut c,
                "SELECT count(*) FROM t WHERE objectid_timestamp(id) >= now() - interval '1 hour'"
            ),
            101
        );
        let plan = explain(
            &mut c,
            "SELECT n FROM t WHERE objectid_timestamp(id) >= now() - interval '1 hour'",
        );
        assert!(plan.contains("objectid_first_at_or_after("), "{plan}");
    }
}

/// Every release installs, and updates to this one, in databases of encodings other than UTF-8:
/// PostgreSQL reads an extension's scripts in the database's encoding unless the control file
/// names one, and refuses a script with a byte sequence that encoding does not have (a UTF-8 `…`
/// in a comment is invalid EUC_JP, and has no LATIN1 equivalent to convert to).
#[test]
fn every_release_installs_and_updates_in_other_encodings() {
    let releases = earlier_releases();
    assert!(releases.len() >= 5, "{releases:?}");
    for encoding in ["EUC_JP", "LATIN1", "SQL_ASCII"] {
        let Database {
            name,
            client: mut c,
        } = empty_database_encoded(&encoding.to_lowercase(), encoding);
        c.batch_execute("CREATE EXTENSION pg_objectid")
            .unwrap_or_else(|e| panic!("CREATE EXTENSION in {encoding}: {e:?}"));
        assert_eq!(
            one_string(&mut c, "SELECT gen_objectid_at('2024-01-01+00')::text")[..8].to_string(),
            "65920080"
        );
        c.batch_execute("DROP EXTENSION pg_objectid CASCADE")
            .unwrap();
        for old in &releases {
            c.batch_execute(&format!("CREATE EXTENSION pg_objectid VERSION '{old}'"))
                .unwrap_or_else(|e| {
                    panic!("CREATE EXTENSION VERSION '{old}' in {encoding}: {e:?}")
                });
            c.batch_execute("ALTER EXTENSION pg_objectid UPDATE")
                .unwrap_or_else(|e| panic!("update from {old} in {encoding}: {e:?}"));
            c.batch_execute("DROP EXTENSION pg_objectid CASCADE")
                .unwrap();
        }
        drop(c);
        connect_to("postgres")
            .batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)"))
            .unwrap();
    }
}

/// Issue 36: the suite's server runs with `RUST_BACKTRACE=1` in its environment
/// (scripts/test_version.sh), as an operator's may. No error a client reads carries a Rust
/// backtrace: neither one PostgreSQL raises while the extension's Rust code runs (pgrx's panic
/// hook captured one for those, and appended it to the DETAIL), nor one of the extension's own.
#[test]
fn errors_carry_no_rust_backtrace() {
    let Database { client: mut c, .. } = database_with_extension("");
    // The postmaster's: a backend's process title takes the place of its environment.
    let pid = backend_pid(&mut c);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let postmaster = status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .unwrap()
        .trim()
        .to_string();
    let environment = std::fs::read(format!("/proc/{postmaster}/environ")).unwrap_or_else(|e| {
        panic!("cannot read the server's environment (run the tests as root or as the server's user): {e}")
    });
    assert!(
        environment
            .split(|b| *b == 0)
            .any(|v| v == b"RUST_BACKTRACE=1"),
        "the server must run with RUST_BACKTRACE=1 for this test to mean anything"
    );
    c.batch_execute("CREATE TEMP TABLE tt (x int)").unwrap();
    for (sql, state) in [
        (
            "SELECT objectid_internal.rekey_read_as_owner('tt'::regclass, 'SELECT 1/0 AS a')",
            SqlState::DIVISION_BY_ZERO,
        ),
        (
            "SELECT objectid_internal.rekey_read_as_owner('tt'::regclass, 'SELECT * FROM no_such_table')",
            SqlState::UNDEFINED_TABLE,
        ),
        (
            "SELECT objectid_internal.rekey_new_key(gen_random_uuid(), '{}', ARRAY[gen_random_uuid()])",
            SqlState::INVALID_PARAMETER_VALUE,
        ),
        ("SELECT 'nothex'::objectid", SqlState::INVALID_TEXT_REPRESENTATION),
    ] {
        let e = c.batch_execute(sql).expect_err(sql);
        let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e:?}"));
        assert_eq!(db.code(), &state, "{sql}: {db:?}");
        for text in [Some(db.message()), db.detail(), db.hint()].into_iter().flatten() {
            assert!(
                !text.contains(".rs:") && !text.contains("backtrace") && !text.contains("pgrx"),
                "{sql}: a client reads the server's code: {text}"
            );
        }
    }
}
