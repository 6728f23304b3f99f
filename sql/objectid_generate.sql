-- Generation. gen_objectid() stamps the current second; gen_objectid_at() a given one, for
-- backfilling keys of existing rows. Both take the next value of the same counter, so their ids
-- are unique together. objectid_generator_mode() says whether this session shares the server's
-- generator ('server') or has its own ('backend').

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
