-- PostgreSQL 18's UUID functions, for every version, over the built-in uuid type. On 18 the
-- built-in uuidv7, uuidv4, uuid_extract_timestamp and uuid_extract_version (on 17 the two
-- extract functions) are found first by unqualified calls, because pg_catalog comes first in
-- the search path; these stay reachable qualified, so that a column default or view written as
-- public.uuidv7() on an older server still works after a dump and restore into 18.

CREATE FUNCTION @extschema@.uuidv7()
    RETURNS uuid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'uuidv7_wrapper';

CREATE FUNCTION @extschema@.uuidv7(shift interval)
    RETURNS uuid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'uuidv7_interval_wrapper';

CREATE FUNCTION @extschema@.uuidv4()
    RETURNS uuid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'uuidv4_wrapper';

-- Called by the planner while it simplifies a query using uuid_extract_timestamp; being called
-- loads the library, whose planner hook then rewrites time conditions (src/planner/).
CREATE FUNCTION @extschema@.uuid_extract_timestamp_support(internal)
    RETURNS internal
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'uuid_extract_timestamp_support_wrapper';

CREATE FUNCTION @extschema@.uuid_extract_timestamp(uuid)
    RETURNS timestamptz
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    SUPPORT @extschema@.uuid_extract_timestamp_support
    AS 'MODULE_PATHNAME', 'uuid_extract_timestamp_wrapper';

CREATE FUNCTION @extschema@.uuid_extract_version(uuid)
    RETURNS int2
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'uuid_extract_version_wrapper';

-- Not LEAKPROOF: a time a v7 cannot carry raises an error that names the range.
CREATE FUNCTION @extschema@.uuidv7_from_time(timestamptz)
    RETURNS uuid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'uuidv7_from_time_wrapper';

CREATE FUNCTION @extschema@.uuidv7_at(timestamptz)
    RETURNS uuid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'uuidv7_at_wrapper';

-- Index bounds the planner adds to uuid_extract_timestamp(id) <op> t on a column that holds
-- only version-7 UUIDs (see src/planner/). They never fail: out-of-range times clamp.
CREATE FUNCTION @extschema@.uuidv7_lower_bound(timestamptz)
    RETURNS uuid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'uuidv7_lower_bound_wrapper';

CREATE FUNCTION @extschema@.uuidv7_upper_bound(timestamptz)
    RETURNS uuid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'uuidv7_upper_bound_wrapper';

CREATE FUNCTION @extschema@.uuidv7_upper_bound_before(timestamptz)
    RETURNS uuid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'uuidv7_upper_bound_before_wrapper';
