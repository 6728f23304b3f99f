-- Explicit casts between objectid and jsonb in MongoDB Extended JSON, {"$oid": "<24 hex digits>"},
-- the form mongoexport and the drivers' JSON codecs write (canonical and relaxed mode alike).
-- No cast to json is declared: to_json() and to_jsonb() look for one, and without it they keep
-- writing an objectid as its plain 24-hex string.

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
