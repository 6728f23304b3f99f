-- min() and max(). SORTOP lets the planner answer them from a btree index; the combine function
-- lets parallel workers each aggregate a part.

CREATE FUNCTION @extschema@.objectid_smaller(@extschema@.objectid, @extschema@.objectid)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_smaller_wrapper';

CREATE FUNCTION @extschema@.objectid_larger(@extschema@.objectid, @extschema@.objectid)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_larger_wrapper';

CREATE AGGREGATE @extschema@.min(@extschema@.objectid) (
    SFUNC = @extschema@.objectid_smaller,
    STYPE = @extschema@.objectid,
    COMBINEFUNC = @extschema@.objectid_smaller,
    SORTOP = OPERATOR(@extschema@.<),
    PARALLEL = SAFE
);

CREATE AGGREGATE @extschema@.max(@extschema@.objectid) (
    SFUNC = @extschema@.objectid_larger,
    STYPE = @extschema@.objectid,
    COMBINEFUNC = @extschema@.objectid_larger,
    SORTOP = OPERATOR(@extschema@.>),
    PARALLEL = SAFE
);
