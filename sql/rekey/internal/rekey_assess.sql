-- What there is, for one table: key versions, the v7 keys' time span, the key's physical order,
-- the key index's size and leaf density, the foreign keys that follow it, candidate time columns.
CREATE FUNCTION objectid_internal.rekey_assess(tbl regclass)
    RETURNS TABLE (table_name regclass, key_column name, total_rows bigint, v4_keys bigint,
                   v7_keys bigint, v1_keys bigint, other_keys bigint, null_keys bigint,
                   v7_first timestamptz, v7_last timestamptz, key_correlation real,
                   key_index regclass, key_index_size bigint, key_index_leaf_density float8,
                   foreign_keys text[], time_columns name[], untimed_rows bigint[],
                   materialized_views regclass[], notes text[])
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    counts jsonb;
BEGIN
    table_name := tbl;
    key_column := objectid_internal.rekey_key_column(tbl);
    notes := '{}';
    IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl), 'USAGE') THEN
        -- The table is read only as its owner (its policies and index expressions are the owner's
        -- code), which the caller may not act as.
        RAISE EXCEPTION 'permission denied: only the owner of % or a member of its role may assess it', tbl
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    counts := objectid_internal.rekey_read_as_owner(tbl::oid, format(
        'SELECT pg_catalog.count(*) AS total, pg_catalog.count(*) FILTER (WHERE v OPERATOR(pg_catalog.=) 4) AS v4,'
        ' pg_catalog.count(*) FILTER (WHERE v OPERATOR(pg_catalog.=) 7) AS v7,'
        ' pg_catalog.count(*) FILTER (WHERE v OPERATOR(pg_catalog.=) 1) AS v1,'
        ' pg_catalog.count(*) FILTER (WHERE k IS NOT NULL AND v IS DISTINCT FROM 1'
        ' AND v IS DISTINCT FROM 4 AND v IS DISTINCT FROM 7) AS other, pg_catalog.count(*) FILTER (WHERE k IS NULL) AS nulls,'
        ' pg_catalog.min(objectid_internal.uuid_extract_timestamp(k)) FILTER (WHERE v OPERATOR(pg_catalog.=) 7) AS first,'
        ' pg_catalog.max(objectid_internal.uuid_extract_timestamp(k)) FILTER (WHERE v OPERATOR(pg_catalog.=) 7) AS last'
        ' FROM (SELECT t.%1$I AS k, objectid_internal.uuid_extract_version(t.%1$I) AS v FROM %2$s t) s',
        key_column, objectid_internal.rekey_relation(tbl::oid)));
    total_rows := (counts ->> 'total')::bigint;
    v4_keys := (counts ->> 'v4')::bigint;
    v7_keys := (counts ->> 'v7')::bigint;
    v1_keys := (counts ->> 'v1')::bigint;
    other_keys := (counts ->> 'other')::bigint;
    null_keys := (counts ->> 'nulls')::bigint;
    v7_first := (counts ->> 'first')::timestamptz;
    v7_last := (counts ->> 'last')::timestamptz;

    SELECT s.correlation INTO key_correlation
      FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename
      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname
     WHERE c.oid = tbl AND s.attname = key_column AND NOT s.inherited;
    IF key_correlation IS NULL THEN
        notes := notes || 'key correlation not available: ANALYZE the table first'::text;
    END IF;

    SELECT c.conindid::regclass INTO key_index FROM pg_constraint c WHERE c.conrelid = tbl AND c.contype = 'p';
    key_index_size := pg_relation_size(key_index);
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) key_index::oid) OPERATOR(pg_catalog.=) 'I'::"char" THEN
        -- pgstatindex reads one btree; a partitioned index is one per partition.
        notes := notes || 'leaf density not available for a partitioned index: see its partitions'' indexes'::text;
    ELSE
    BEGIN
        key_index_leaf_density := objectid_internal.rekey_leaf_density(key_index::oid);
        IF key_index_leaf_density IS NULL THEN
            notes := notes || 'leaf density not available: the pgstattuple extension is not installed'::text;
        END IF;
    EXCEPTION WHEN insufficient_privilege THEN
        notes := notes || format('leaf density not available: %s', SQLERRM);
    END;
    END IF;

    SELECT array_agg(format('%s(%s) -> %s(%s) ON UPDATE %s ON DELETE %s%s%s, %s',
                            r.referencing_table, array_to_string(r.referencing_columns, ', '),
                            r.referenced_table, array_to_string(r.referenced_columns, ', '),
                            r.on_update, r.on_delete,
                            CASE WHEN r.is_deferrable THEN ' DEFERRABLE' ELSE '' END,
                            CASE WHEN r.validated THEN '' ELSE ' NOT VALID' END,
                            CASE WHEN r.indexed THEN 'indexed' ELSE 'NOT INDEXED' END)
                     ORDER BY r.depth, r.referencing_table::text, r.constraint_name)
      INTO foreign_keys FROM objectid_internal.rekey_references(tbl) r;
    foreign_keys := coalesce(foreign_keys, '{}');

    time_columns := objectid_internal.rekey_time_columns(tbl);
    -- For each candidate, the rows a UUIDv7 could not carry the time of: they would get the
    -- fallback time.
    IF cardinality(time_columns) > 0 THEN
        counts := objectid_internal.rekey_read_as_owner(tbl::oid, format(
            'SELECT ARRAY[%s]::pg_catalog.int8[] AS untimed FROM %s t',
            (SELECT string_agg(format('pg_catalog.count(*) FILTER (WHERE %s IS NULL)',
                                      objectid_internal.rekey_usable_time(
                                          objectid_internal.rekey_time_expression(tbl, n, current_setting('TimeZone')),
                                          'NULL')), ', ' ORDER BY o)
               FROM unnest(time_columns) WITH ORDINALITY u(n, o)),
            objectid_internal.rekey_relation(tbl::oid)));
        untimed_rows := ARRAY(SELECT e::bigint FROM jsonb_array_elements_text(counts -> 'untimed') WITH ORDINALITY x(e, o)
                               ORDER BY o);
    ELSE
        untimed_rows := '{}';
    END IF;
    materialized_views := ARRAY(SELECT v.matview FROM objectid_internal.rekey_materialized_views(tbl) v);
    IF cardinality(materialized_views) > 0 THEN
        notes := notes || format('materialized views read the key: REFRESH them after the rekey (rekey_run''s'
                                 ' refresh_materialized_views does): %s', array_to_string(materialized_views, ', '));
    END IF;
    notes := notes || ARRAY(SELECT format('%s is named like a routine of the toolkit and is not the extension''s: call the'
                                          ' toolkit schema-qualified, with every argument cast to its type (rekey_plan'
                                          ' prints the calls)', l)
                              FROM objectid_internal.rekey_lookalikes() l);
    RETURN NEXT;
END
$body$;
