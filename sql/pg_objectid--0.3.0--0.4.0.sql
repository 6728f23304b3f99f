-- pg_objectid 0.3.0 -> 0.4.0: gen_objectid_subsecond(), ids whose bytes after the seconds carry
-- the fraction of the second, for tables written by several servers at once (issue 12).
\echo Use "ALTER EXTENSION pg_objectid UPDATE TO '0.4.0'" to load this file. \quit

CREATE FUNCTION @extschema@.gen_objectid_subsecond()
    RETURNS @extschema@.objectid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'gen_objectid_subsecond_wrapper';
