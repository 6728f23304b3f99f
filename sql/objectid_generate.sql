-- Generation (src/kernel/generator.rs). gen_objectid() stamps the current second, then the generator's
-- random value and counter; gen_objectid_subsecond() the current second and its fraction, then
-- the random value, for tables written by several servers at once; gen_objectid_at() a given
-- second, for backfilling keys of existing rows, from a separate 64-bit backfill counter. One
-- generator never yields the same id twice from any of the three. objectid_generator_mode() says
-- whether this session shares the server's generator ('server') or has its own ('backend').

CREATE FUNCTION @extschema@.gen_objectid()
    RETURNS @extschema@.objectid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'gen_objectid_wrapper';

CREATE FUNCTION @extschema@.gen_objectid_subsecond()
    RETURNS @extschema@.objectid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'gen_objectid_subsecond_wrapper';

CREATE FUNCTION @extschema@.gen_objectid_at(timestamptz)
    RETURNS @extschema@.objectid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'gen_objectid_at_wrapper';

CREATE FUNCTION @extschema@.objectid_generator_mode()
    RETURNS text
    LANGUAGE C STABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_generator_mode_wrapper';
