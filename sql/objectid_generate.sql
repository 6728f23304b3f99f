-- Generation. gen_objectid() stamps the current second; gen_objectid_at() a given one, for
-- backfilling keys of existing rows, from a separate 64-bit backfill counter of the same generator
-- that never yields a gen_objectid() id (src/core/generator.rs). objectid_generator_mode() says
-- whether this session shares the server's generator ('server') or has its own ('backend').

CREATE FUNCTION @extschema@.gen_objectid()
    RETURNS @extschema@.objectid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'gen_objectid_wrapper';

CREATE FUNCTION @extschema@.gen_objectid_at(timestamptz)
    RETURNS @extschema@.objectid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'gen_objectid_at_wrapper';

CREATE FUNCTION @extschema@.objectid_generator_mode()
    RETURNS text
    LANGUAGE C STABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_generator_mode_wrapper';
