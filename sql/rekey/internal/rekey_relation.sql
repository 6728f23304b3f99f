-- How the statements here name a table they read or write: `ONLY schema.table` for a plain table,
-- so that no inheritance child is touched, and `schema.table` for a partitioned table, whose rows
-- are all in its partitions (an UPDATE routes each row to the partition that holds it). NULL when
-- there is no such relation.
CREATE FUNCTION objectid_internal.rekey_relation(relid oid)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'p'::"char" THEN '' ELSE 'ONLY ' END
       OPERATOR(pg_catalog.||) format('%I.%I', n.nspname, c.relname)
  FROM pg_class c JOIN pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
 WHERE c.oid OPERATOR(pg_catalog.=) relid
$body$;
