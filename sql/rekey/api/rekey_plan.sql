-- The exact steps a rekey of tbl takes, the locks each takes and the rows each touches, what it
-- costs in WAL and bloat, and the problems that stop it, as lines of text. Changes nothing. For a
-- rekey already started, its recorded time column and mapping table are used, and the counts are
-- of what is left.
CREATE FUNCTION @extschema@.rekey_plan(tbl regclass, time_column name DEFAULT NULL,
                                       batch_size integer DEFAULT NULL, mapping_table text DEFAULT NULL,
                                       fire_triggers boolean DEFAULT false)
    RETURNS SETOF text
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := objectid_internal.rekey_key_column(tbl);
    st objectid_internal.rekey_state;
    mapping text;
    zone text := current_setting('TimeZone');
    problems text[];
    statements objectid_internal.rekey_batch_statements;
    -- Whether the caller may read tbl as its owner: the owner, a member of its role, and every
    -- partition below it that owner's too (otherwise the problems say so, and nothing is counted).
    as_owner boolean := objectid_internal.rekey_readable(tbl, tbl::oid);
    counts jsonb;
    time_expr text;
    untimed bigint;
    total bigint;
    todo bigint;
    v7 bigint;
    rows_touched bigint;
    row_bytes numeric;
    index_entry numeric;
    index_count integer;
    wal numeric := 0;
    dead bigint := 0;
    dead_bytes numeric := 0;
    entries bigint := 0;
    step integer := 0;
    j integer;
    r record;
    line text;
    found_lookalike boolean := false;
    -- The mapping table as the caller named it, for the run the steps print.
    plan_mapping_table text := mapping_table;
BEGIN
    IF batch_size < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1, not %', batch_size USING ERRCODE = 'invalid_parameter_value';
    END IF;
    st := objectid_internal.rekey_state_of(tbl);
    IF st.relid IS NOT NULL THEN
        time_column := coalesce(time_column, st.time_column);
        mapping_table := objectid_internal.rekey_name(st.mapping_table);
        zone := st.time_zone;
    END IF;
    mapping := objectid_internal.rekey_mapping_name(tbl, mapping_table);
    problems := ARRAY(SELECT p.problem FROM objectid_internal.rekey_problems(tbl, time_column, mapping, fire_triggers) p);
    IF time_column IS NOT NULL THEN
        time_expr := objectid_internal.rekey_time_expression(tbl, time_column, zone);
    END IF;

    -- The tables are read as their owner only (their policies and index expressions are the
    -- owner's code): a caller who may not act as the owner sees the problems, not the counts.
    IF as_owner THEN
        counts := objectid_internal.rekey_read_as_owner(tbl::oid, format(
            'SELECT pg_catalog.count(*) AS total,'
            ' pg_catalog.count(*) FILTER (WHERE objectid_internal.uuid_extract_version(t.%1$I) OPERATOR(pg_catalog.=) 4) AS v4,'
            ' pg_catalog.count(*) FILTER (WHERE objectid_internal.uuid_extract_version(t.%1$I) OPERATOR(pg_catalog.=) 7) AS v7,'
            ' %3$s AS untimed FROM %2$s t',
            key, objectid_internal.rekey_relation(tbl::oid),
            CASE WHEN time_expr IS NULL THEN 'NULL::pg_catalog.int8'
                 ELSE format('pg_catalog.count(*) FILTER (WHERE objectid_internal.uuid_extract_version(t.%I) OPERATOR(pg_catalog.=) 4'
                             ' AND %s IS NULL)', key, objectid_internal.rekey_usable_time(time_expr, 'NULL')) END));
        total := (counts ->> 'total')::bigint;
        todo := (counts ->> 'v4')::bigint;
        v7 := (counts ->> 'v7')::bigint;
        untimed := (counts ->> 'untimed')::bigint;
    END IF;

    RETURN NEXT format('Rekey plan for %s: primary key %I to UUIDv7, creation times from %s',
                       tbl, key, coalesce(quote_ident(time_column), '(no time column given)'));
    IF as_owner THEN
        RETURN NEXT format('  keys: %s rows, %s version 4 to rekey, %s version 7 already, %s other', total, todo, v7,
                           total - todo - v7);
    ELSE
        RETURN NEXT format('  keys: not counted: only the owner of %s or a member of its role may read it for a rekey,'
                           ' and only when every partition below it has that owner', tbl);
    END IF;
    IF untimed > 0 THEN
        RETURN NEXT format('  times: %s version-4 keys have no time a UUIDv7 can carry in %I (NULL, or outside 1970-01-01 to'
                           ' 9999-12-31): they get the fallback time %s', untimed, time_column,
                           to_char(coalesce(st.fallback_time, '1970-01-01 00:00:00+00') AT TIME ZONE 'UTC',
                                   'YYYY-MM-DD HH24:MI:SS "UTC"')
                           || CASE WHEN st.relid IS NULL THEN ' (rekey_run''s fallback_time, if given)' ELSE '' END);
    END IF;
    IF st.relid IS NOT NULL THEN
        RETURN NEXT format('  started %s: %s keys rekeyed in %s batches, pass %s%s',
                           to_char(st.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'),
                           st.keys_done, st.batches, st.pass,
                           CASE WHEN st.finished_at IS NOT NULL THEN ', finished (a new run sweeps again)' ELSE '' END);
    END IF;
    RETURN NEXT format('  mapping table: %s (%s)', mapping,
                       CASE WHEN to_regclass(mapping) IS NULL THEN 'to be created' ELSE 'exists' END);

    RETURN NEXT '  columns that change together, with the rows each batch run will rewrite:';
    -- Over an array, not a cursor: no cursor is open while the owner's code runs (as_owner.rs).
    FOREACH r IN ARRAY ARRAY(SELECT x FROM (SELECT c.relid, array_agg(c.attname ORDER BY c.attnum) AS names,
                    objectid_internal.rekey_readable(tbl, c.relid) AS all_uuid
               FROM objectid_internal.rekey_columns(tbl) c
              GROUP BY c.relid ORDER BY min(c.depth), c.relid::text) x)
    LOOP
        rows_touched := NULL;
        IF r.all_uuid AND as_owner THEN
            counts := objectid_internal.rekey_read_as_owner(r.relid::oid, format(
                'SELECT pg_catalog.count(*) AS n, coalesce(pg_catalog.avg(pg_catalog.pg_column_size(t.*)), 0) AS bytes'
                ' FROM %s t WHERE %s',
                objectid_internal.rekey_relation(r.relid::oid),
                (SELECT string_agg(format('objectid_internal.uuid_extract_version(t.%I) OPERATOR(pg_catalog.=) 4', n), ' OR ')
                   FROM unnest(r.names) n)));
            rows_touched := (counts ->> 'n')::bigint;
            row_bytes := (counts ->> 'bytes')::numeric;
            SELECT count(*), coalesce(sum(e.size), 0) INTO index_count, index_entry
              FROM (SELECT ((8 + sum(CASE WHEN ty.typlen > 0 THEN ty.typlen ELSE 16 END) + 7) / 8) * 8 + 4 AS size
                      FROM pg_index i
                      JOIN pg_attribute a ON a.attrelid = i.indexrelid
                      JOIN pg_type ty ON ty.oid = a.atttypid
                     WHERE i.indrelid = r.relid GROUP BY i.indexrelid) e;
            wal := wal + rows_touched * (row_bytes + 60) + rows_touched * (index_entry + 40 * index_count);
            dead := dead + rows_touched;
            dead_bytes := dead_bytes + rows_touched * row_bytes;
            entries := entries + rows_touched * index_count;
        END IF;
        RETURN NEXT format('    %s (%s): %s rows', r.relid,
                           (SELECT string_agg(quote_ident(n), ', ') FROM unnest(r.names) n),
                           coalesce(rows_touched::text, 'unknown'));
    END LOOP;
    -- The mapping table: a row and two index entries per key.
    wal := wal + todo * ((24 + 16 + 16 + 8) + 60 + 2 * ((8 + 16 + 7) / 8 * 8 + 4 + 40));

    FOR r IN SELECT * FROM objectid_internal.rekey_references(tbl) LOOP
        RETURN NEXT format('  foreign key %I: %s(%s) -> %s(%s), ON UPDATE %s%s', r.constraint_name,
                           r.referencing_table, array_to_string(r.referencing_columns, ', '),
                           r.referenced_table, array_to_string(r.referenced_columns, ', '), r.on_update,
                           CASE WHEN r.is_deferrable THEN ', deferrable' ELSE '' END);
    END LOOP;

    IF cardinality(problems) = 0 THEN
        RETURN NEXT 'Problems that stop it: none';
    ELSE
        RETURN NEXT 'Problems that stop it:';
        FOREACH line IN ARRAY problems LOOP
            RETURN NEXT '  - ' || line;
        END LOOP;
    END IF;

    -- Not a problem that stops the rekey (the steps below reach only the extension's routines),
    -- but a trap for whoever calls them another way.
    FOR line IN SELECT l FROM objectid_internal.rekey_lookalikes() l LOOP
        IF NOT found_lookalike THEN
            RETURN NEXT 'Warnings:';
            found_lookalike := true;
        END IF;
        RETURN NEXT format('  - %s is named like a routine of the toolkit and is not the extension''s: a call not'
                           ' schema-qualified, or with an argument not cast to its type, can run it as the caller;'
                           ' make every call as the steps below print it', line);
    END LOOP;

    RETURN NEXT 'Steps:';
    step := step + 1;
    IF objectid_internal.rekey_default_is_v7(tbl) THEN
        RETURN NEXT format('  %s. new rows already get version-7 keys: the default of %I calls uuidv7()', step, key);
    ELSE
        RETURN NEXT format('  %s. SELECT %s: new rows get version-7 keys from now on',
                           step, objectid_internal.rekey_call('rekey_switch_default', tbl));
        RETURN NEXT format('       ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s.uuidv7()', objectid_internal.rekey_name(tbl::oid), key,
                           objectid_internal.rekey_api_schema());
        RETURN NEXT format('       lock: ACCESS EXCLUSIVE on %s for a catalog change, each attempt waiting at most its lock_timeout', tbl);
    END IF;

    step := step + 1;
    RETURN NEXT format('  %s. CALL %s: records the starting counts%s', step,
                       objectid_internal.rekey_call('rekey_run', tbl, objectid_internal.rekey_run_arguments(
                           time_column, batch_size, plan_mapping_table, fire_triggers)),
                       CASE WHEN to_regclass(mapping) IS NULL THEN ' and creates the mapping table' ELSE '' END);
    IF to_regclass(mapping) IS NULL THEN
        RETURN NEXT format('       CREATE TABLE %s (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE, batch bigint NOT NULL)', mapping);
    END IF;
    RETURN NEXT format('     then %s, in key order, each a batch in its own'
                       ' transaction (with enable_seqscan off), as %s in a security-restricted operation:',
                       CASE WHEN batch_size IS NULL
                            THEN (SELECT format('windows of keys but version-7 ones sized to take about %s s each (%s to %s keys, %s first)',
                                                k.target_seconds, k.least_size, k.most_size, k.first_size)
                                    FROM objectid_internal.rekey_batch_size(NULL, NULL, NULL) k)
                            ELSE format('%s windows of up to %s keys but version-7 ones',
                                        coalesce(((todo + batch_size - 1) / batch_size)::text, 'the'), batch_size) END,
                       (SELECT c.relowner::regrole FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl));
    IF time_column IS NOT NULL AND objectid_internal.rekey_time_expression(tbl, time_column, zone) IS NOT NULL
       AND NOT EXISTS (SELECT FROM objectid_internal.rekey_columns(tbl) c WHERE c.atttype <> 'uuid'::regtype) THEN
        statements := objectid_internal.rekey_statements(tbl, time_column, zone, mapping);
        RETURN NEXT '     a. ' || statements.window_query;
        RETURN NEXT format('        lock: ACCESS SHARE on %s', tbl);
        RETURN NEXT '     b. ' || statements.map_query;
        RETURN NEXT format('        lock: ROW SHARE on %s, ROW EXCLUSIVE on %s; the batch''s rows FOR UPDATE, so that updates'
                           ' and deletes of them, and inserts that reference them, wait for the COMMIT', tbl, mapping);
        FOR j IN 1 .. cardinality(statements.other_queries) LOOP
            RETURN NEXT format('     c%s. as %s, the owner of %s: %s', j,
                               (SELECT c.relowner::regrole FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) statements.other_tables[j]),
                               statements.other_tables[j]::regclass, statements.other_queries[j]);
            RETURN NEXT format('        lock: ROW EXCLUSIVE on %s; every rewritten row; its foreign keys checked at the end of c.',
                               statements.other_tables[j]::regclass);
        END LOOP;
        RETURN NEXT '     c. ' || statements.rewrite_query;
        RETURN NEXT format('        lock: ROW EXCLUSIVE on %s; every rewritten row',
                           (SELECT string_agg(DISTINCT c.relid::text, ', ') FROM objectid_internal.rekey_columns(tbl) c));
        line := objectid_internal.rekey_fast_path(tbl, to_regclass(mapping)::oid,
                                                  ARRAY(SELECT c FROM objectid_internal.rekey_columns(tbl) c));
        RETURN NEXT '        fast path ' || line || CASE WHEN line LIKE 'on%'
            THEN ': the foreign-key checks this statement satisfies by construction are left out of it, and one set-based check per foreign key made after it'
            ELSE ': PostgreSQL checks every foreign key per changed key and per changed row' END;
        RETURN NEXT '     d. UPDATE objectid_internal.rekey_state (progress), COMMIT, then the pause; a lock not granted'
                    ' within lock_timeout rolls the batch back and retries it';
    ELSE
        RETURN NEXT '     (the statements depend on the time column)';
    END IF;
    RETURN NEXT '     then a second pass over the key from the start, for version-4 keys inserted behind the first';

    step := step + 1;
    RETURN NEXT format('  %s. SELECT * FROM %s: keys left, foreign keys, counts against the start',
                       step, objectid_internal.rekey_call('rekey_verify', tbl));
    IF EXISTS (SELECT FROM objectid_internal.rekey_materialized_views(tbl)) THEN
        step := step + 1;
        RETURN NEXT format('  %s. refresh the materialized views that read the key, which still hold the old keys'
                           ' (rekey_run does it at the end with refresh_materialized_views => true); lock: EXCLUSIVE on each',
                           step);
        FOR r IN SELECT v.matview FROM objectid_internal.rekey_materialized_views(tbl) v LOOP
            RETURN NEXT format('       REFRESH MATERIALIZED VIEW %s', objectid_internal.rekey_name(r.matview::oid));
        END LOOP;
    END IF;
    step := step + 1;
    RETURN NEXT format('  %s. compact the indexes, which every rewritten row added an entry to; lock: SHARE UPDATE EXCLUSIVE,'
                       ' reads and writes go on', step);
    FOR r IN SELECT DISTINCT c.relid::text AS name FROM objectid_internal.rekey_columns(tbl) c ORDER BY 1 LOOP
        RETURN NEXT format('       REINDEX TABLE CONCURRENTLY %s', r.name);
    END LOOP;

    RETURN NEXT format('Expected cost: %s row versions written, about %s of WAL before full-page images;'
                       ' %s dead row versions (about %s) until vacuumed, %s new index entries until reindexed',
                       dead, pg_size_pretty(wal::bigint), dead, pg_size_pretty(dead_bytes::bigint), entries);
END
$body$;
