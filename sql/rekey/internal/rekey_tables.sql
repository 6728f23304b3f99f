-- Every table a rewrite of the columns (rekey_columns of the key's table) touches: each table
-- that changes and, for a partitioned one, every partition below it, where its rows are and whose
-- own triggers, rules, constraints and owner matter as much as the root's. root is the table of
-- the column.
CREATE FUNCTION objectid_internal.rekey_tables(columns objectid_internal.rekey_column[])
    RETURNS TABLE (relid regclass, root regclass)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT DISTINCT x.relid, x.root
  FROM (SELECT DISTINCT c.relid FROM unnest(columns) c) r
  CROSS JOIN LATERAL (SELECT r.relid AS relid, r.relid AS root
                      UNION
                      SELECT p.relid, r.relid FROM pg_partition_tree(r.relid) p) x
 ORDER BY 2, 1
$body$;
