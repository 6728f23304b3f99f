-- Whether the toolkit may read a table that changes with tbl's key: one of tbl's owner (another
-- role's policies or casts would run as the reader), whose columns that change are all uuid.
CREATE FUNCTION objectid_internal.rekey_readable(tbl regclass, relid oid)
    RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT (SELECT c.relowner FROM pg_class c WHERE c.oid = relid) OPERATOR(pg_catalog.=)
       (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl)
   AND NOT EXISTS (SELECT FROM objectid_internal.rekey_columns(tbl) x
                    WHERE x.relid OPERATOR(pg_catalog.=) rekey_readable.relid AND x.atttype <> 'uuid'::regtype)
$body$;
