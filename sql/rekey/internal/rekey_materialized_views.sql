-- The materialized views whose data a rekey makes stale: those that read a column that changes
-- (rekey_columns), directly or through views or other materialized views, with how many views
-- lie between (depth 1 reads the column itself), so that refreshing them in depth order refreshes
-- each after what it reads. Found through the dependencies of their rules on the columns.
CREATE FUNCTION objectid_internal.rekey_materialized_views(tbl regclass)
    RETURNS TABLE (matview regclass, depth integer)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
WITH RECURSIVE readers (relid, depth, path) AS (
    SELECT DISTINCT w.ev_class, 1, ARRAY[w.ev_class]
      FROM objectid_internal.rekey_columns(tbl) c
      JOIN pg_depend d ON d.refclassid OPERATOR(pg_catalog.=) 'pg_class'::regclass::oid
                      AND d.refobjid OPERATOR(pg_catalog.=) c.relid::oid
                      AND d.refobjsubid OPERATOR(pg_catalog.=) c.attnum::integer
                      AND d.classid OPERATOR(pg_catalog.=) 'pg_rewrite'::regclass::oid
      JOIN pg_rewrite w ON w.oid OPERATOR(pg_catalog.=) d.objid
     WHERE w.ev_class OPERATOR(pg_catalog.<>) c.relid::oid
    UNION ALL
    -- Whatever reads a view or materialized view that reads the columns, through any of its
    -- columns: which of them carry the key is not recorded.
    SELECT w.ev_class, r.depth OPERATOR(pg_catalog.+) 1, r.path OPERATOR(pg_catalog.||) w.ev_class
      FROM readers r
      JOIN pg_depend d ON d.refclassid OPERATOR(pg_catalog.=) 'pg_class'::regclass::oid
                      AND d.refobjid OPERATOR(pg_catalog.=) r.relid
                      AND d.classid OPERATOR(pg_catalog.=) 'pg_rewrite'::regclass::oid
      JOIN pg_rewrite w ON w.oid OPERATOR(pg_catalog.=) d.objid
     WHERE w.ev_class OPERATOR(pg_catalog.<>) r.relid AND NOT w.ev_class OPERATOR(pg_catalog.=) ANY (r.path)
)
SELECT r.relid::regclass, max(r.depth)
  FROM readers r JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid
 WHERE c.relkind OPERATOR(pg_catalog.=) 'm'::"char"
 GROUP BY r.relid
 ORDER BY max(r.depth), r.relid::regclass::text
$body$;
