-- rekey_assess for every table of a schema (partitioned ones as one, not their partitions) whose
-- primary key is one uuid column and whose owner's privileges the caller has.
CREATE FUNCTION @extschema@.rekey_assess_schema(schema_name regnamespace)
    RETURNS TABLE (table_name regclass, key_column name, total_rows bigint, v4_keys bigint,
                   v7_keys bigint, v1_keys bigint, other_keys bigint, null_keys bigint,
                   v7_first timestamptz, v7_last timestamptz, key_correlation real,
                   key_index regclass, key_index_size bigint, key_index_leaf_density float8,
                   foreign_keys text[], time_columns name[], untimed_rows bigint[],
                   materialized_views regclass[], notes text[])
    LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT a.*
  FROM pg_class c
  JOIN pg_constraint k ON k.conrelid = c.oid AND k.contype = 'p' AND cardinality(k.conkey) = 1
  JOIN pg_attribute ka ON ka.attrelid = c.oid AND ka.attnum = k.conkey[1] AND ka.atttypid = 'uuid'::regtype
  CROSS JOIN LATERAL objectid_internal.rekey_assess(c.oid::regclass) a
 WHERE c.relnamespace OPERATOR(pg_catalog.=) schema_name::oid AND c.relkind IN ('r', 'p') AND NOT c.relispartition
   AND pg_has_role(c.relowner, 'USAGE')
 ORDER BY c.relname
$body$;
