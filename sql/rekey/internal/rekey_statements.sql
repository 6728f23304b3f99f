CREATE FUNCTION objectid_internal.rekey_statements(tbl regclass, time_column name, time_zone text,
                                                   mapping_table text,
                                                   columns objectid_internal.rekey_column[] DEFAULT NULL)
    RETURNS objectid_internal.rekey_batch_statements
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name;
    time_expr text;
    updates text[] := '{}';
    counts text[] := '{}';
    r record;
    i integer := 0;
    col name;
    key_owner oid := (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl);
    result objectid_internal.rekey_batch_statements;
BEGIN
    -- Strict in all but columns (NULL: read here).
    IF tbl IS NULL OR time_column IS NULL OR time_zone IS NULL OR mapping_table IS NULL THEN
        RETURN NULL;
    END IF;
    key := objectid_internal.rekey_key_column(tbl);
    time_expr := objectid_internal.rekey_time_expression(tbl, time_column, time_zone);
    IF time_expr IS NULL THEN
        RAISE EXCEPTION 'column "%" of % is not a timestamptz, timestamp or date column', time_column, tbl
            USING ERRCODE = 'undefined_column';
    END IF;
    result.other_tables := '{}';
    result.other_queries := '{}';
    FOR r IN SELECT c.relid, array_agg(c.attname ORDER BY c.attnum) AS names, min(c.depth) AS depth,
                    (SELECT k.relowner FROM pg_class k WHERE k.oid = c.relid) AS owner
               FROM unnest(coalesce(columns, ARRAY(SELECT c FROM objectid_internal.rekey_columns(tbl) c))) c
              GROUP BY c.relid
              ORDER BY min(c.depth), c.relid::text
    LOOP
        IF r.owner <> key_owner THEN
            -- Another owner's table: its code runs as its owner, in statements of its own, which
            -- read no other table (the keys and their new keys come as arrays, in step). A column
            -- a statement: a row with two columns referencing the key is changed once for each.
            FOREACH col IN ARRAY r.names LOOP
                result.other_tables := result.other_tables || r.relid::oid;
                result.other_queries := result.other_queries || format(
                    'UPDATE %s t SET %I = objectid_internal.rekey_new_key(t.%I, $1, $2)'
                    ' WHERE t.%I OPERATOR(pg_catalog.=) ANY ($1)',
                    objectid_internal.rekey_relation(r.relid::oid), col, col, col);
            END LOOP;
            CONTINUE;
        END IF;
        i := i + 1;
        -- One UPDATE per table, so that no row is changed twice by the statement (a
        -- self-reference, or two columns referencing the key). Each column's new value is looked
        -- up in the batch's keys and new keys ($1, $2) from the row's own value, so that a row
        -- changed meanwhile (read again by EvalPlanQual) gets the new key of what it holds then.
        updates := updates || format(
            'u%s AS (UPDATE %s t SET %s WHERE %s RETURNING %s)', i, objectid_internal.rekey_relation(r.relid::oid),
            (SELECT string_agg(format('%1$I = objectid_internal.rekey_new_key(t.%1$I, $1, $2)', n), ', ')
               FROM unnest(r.names) n),
            (SELECT string_agg(format('t.%I OPERATOR(pg_catalog.=) ANY ($1)', n), ' OR ') FROM unnest(r.names) n),
            CASE WHEN i = 1 THEN format('t.%I AS k', key) ELSE '1' END);
        -- For the key's table, the rows whose key really became one of the new keys: a BEFORE
        -- trigger could have kept the old one.
        counts := counts || CASE WHEN i = 1
            THEN '(SELECT pg_catalog.count(*) FROM u1 JOIN pg_catalog.unnest($2) n(k) ON n.k OPERATOR(pg_catalog.=) u1.k)'
            ELSE format('(SELECT pg_catalog.count(*) FROM u%s)', i) END;
    END LOOP;
    -- The next keys in key order but version-7 ones (rekeyed, the application's new ones, every
    -- key in the second pass), which the one index scan passes over instead of filling windows
    -- with nothing to rekey, each at a batch's fixed cost. "<> 7", not "= 4": the planner takes
    -- a condition on a function's result to keep 0.5 % of the rows (= 4) or 99.5 % (<> 7), and
    -- with 0.5 % it reads every key above the window's start and sorts them, for every window.
    result.window_query := format(
        'SELECT pg_catalog.array_agg(k ORDER BY k) FROM (SELECT t.%1$I AS k FROM %2$s t'
        ' WHERE t.%1$I OPERATOR(pg_catalog.>) $1 AND objectid_internal.uuid_extract_version(t.%1$I) OPERATOR(pg_catalog.<>) 7'
        ' ORDER BY t.%1$I LIMIT $2) s',
        key, objectid_internal.rekey_relation(tbl::oid));
    -- The lock and the mapping in one statement: each row is read once, its time with it, under
    -- its lock (FOR UPDATE reads the latest version of a row changed since the statement began).
    result.map_query := format(
        'WITH l AS (SELECT t.%1$I AS k, %2$s AS at FROM %3$s t'
        ' WHERE t.%1$I OPERATOR(pg_catalog.=) ANY ($1) AND objectid_internal.uuid_extract_version(t.%1$I) OPERATOR(pg_catalog.=) 4'
        ' AND NOT EXISTS (SELECT FROM %4$s m WHERE m.old_key OPERATOR(pg_catalog.=) t.%1$I) FOR UPDATE OF t),'
        ' m AS (INSERT INTO %4$s (old_key, new_key, batch) SELECT l.k, objectid_internal.uuidv7_at(l.at), $3 FROM l'
        ' RETURNING old_key, new_key)'
        ' SELECT pg_catalog.array_agg(m.old_key ORDER BY m.old_key), pg_catalog.array_agg(m.new_key ORDER BY m.old_key) FROM m',
        key, objectid_internal.rekey_usable_time(time_expr, '$2'), objectid_internal.rekey_relation(tbl::oid),
        mapping_table);
    result.rewrite_query := format('WITH %s SELECT ARRAY[%s]', array_to_string(updates, ', '),
                                   array_to_string(counts, ', '));
    RETURN result;
END
$body$;
