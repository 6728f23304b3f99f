CREATE FUNCTION objectid_internal.uuidv7_at(timestamptz)
    RETURNS uuid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'uuidv7_at_wrapper';
