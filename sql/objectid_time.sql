-- Creation time. objectid_timestamp reads the leading 4 bytes as unsigned Unix seconds;
-- objectid_from_time makes the smallest id of a second, for half-open range bounds.
-- The *_bound functions never fail (out-of-range times clamp to the smallest or largest id), for
-- hand-written ranges. The four exact bounds at the end are what the planner replaces
-- objectid_timestamp(id) <op> t with.

-- Called by the planner while it simplifies a query using objectid_timestamp; being called loads
-- the library, whose planner hook then rewrites time conditions (src/planner/).
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

-- Exact bounds: objectid_timestamp(id) >= t holds for exactly the ids >= objectid_first_at_or_after(t),
-- > t for the ids >= objectid_first_after(t), <= t for the ids <= objectid_last_at_or_before(t),
-- < t for the ids <= objectid_last_before(t). NULL where no id can satisfy the condition (a time
-- after 2106-02-07 06:28:15 for the first two, before 1970 for the last two), so that the
-- comparison is never true there either. Never an error.
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
