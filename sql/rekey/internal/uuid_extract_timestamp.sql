CREATE FUNCTION objectid_internal.uuid_extract_timestamp(uuid)
    RETURNS timestamptz
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'uuid_extract_timestamp_wrapper';
