-- Checks a rekey of tbl: version-4 keys and references left (and why), every foreign key valid
-- with no orphan, row counts and foreign-key join counts against those when it started, the
-- mapping complete, and each rekeyed key carrying its row's creation time. One row per check,
-- with status ok, failed, changed (counts moved since the start: writes during the rekey do that)
-- or not finished.
CREATE FUNCTION @extschema@.rekey_verify(tbl regclass)
    RETURNS TABLE (check_name text, status text, detail text)
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := objectid_internal.rekey_key_column(tbl);
    st objectid_internal.rekey_state;
    r record;
    k record;
    got jsonb;
    counts jsonb;
    n bigint;
    reasons text[];
    time_expr text;
    mapping text;
    snapshot jsonb;
BEGIN
    IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl), 'USAGE') THEN
        -- The tables are read as their owner only (their policies and index expressions are the
        -- owner's code).
        RAISE EXCEPTION 'permission denied: only the owner of % or a member of its role may verify its rekey', tbl
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    st := objectid_internal.rekey_state_of(tbl);
    mapping := objectid_internal.rekey_name(st.mapping_table);
    IF st.relid IS NULL THEN
        RAISE EXCEPTION 'no rekey of % is recorded', tbl USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    -- Only the counts of tables the caller may read (rekey_snapshot's policy).
    SELECT jsonb_build_object(
               'rows', coalesce(jsonb_object_agg(x.counted::text, x.n) FILTER (WHERE x.constraint_id IS NULL), '{}'),
               'joins', coalesce(jsonb_object_agg(x.constraint_id::text, x.n) FILTER (WHERE x.constraint_id IS NOT NULL),
                                 '{}'))
      INTO snapshot
      FROM objectid_internal.rekey_snapshot x WHERE x.relid = tbl;

    check_name := 'run';
    status := CASE WHEN st.finished_at IS NOT NULL THEN 'ok' ELSE 'not finished' END;
    detail := format('%s keys rekeyed in %s batches and %s runs', st.keys_done, st.batches, st.runs);
    RETURN NEXT;

    got := objectid_internal.rekey_read_as_owner(tbl::oid, format(
        'SELECT pg_catalog.count(*) AS n, (SELECT pg_catalog.jsonb_agg(f ORDER BY f.key) FROM ('
        '     SELECT t2.%1$I AS key, EXISTS (SELECT FROM %2$s m WHERE m.old_key OPERATOR(pg_catalog.=) t2.%1$I) AS mapped'
        '       FROM %3$s t2 WHERE objectid_internal.uuid_extract_version(t2.%1$I) OPERATOR(pg_catalog.=) 4'
        '      ORDER BY 1 LIMIT 10) f) AS first'
        ' FROM %3$s t WHERE objectid_internal.uuid_extract_version(t.%1$I) OPERATOR(pg_catalog.=) 4',
        key, mapping, objectid_internal.rekey_relation(tbl::oid)));
    n := (got ->> 'n')::bigint;
    check_name := format('version-4 keys in %s.%I', tbl, key);
    IF n = 0 THEN
        status := 'ok';
        detail := 'none left';
    ELSE
        status := CASE WHEN st.finished_at IS NULL THEN 'not finished' ELSE 'failed' END;
        reasons := '{}';
        FOR k IN SELECT (e ->> 'key')::uuid AS key, (e ->> 'mapped')::boolean AS mapped
                   FROM jsonb_array_elements(got -> 'first') e
        LOOP
            reasons := reasons || format('%s: %s', k.key,
                CASE WHEN k.mapped THEN 'an old key, inserted again after its row was rekeyed'
                     WHEN st.finished_at IS NULL AND st.pass = 1 AND k.key > st.high_water THEN 'not reached yet'
                     ELSE format('inserted with a version-4 key behind the run; CALL %s again',
                                 objectid_internal.rekey_call('rekey_run', tbl)) END);
        END LOOP;
        detail := format('%s left%s: %s', n, CASE WHEN n > 10 THEN ', the first 10' ELSE '' END,
                         array_to_string(reasons, '; '));
    END IF;
    RETURN NEXT;

    -- Over an array, not a cursor: no cursor is open while the owner's code runs (as_owner.rs).
    FOREACH r IN ARRAY ARRAY(SELECT x FROM (SELECT * FROM objectid_internal.rekey_columns(tbl) c WHERE c.depth > 0) x)
    LOOP
        check_name := format('version-4 values in %s.%I', r.relid, r.attname);
        IF NOT objectid_internal.rekey_readable(tbl, r.relid::oid) THEN
            status := 'failed';
            detail := CASE WHEN r.atttype <> 'uuid'::regtype
                           THEN format('not read: of type %s, not uuid', r.atttype)
                           ELSE 'not read: a table (or a partition) of an owner you may not act as' END;
        ELSE
            n := (objectid_internal.rekey_read_as_owner(r.relid::oid, format(
                      'SELECT pg_catalog.count(*) AS n FROM %s t'
                      ' WHERE objectid_internal.uuid_extract_version(t.%I) OPERATOR(pg_catalog.=) 4',
                      objectid_internal.rekey_relation(r.relid::oid), r.attname)) OPERATOR(pg_catalog.->>) 'n'::text)::bigint;
            status := CASE WHEN n = 0 THEN 'ok' WHEN st.finished_at IS NULL THEN 'not finished' ELSE 'failed' END;
            detail := CASE WHEN n = 0 THEN 'none left' ELSE n || ' left, referencing version-4 keys' END;
        END IF;
        RETURN NEXT;
    END LOOP;

    -- Over an array, not a cursor: no cursor is open while the owner's code runs (as_owner.rs).
    FOREACH r IN ARRAY ARRAY(SELECT x FROM (SELECT * FROM objectid_internal.rekey_references(tbl)) x)
    LOOP
        check_name := format('foreign key %I on %s', r.constraint_name, r.referencing_table);
        IF NOT (objectid_internal.rekey_readable(tbl, r.referencing_table::oid)
                AND objectid_internal.rekey_readable(tbl, r.referenced_table::oid)) THEN
            status := 'failed';
            detail := 'not read: a table of an owner you may not act as, or a column not of type uuid';
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF (SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) r.referencing_table)
           <> (SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) r.referenced_table) THEN
            -- Each table is read only as its own owner, so rows of two owners are never joined:
            -- a validated foreign key has no orphan, PostgreSQL checked each row the rekey wrote.
            status := CASE WHEN r.validated THEN 'ok' ELSE 'failed' END;
            detail := format('%s; rows without their %s row not counted: the tables have different owners',
                             CASE WHEN r.validated THEN 'validated' ELSE 'NOT VALIDATED' END, r.referenced_table);
            RETURN NEXT;
            CONTINUE;
        END IF;
        n := (objectid_internal.rekey_read_as_owner(r.referencing_table::oid, format(
                  'SELECT pg_catalog.count(*) AS n FROM %s c WHERE %s AND NOT EXISTS (SELECT FROM %s p WHERE %s)',
                  objectid_internal.rekey_relation(r.referencing_table::oid),
                  (SELECT string_agg(format('c.%I IS NOT NULL', f), ' AND ') FROM unnest(r.referencing_columns) f),
                  objectid_internal.rekey_relation(r.referenced_table::oid),
                  (SELECT string_agg(format('c.%I OPERATOR(pg_catalog.=) p.%I', f, t), ' AND ')
                     FROM unnest(r.referencing_columns, r.referenced_columns) u(f, t))))
              OPERATOR(pg_catalog.->>) 'n'::text)::bigint;
        status := CASE WHEN r.validated AND n = 0 THEN 'ok' ELSE 'failed' END;
        detail := format('%s, %s rows without their %s row', CASE WHEN r.validated THEN 'validated' ELSE 'NOT VALIDATED' END,
                         n, r.referenced_table);
        RETURN NEXT;
    END LOOP;

    -- The counts now, in one snapshot as at the start.
    counts := (SELECT jsonb_object_agg(e.key, e.value)
                 FROM objectid_internal.rekey_counts_query(tbl, mapping) q
                 CROSS JOIN LATERAL jsonb_each(objectid_internal.rekey_read_as_owner(q.relid, q.query)) e);
    FOR r IN SELECT e.key::oid AS relid, e.value::bigint AS before FROM jsonb_each_text(snapshot -> 'rows') e
              ORDER BY e.key::oid::regclass::text LOOP
        IF objectid_internal.rekey_name(r.relid) IS NULL THEN
            check_name := format('rows of the table with OID %s', r.relid);
            status := 'changed';
            detail := 'the table is gone';
        ELSIF NOT counts ? ('rows ' || r.relid) THEN
            check_name := format('rows of %s', r.relid::regclass);
            status := 'failed';
            detail := 'not read: a table of an owner you may not act as now, or a column not of type uuid';
        ELSE
            check_name := format('rows of %s', r.relid::regclass);
            n := (counts ->> ('rows ' || r.relid))::bigint;
            status := CASE WHEN n = r.before THEN 'ok' ELSE 'changed' END;
            detail := format('%s at the start, %s now', r.before, n);
        END IF;
        RETURN NEXT;
    END LOOP;
    FOR r IN SELECT f.*, (snapshot -> 'joins' ->> f.constraint_id::text)::bigint AS before
               FROM objectid_internal.rekey_references(tbl) f
              WHERE counts ? ('join ' || f.constraint_id)
    LOOP
        n := (counts ->> ('join ' || r.constraint_id))::bigint;
        check_name := format('join %s -> %s (%I)', r.referencing_table, r.referenced_table, r.constraint_name);
        status := CASE WHEN n = r.before THEN 'ok' ELSE 'changed' END;
        detail := format('%s rows at the start, %s now', coalesce(r.before::text, 'no count'), n);
        RETURN NEXT;
    END LOOP;

    got := objectid_internal.rekey_read_as_owner(tbl::oid, format(
        'SELECT pg_catalog.count(*) AS mapped,'
        ' pg_catalog.count(*) FILTER (WHERE EXISTS (SELECT FROM %1$s t WHERE t.%2$I OPERATOR(pg_catalog.=) m.old_key)) AS reused,'
        ' pg_catalog.count(*) FILTER (WHERE NOT EXISTS (SELECT FROM %1$s t WHERE t.%2$I OPERATOR(pg_catalog.=) m.new_key))'
        ' AS deleted FROM %3$s m',
        objectid_internal.rekey_relation(tbl::oid), key, mapping));
    check_name := format('mapping %s', st.mapping_table::regclass);
    status := CASE WHEN (got ->> 'mapped')::bigint <> st.keys_done OR (got ->> 'reused')::bigint > 0 THEN 'failed'
                   WHEN (got ->> 'deleted')::bigint > 0 THEN 'changed' ELSE 'ok' END;
    detail := format('%s old keys mapped (%s counted by the runs), %s old keys in use again, %s new keys deleted since',
                     got ->> 'mapped', st.keys_done, got ->> 'reused', got ->> 'deleted');
    RETURN NEXT;

    time_expr := objectid_internal.rekey_time_expression(tbl, st.time_column, st.time_zone);
    IF time_expr IS NULL THEN
        check_name := 'key times';
        status := 'failed';
        detail := format('time column "%s" is gone or no longer of a time type', st.time_column);
    ELSE
        got := objectid_internal.rekey_read_as_owner(tbl::oid, format(
            'SELECT pg_catalog.count(*) AS n, pg_catalog.count(*) FILTER (WHERE objectid_internal.uuid_extract_timestamp(t.%1$I)'
            ' IS DISTINCT FROM pg_catalog.date_trunc(''milliseconds''::pg_catalog.text, %2$s)) AS m'
            ' FROM %3$s t JOIN %4$s m ON m.new_key OPERATOR(pg_catalog.=) t.%1$I',
            key, objectid_internal.rekey_usable_time(time_expr, format('%L::pg_catalog.timestamptz', st.fallback_time)),
            objectid_internal.rekey_relation(tbl::oid), mapping));
        check_name := format('key times from %I', st.time_column);
        status := CASE WHEN (got ->> 'm')::bigint = 0 THEN 'ok' ELSE 'changed' END;
        detail := format('%s of %s rekeyed keys carry a time other than their row''s %s (to the millisecond)%s',
                         got ->> 'm', got ->> 'n', quote_ident(st.time_column),
                         CASE WHEN (got ->> 'm')::bigint = 0 THEN '' ELSE ': changed after the rekey?' END);
    END IF;
    RETURN NEXT;
END
$body$;
