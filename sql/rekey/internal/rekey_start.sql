-- Starts or resumes the rekey of tbl in the caller's transaction: refuses while rekey_problems
-- finds any problem or the key's default still makes version-4 keys; on the first start makes
-- (or adopts, after rekey_forget) the mapping table and records the counts rekey_verify compares
-- with; on a rekey that finished, starts a sweep for version-4 keys inserted since. A time
-- column, mapping table or fallback time given must be the recorded one.
CREATE FUNCTION objectid_internal.rekey_start(tbl regclass, time_column name, fallback_time timestamptz,
                                        fire_triggers boolean, mapping_table text)
    RETURNS objectid_internal.rekey_state
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := objectid_internal.rekey_key_column(tbl);
    owner oid := (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl);
    st objectid_internal.rekey_state;
    mapping text;
    mapping_oid oid;
    problems text[];
    code text;
    counts jsonb;
    remaining bigint;
    done bigint;
    r record;
    n bigint;
BEGIN
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RAISE EXCEPTION 'cannot rekey %: permission denied: only the owner of % (%) or a member of its role may rekey it',
                tbl, tbl, owner::regrole
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM FROM objectid_internal.rekey_state s WHERE s.relid = tbl FOR UPDATE;
    st := objectid_internal.rekey_state_of(tbl);
    IF st.relid IS NOT NULL THEN
        IF time_column IS NOT NULL AND time_column <> st.time_column THEN
            RAISE EXCEPTION 'the rekey of % started with time column "%", not "%"', tbl, st.time_column, time_column
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = format('Leave time_column out to resume, or start over after SELECT %s.',
                                    objectid_internal.rekey_call('rekey_forget', tbl));
        END IF;
        IF mapping_table IS NOT NULL AND to_regclass(mapping_table) IS DISTINCT FROM st.mapping_table THEN
            RAISE EXCEPTION 'the rekey of % started with mapping table %, not %', tbl, st.mapping_table::regclass, mapping_table
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF fallback_time IS NOT NULL AND fallback_time <> st.fallback_time THEN
            RAISE EXCEPTION 'the rekey of % started with fallback time %, not %', tbl, st.fallback_time, fallback_time
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        time_column := st.time_column;
        mapping := objectid_internal.rekey_name(st.mapping_table);
    ELSE
        mapping := objectid_internal.rekey_mapping_name(tbl, mapping_table);
    END IF;

    SELECT array_agg(p.problem), (array_agg(p.code ORDER BY p.code = '42501' DESC))[1]
      INTO problems, code
      FROM objectid_internal.rekey_problems(tbl, time_column, mapping, fire_triggers) p;
    problems := coalesce(problems, '{}');
    IF NOT objectid_internal.rekey_default_is_v7(tbl) THEN
        problems := problems || format('the default of %s.%I does not make version-7 keys: run SELECT %s first,'
                                       ' so that rows inserted during the rekey get them', tbl, key,
                                       objectid_internal.rekey_call('rekey_switch_default', tbl));
        code := coalesce(code, '55000');
    END IF;
    IF cardinality(problems) > 0 THEN
        RAISE EXCEPTION 'cannot rekey %: %', tbl, problems[1]
            USING ERRCODE = code,
                  DETAIL = 'Every problem found: ' || array_to_string(problems, '; '),
                  HINT = format('SELECT * FROM %s shows the plan and its problems.',
                                objectid_internal.rekey_call('rekey_plan', tbl, objectid_internal.rekey_run_arguments(
                                    time_column, NULL, mapping_table, fire_triggers)));
    END IF;
    IF st.relid IS NOT NULL THEN
        remaining := (objectid_internal.rekey_read_as_owner(tbl::oid, format(
            'SELECT pg_catalog.count(*) AS n FROM %s t'
            ' WHERE objectid_internal.uuid_extract_version(t.%I) OPERATOR(pg_catalog.=) 4',
            objectid_internal.rekey_relation(tbl::oid), key)) OPERATOR(pg_catalog.->>) 'n'::text)::bigint;
        UPDATE objectid_internal.rekey_state s
           SET runs = s.runs + 1, run_started_at = clock_timestamp(), run_keys_done = 0,
               keys_total = s.keys_done + remaining,
               pass = CASE WHEN s.finished_at IS NULL THEN s.pass ELSE 2 END,
               high_water = CASE WHEN s.finished_at IS NULL THEN s.high_water
                                 ELSE '00000000-0000-0000-0000-000000000000' END,
               finished_at = NULL, runner_pid = pg_backend_pid(),
               runner_started = (SELECT a.backend_start FROM pg_stat_activity a WHERE a.pid = pg_backend_pid())
         WHERE s.relid = tbl
        RETURNING * INTO st;
        RETURN st;
    END IF;

    mapping_oid := to_regclass(mapping);
    IF mapping_oid IS NULL THEN
        EXECUTE format('CREATE TABLE %s (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE, batch bigint NOT NULL)', mapping);
        mapping_oid := to_regclass(mapping);
        EXECUTE format('COMMENT ON TABLE %s IS %L', objectid_internal.rekey_name(mapping_oid), objectid_internal.rekey_mapping_comment(tbl));
        IF (SELECT c.relowner FROM pg_class c WHERE c.oid = mapping_oid) <> owner THEN
            EXECUTE format('ALTER TABLE %s OWNER TO %I', objectid_internal.rekey_name(mapping_oid),
                           (SELECT rl.rolname FROM pg_roles rl WHERE rl.oid = owner));
        END IF;
    END IF;
    -- Every count in one statement, so in one snapshot (each owner's read is made under the
    -- snapshot of the statement that calls it): what rekey_verify compares with must be one state
    -- of the tables, not one per table while others write. An adopted mapping table
    -- (rekey_problems checked it was made for this table) counts as done.
    counts := (SELECT jsonb_object_agg(e.key, e.value)
                 FROM objectid_internal.rekey_counts_query(tbl, objectid_internal.rekey_name(mapping_oid)) q
                 CROSS JOIN LATERAL jsonb_each(objectid_internal.rekey_read_as_owner(q.relid, q.query)) e);
    remaining := (counts ->> 'keys to do')::bigint;
    done := (counts ->> 'mapped')::bigint;
    INSERT INTO objectid_internal.rekey_state (relid, key_constraint, key_column, time_column, time_zone, fallback_time,
                                         mapping_table, keys_total, keys_done, started_at, run_started_at,
                                         runner_pid, runner_started)
    VALUES (tbl, (SELECT c.oid FROM pg_constraint c WHERE c.conrelid = tbl AND c.contype = 'p'), key, time_column,
            current_setting('TimeZone'), coalesce(fallback_time, '1970-01-01 00:00:00+00'), mapping_oid,
            done + remaining, done, clock_timestamp(), clock_timestamp(), pg_backend_pid(),
            (SELECT a.backend_start FROM pg_stat_activity a WHERE a.pid = pg_backend_pid()))
    RETURNING * INTO st;
    INSERT INTO objectid_internal.rekey_snapshot (relid, counted, constraint_id, referenced, n)
    SELECT tbl, substr(e.key, 6)::oid, NULL, NULL, e.value::bigint
      FROM jsonb_each_text(counts) e WHERE e.key LIKE 'rows %'
    UNION ALL
    SELECT tbl, c.conrelid, c.oid, c.confrelid, e.value::bigint
      FROM jsonb_each_text(counts) e JOIN pg_constraint c ON c.oid = substr(e.key, 6)::oid
     WHERE e.key LIKE 'join %';
    RETURN st;
END
$body$;
