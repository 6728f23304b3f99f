-- The key: a primary key of exactly one uuid column, or a clear error.
CREATE FUNCTION objectid_internal.rekey_key_column(tbl regclass)
    RETURNS name
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key_columns name[];
    key_type regtype;
BEGIN
    SELECT array_agg(a.attname ORDER BY k.n), min(a.atttypid)::regtype
      INTO key_columns, key_type
      FROM pg_constraint c
      CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
      JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
     WHERE c.conrelid = tbl AND c.contype = 'p';
    IF key_columns IS NULL THEN
        RAISE EXCEPTION 'table % has no primary key', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'The rekey toolkit moves a primary key of one uuid column and the columns that reference it.';
    ELSIF cardinality(key_columns) > 1 AND EXISTS (SELECT FROM pg_partitioned_table pt WHERE pt.partrelid = tbl) THEN
        -- A partitioned table's primary key includes its partition key: partitioned by time, the
        -- key is (id, time), and every foreign key references both.
        RAISE EXCEPTION 'the primary key of % has % columns (%), not one: it includes the partition key',
                tbl, cardinality(key_columns), array_to_string(key_columns, ', ')
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('The rekey toolkit moves a primary key of one uuid column, so a table partitioned by another column is'
                                ' not rekeyed by it. Partition it by the key instead (UUIDv7 keys are in time order, so ranges of the'
                                ' key are ranges of time), or rewrite its keys in a maintenance window with UPDATE ... SET id ='
                                ' %s.uuidv7_at(created_at::pg_catalog.timestamptz) over each partition (created_at: its creation'
                                ' time), its foreign keys ON UPDATE CASCADE.', objectid_internal.rekey_api_schema());
    ELSIF cardinality(key_columns) > 1 THEN
        RAISE EXCEPTION 'the primary key of % has % columns (%), not one',
                tbl, cardinality(key_columns), array_to_string(key_columns, ', ')
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'The rekey toolkit moves a primary key of one uuid column and the columns that reference it.';
    ELSIF key_type <> 'uuid'::regtype THEN
        RAISE EXCEPTION 'the primary key column % of % is of type %, not uuid', key_columns[1], tbl, key_type
            USING ERRCODE = 'datatype_mismatch';
    END IF;
    RETURN key_columns[1];
END
$body$;
