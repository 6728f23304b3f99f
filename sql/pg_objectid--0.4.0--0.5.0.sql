-- pg_objectid 0.4.0 -> 0.5.0: explicit casts between objectid and jsonb in MongoDB Extended JSON,
-- {"$oid": "..."}, for data exported from MongoDB (issue 13).
\echo Use "ALTER EXTENSION pg_objectid UPDATE TO '0.5.0'" to load this file. \quit

-- LEAKPROOF: it cannot fail on any objectid, so its errors reveal nothing.
CREATE FUNCTION @extschema@.jsonb(@extschema@.objectid)
    RETURNS jsonb
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'jsonb_wrapper';

-- Accepts {"$oid": "..."} (and no other key) or a bare string of 24 hex digits; JSON null gives
-- NULL, as PostgreSQL 18's jsonb casts do. Not LEAKPROOF: bad input raises an error quoting it.
-- Not named objectid(jsonb), after its target type as cast functions usually are: beside
-- objectid(bytea) that would make objectid($1) with an untyped parameter ambiguous, which works
-- with 0.4.0 (one candidate) and so would break after ALTER EXTENSION UPDATE.
CREATE FUNCTION @extschema@.objectid_from_jsonb(jsonb)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_from_jsonb_wrapper';

CREATE CAST (@extschema@.objectid AS jsonb)
    WITH FUNCTION @extschema@.jsonb(@extschema@.objectid);

CREATE CAST (jsonb AS @extschema@.objectid)
    WITH FUNCTION @extschema@.objectid_from_jsonb(jsonb);
