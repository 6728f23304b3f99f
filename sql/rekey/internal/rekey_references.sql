-- Every foreign key that must follow the key, recursively: those whose referenced columns include
-- one of rekey_columns(tbl).
CREATE FUNCTION objectid_internal.rekey_references(tbl regclass)
    RETURNS TABLE (depth integer, constraint_name name, referencing_table regclass,
                   referencing_columns name[], referenced_table regclass, referenced_columns name[],
                   rekeyed_columns name[], column_types regtype[], on_update text, on_delete text,
                   is_deferrable boolean, initially_deferred boolean, validated boolean, indexed boolean,
                   constraint_id oid)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
WITH cols AS (SELECT * FROM objectid_internal.rekey_columns(tbl))
SELECT (SELECT min(p.depth) + 1 FROM cols p
         WHERE p.relid = c.confrelid AND p.attnum = ANY (c.confkey)),
       c.conname, c.conrelid::regclass,
       (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(c.conkey) WITH ORDINALITY k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum),
       c.confrelid::regclass,
       (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(c.confkey) WITH ORDINALITY k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum),
       rk.names, rk.types,
       CASE c.confupdtype WHEN 'a' THEN 'NO ACTION' WHEN 'r' THEN 'RESTRICT' WHEN 'c' THEN 'CASCADE'
                          WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' END,
       CASE c.confdeltype WHEN 'a' THEN 'NO ACTION' WHEN 'r' THEN 'RESTRICT' WHEN 'c' THEN 'CASCADE'
                          WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' END,
       c.condeferrable, c.condeferred, c.convalidated,
       rk.indexed, c.oid
  FROM pg_constraint c
  CROSS JOIN LATERAL (
      SELECT array_agg(x.attname ORDER BY x.attnum) AS names,
             array_agg(x.atttype ORDER BY x.attnum) AS types,
             bool_and(objectid_internal.rekey_column_indexed(x.relid, x.attnum)) AS indexed
        FROM cols x WHERE x.relid = c.conrelid AND x.attnum = ANY (c.conkey)) rk
 WHERE c.contype = 'f' AND c.conparentid = 0
   AND EXISTS (SELECT FROM cols p WHERE p.relid = c.confrelid AND p.attnum = ANY (c.confkey))
 ORDER BY 1, c.conrelid::regclass::text, c.conname
$body$;
