-- Explicit casts to and from bytea: the 12 raw bytes (BSON's ObjectId payload). Casts to and from
-- text need no declaration: PostgreSQL converts through objectid_out / objectid_in.

CREATE FUNCTION @extschema@.bytea(@extschema@.objectid)
    RETURNS bytea
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'bytea_wrapper';

-- Not LEAKPROOF: a bytea of the wrong length raises an error that shows the value.
CREATE FUNCTION @extschema@.objectid(bytea)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_wrapper';

CREATE CAST (@extschema@.objectid AS bytea)
    WITH FUNCTION @extschema@.bytea(@extschema@.objectid);

CREATE CAST (bytea AS @extschema@.objectid)
    WITH FUNCTION @extschema@.objectid(bytea);
