-- The documented rekey_assess and rekey_references: the internal ones, which the toolkit's
-- other functions call (never a function of @extschema@, whose owner may rename it).
CREATE FUNCTION @extschema@.rekey_assess(tbl regclass)
    RETURNS TABLE (table_name regclass, key_column name, total_rows bigint, v4_keys bigint,
                   v7_keys bigint, v1_keys bigint, other_keys bigint, null_keys bigint,
                   v7_first timestamptz, v7_last timestamptz, key_correlation real,
                   key_index regclass, key_index_size bigint, key_index_leaf_density float8,
                   foreign_keys text[], time_columns name[], untimed_rows bigint[],
                   materialized_views regclass[], notes text[])
    LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT * FROM objectid_internal.rekey_assess(tbl)
$body$;
