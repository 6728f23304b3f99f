-- Comparison functions and the six comparison operators. Order is byte order, which is creation
-- order as far as the leading timestamp goes. None of these can fail, hence LEAKPROOF.

CREATE FUNCTION @extschema@.objectid_eq(@extschema@.objectid, @extschema@.objectid)
    RETURNS bool
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_eq_wrapper';

CREATE FUNCTION @extschema@.objectid_ne(@extschema@.objectid, @extschema@.objectid)
    RETURNS bool
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_ne_wrapper';

CREATE FUNCTION @extschema@.objectid_lt(@extschema@.objectid, @extschema@.objectid)
    RETURNS bool
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_lt_wrapper';

CREATE FUNCTION @extschema@.objectid_le(@extschema@.objectid, @extschema@.objectid)
    RETURNS bool
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_le_wrapper';

CREATE FUNCTION @extschema@.objectid_gt(@extschema@.objectid, @extschema@.objectid)
    RETURNS bool
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_gt_wrapper';

CREATE FUNCTION @extschema@.objectid_ge(@extschema@.objectid, @extschema@.objectid)
    RETURNS bool
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_ge_wrapper';

CREATE FUNCTION @extschema@.objectid_cmp(@extschema@.objectid, @extschema@.objectid)
    RETURNS int4
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'objectid_cmp_wrapper';

CREATE OPERATOR @extschema@.= (
    LEFTARG = @extschema@.objectid,
    RIGHTARG = @extschema@.objectid,
    FUNCTION = @extschema@.objectid_eq,
    COMMUTATOR = OPERATOR(@extschema@.=),
    NEGATOR = OPERATOR(@extschema@.<>),
    RESTRICT = eqsel,
    JOIN = eqjoinsel,
    HASHES,
    MERGES
);

CREATE OPERATOR @extschema@.<> (
    LEFTARG = @extschema@.objectid,
    RIGHTARG = @extschema@.objectid,
    FUNCTION = @extschema@.objectid_ne,
    COMMUTATOR = OPERATOR(@extschema@.<>),
    NEGATOR = OPERATOR(@extschema@.=),
    RESTRICT = neqsel,
    JOIN = neqjoinsel
);

CREATE OPERATOR @extschema@.< (
    LEFTARG = @extschema@.objectid,
    RIGHTARG = @extschema@.objectid,
    FUNCTION = @extschema@.objectid_lt,
    COMMUTATOR = OPERATOR(@extschema@.>),
    NEGATOR = OPERATOR(@extschema@.>=),
    RESTRICT = scalarltsel,
    JOIN = scalarltjoinsel
);

CREATE OPERATOR @extschema@.<= (
    LEFTARG = @extschema@.objectid,
    RIGHTARG = @extschema@.objectid,
    FUNCTION = @extschema@.objectid_le,
    COMMUTATOR = OPERATOR(@extschema@.>=),
    NEGATOR = OPERATOR(@extschema@.>),
    RESTRICT = scalarlesel,
    JOIN = scalarlejoinsel
);

CREATE OPERATOR @extschema@.> (
    LEFTARG = @extschema@.objectid,
    RIGHTARG = @extschema@.objectid,
    FUNCTION = @extschema@.objectid_gt,
    COMMUTATOR = OPERATOR(@extschema@.<),
    NEGATOR = OPERATOR(@extschema@.<=),
    RESTRICT = scalargtsel,
    JOIN = scalargtjoinsel
);

CREATE OPERATOR @extschema@.>= (
    LEFTARG = @extschema@.objectid,
    RIGHTARG = @extschema@.objectid,
    FUNCTION = @extschema@.objectid_ge,
    COMMUTATOR = OPERATOR(@extschema@.<=),
    NEGATOR = OPERATOR(@extschema@.<),
    RESTRICT = scalargesel,
    JOIN = scalargejoinsel
);
