-- Whether the toolkit may read a table that changes with tbl's key: one of tbl's owner, with
-- every partition below it too (another role's policies, casts, index and statistics expressions
-- would run as the reader, tbl's owner), whose columns that change are all uuid.
CREATE FUNCTION objectid_internal.rekey_readable(tbl regclass, relid oid)
    RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT (SELECT c.relowner FROM pg_class c WHERE c.oid = relid) OPERATOR(pg_catalog.=)
       (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl)
   AND NOT EXISTS (SELECT FROM pg_partition_tree(relid) t JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid
                    WHERE c.relowner OPERATOR(pg_catalog.<>) (SELECT k.relowner FROM pg_class k WHERE k.oid = tbl))
   AND NOT EXISTS (SELECT FROM objectid_internal.rekey_columns(tbl) x
                    WHERE x.relid OPERATOR(pg_catalog.=) rekey_readable.relid AND x.atttype <> 'uuid'::regtype)
$body$;
