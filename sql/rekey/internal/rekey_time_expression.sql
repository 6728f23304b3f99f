-- A SQL expression, over the table aliased t, for the creation time in a time column as a
-- timestamptz; NULL when the column does not exist or is of no time type.
CREATE FUNCTION objectid_internal.rekey_time_expression(tbl regclass, time_column name, time_zone text)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT CASE a.atttypid
         WHEN 'timestamptz'::regtype THEN format('t.%I', a.attname)
         WHEN 'timestamp'::regtype THEN format('pg_catalog.timezone(%L::pg_catalog.text, t.%I)', time_zone, a.attname)
         WHEN 'date'::regtype
         THEN format('pg_catalog.timezone(%L::pg_catalog.text, t.%I::pg_catalog.timestamp)', time_zone, a.attname)
       END
  FROM pg_attribute a
 WHERE a.attrelid = tbl AND a.attname = time_column AND a.attnum > 0 AND NOT a.attisdropped
$body$;
