-- BRIN minmax-multi (several ranges per block range, merged by distance; for tables where some
-- rows arrive out of order) and bloom (equality only). Both exist from PostgreSQL 14 on.

CREATE FUNCTION @extschema@.objectid_minmax_multi_distance(internal, internal)
    RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_minmax_multi_distance_wrapper';

CREATE OPERATOR CLASS @extschema@.objectid_minmax_multi_ops
    FOR TYPE @extschema@.objectid USING brin AS
        OPERATOR 1 @extschema@.<,
        OPERATOR 2 @extschema@.<=,
        OPERATOR 3 @extschema@.=,
        OPERATOR 4 @extschema@.>=,
        OPERATOR 5 @extschema@.>,
        FUNCTION 1 brin_minmax_multi_opcinfo(internal),
        FUNCTION 2 brin_minmax_multi_add_value(internal, internal, internal, internal),
        FUNCTION 3 brin_minmax_multi_consistent(internal, internal, internal, int4),
        FUNCTION 4 brin_minmax_multi_union(internal, internal, internal),
        FUNCTION 5 brin_minmax_multi_options(internal),
        FUNCTION 11 @extschema@.objectid_minmax_multi_distance(internal, internal);

CREATE OPERATOR CLASS @extschema@.objectid_bloom_ops
    FOR TYPE @extschema@.objectid USING brin AS
        OPERATOR 1 @extschema@.=,
        FUNCTION 1 brin_bloom_opcinfo(internal),
        FUNCTION 2 brin_bloom_add_value(internal, internal, internal, internal),
        FUNCTION 3 brin_bloom_consistent(internal, internal, internal, int4),
        FUNCTION 4 brin_bloom_union(internal, internal, internal),
        FUNCTION 5 brin_bloom_options(internal),
        FUNCTION 11 @extschema@.objectid_hash(@extschema@.objectid);
