-- Creation time. objectid_timestamp reads the leading 4 bytes as unsigned Unix seconds;
-- objectid_from_time makes the smallest id of a second, for half-open range bounds.
-- The two *_bound functions never fail (out-of-range times clamp to the smallest or largest id):
-- the planner puts them into index conditions it derives from objectid_timestamp(id) <op> t.

-- Called by the planner while it simplifies a query using objectid_timestamp; see src/planner.rs
-- for how conditions on objectid_timestamp(id) reach a btree index on id.
CREATE FUNCTION @extschema@.objectid_timestamp_support(internal)
    RETURNS internal
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_timestamp_support_wrapper';

CREATE FUNCTION @extschema@.objectid_timestamp(@extschema@.objectid)
    RETURNS timestamptz
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    SUPPORT @extschema@.objectid_timestamp_support
    AS 'MODULE_PATHNAME', 'objectid_timestamp_wrapper';

-- Not LEAKPROOF: a time outside 1970..2106 raises an error that shows it.
CREATE FUNCTION @extschema@.objectid_from_time(timestamptz)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_from_time_wrapper';

CREATE FUNCTION @extschema@.objectid_lower_bound(timestamptz)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_lower_bound_wrapper';

CREATE FUNCTION @extschema@.objectid_upper_bound(timestamptz)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_upper_bound_wrapper';

-- The last id of a time before the argument: the bound for "objectid_timestamp(id) < t".
CREATE FUNCTION @extschema@.objectid_upper_bound_before(timestamptz)
    RETURNS @extschema@.objectid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_upper_bound_before_wrapper';
