-- Columns that could supply creation times: time columns, the usual names first, then NOT NULL.
CREATE FUNCTION objectid_internal.rekey_time_columns(tbl regclass)
    RETURNS name[]
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT coalesce(array_agg(a.attname ORDER BY
           a.attname NOT IN ('created_at', 'created', 'creation_time', 'created_on', 'inserted_at',
                             'create_time', 'createdat', 'date_created', 'insert_time'),
           a.attname !~* '(creat|insert)', NOT a.attnotnull, a.attnum), '{}')
  FROM pg_attribute a
 WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped
   AND a.atttypid IN ('timestamptz'::regtype, 'timestamp'::regtype, 'date'::regtype)
$body$;
