-- The UUID functions the batch's statements call, the same C functions as @extschema@'s, here so
-- that no one can put another function in their place.
CREATE FUNCTION objectid_internal.uuid_extract_version(uuid)
    RETURNS int2
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'uuid_extract_version_wrapper';
