-- The objectid base type: 12 bytes, no header, byte-aligned, never compressed or moved out of line.
-- First in the install script, so that the guard below stops psql before any statement.
\echo Use "CREATE EXTENSION pg_objectid" to load this file. \quit

CREATE TYPE @extschema@.objectid;

CREATE FUNCTION @extschema@.objectid_in(cstring)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_in_wrapper';

CREATE FUNCTION @extschema@.objectid_out(@extschema@.objectid)
    RETURNS cstring
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_out_wrapper';

CREATE FUNCTION @extschema@.objectid_recv(internal)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_recv_wrapper';

CREATE FUNCTION @extschema@.objectid_send(@extschema@.objectid)
    RETURNS bytea
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_send_wrapper';

CREATE TYPE @extschema@.objectid (
    INPUT = @extschema@.objectid_in,
    OUTPUT = @extschema@.objectid_out,
    RECEIVE = @extschema@.objectid_recv,
    SEND = @extschema@.objectid_send,
    INTERNALLENGTH = 12,
    ALIGNMENT = char,
    STORAGE = plain,
    CATEGORY = 'U'
);

COMMENT ON TYPE @extschema@.objectid IS
    'MongoDB ObjectId: 4-byte Unix seconds, 5-byte random value, 3-byte counter';
