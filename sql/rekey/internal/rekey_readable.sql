-- Whether the toolkit may read a table that changes with tbl's key, as that table's own owner: the
-- caller may act as that owner, every partition below it is that owner's too (another role's
-- policies, casts, index and statistics expressions would run as the reader), and its columns
-- that change are all uuid.
CREATE FUNCTION objectid_internal.rekey_readable(tbl regclass, relid oid)
    RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT pg_has_role(o.relowner, 'USAGE')
   AND NOT EXISTS (SELECT FROM pg_partition_tree(relid) t JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid
                    WHERE c.relowner OPERATOR(pg_catalog.<>) o.relowner)
   AND NOT EXISTS (SELECT FROM objectid_internal.rekey_columns(tbl) x
                    WHERE x.relid OPERATOR(pg_catalog.=) rekey_readable.relid AND x.atttype <> 'uuid'::regtype)
  FROM pg_class o
 WHERE o.oid OPERATOR(pg_catalog.=) relid
$body$;
