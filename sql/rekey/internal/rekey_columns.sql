-- Every column that holds values of the key: the key, every column that references it, and every
-- column that references one of those (a child's key used by a grandchild), with the number of
-- foreign keys between it and the key. These change together in each batch.
CREATE FUNCTION objectid_internal.rekey_columns(tbl regclass)
    RETURNS SETOF objectid_internal.rekey_column
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
WITH RECURSIVE reach (relid, attnum, depth, path) AS (
    SELECT tbl::oid, a.attnum, 0, ARRAY[tbl::oid::text || ':' || a.attnum]
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = objectid_internal.rekey_key_column(tbl)
    UNION ALL
    SELECT c.conrelid, c.conkey[i], r.depth + 1, r.path || (c.conrelid::text || ':' || c.conkey[i])
      FROM reach r
      -- A partitioned table's foreign key only, not its partitions' clones of it: the rewrite
      -- updates the partitioned table, which routes each row to its partition.
      JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = r.relid AND c.conparentid = 0
      CROSS JOIN LATERAL generate_subscripts(c.confkey, 1) AS i
     WHERE c.confkey[i] = r.attnum
       AND NOT (c.conrelid::text || ':' || c.conkey[i]) = ANY (r.path)
)
SELECT r.relid::regclass, r.attnum, a.attname, a.atttypid::regtype, min(r.depth)
  FROM reach r
  JOIN pg_attribute a ON a.attrelid = r.relid AND a.attnum = r.attnum
 GROUP BY r.relid, r.attnum, a.attname, a.atttypid
 ORDER BY min(r.depth), r.relid::regclass::text, r.attnum
$body$;
