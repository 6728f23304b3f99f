-- The default hash operator class: the 32-bit hash (hash joins, hash aggregation, hash indexes)
-- and the seeded 64-bit hash (PARTITION BY HASH).

CREATE FUNCTION @extschema@.objectid_hash(@extschema@.objectid)
    RETURNS int4
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_hash_wrapper';

CREATE FUNCTION @extschema@.objectid_hash_extended(@extschema@.objectid, int8)
    RETURNS int8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_hash_extended_wrapper';

CREATE OPERATOR CLASS @extschema@.objectid_ops
    DEFAULT FOR TYPE @extschema@.objectid USING hash AS
        OPERATOR 1 @extschema@.=,
        FUNCTION 1 @extschema@.objectid_hash(@extschema@.objectid),
        FUNCTION 2 @extschema@.objectid_hash_extended(@extschema@.objectid, int8);
