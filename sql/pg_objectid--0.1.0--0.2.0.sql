-- pg_objectid 0.1.0 -> 0.2.0.
--
-- The planner now rewrites objectid_timestamp(id) <op> t into an exact condition on id, with the
-- four exact bounds below, instead of adding index paths of its own (see src/planner/). Its
-- support function for uuid_extract_timestamp loads the library while the first query of a
-- session is planned, as objectid_timestamp's already did.
\echo Use "ALTER EXTENSION pg_objectid UPDATE TO '0.2.0'" to load this file. \quit

CREATE FUNCTION @extschema@.objectid_first_at_or_after(timestamptz)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_first_at_or_after_wrapper';

CREATE FUNCTION @extschema@.objectid_first_after(timestamptz)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_first_after_wrapper';

CREATE FUNCTION @extschema@.objectid_last_at_or_before(timestamptz)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_last_at_or_before_wrapper';

CREATE FUNCTION @extschema@.objectid_last_before(timestamptz)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_last_before_wrapper';

CREATE FUNCTION @extschema@.uuid_extract_timestamp_support(internal)
    RETURNS internal
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'uuid_extract_timestamp_support_wrapper';

ALTER FUNCTION @extschema@.uuid_extract_timestamp(uuid)
    SUPPORT @extschema@.uuid_extract_timestamp_support;
