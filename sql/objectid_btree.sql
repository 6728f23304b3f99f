-- The default btree operator class: comparison, sort support (a direct comparator for sorts and
-- index builds) and btequalimage (equal values are bytewise identical, so deduplication is safe).

CREATE FUNCTION @extschema@.objectid_sortsupport(internal)
    RETURNS void
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'objectid_sortsupport_wrapper';

CREATE OPERATOR CLASS @extschema@.objectid_ops
    DEFAULT FOR TYPE @extschema@.objectid USING btree AS
        OPERATOR 1 @extschema@.<,
        OPERATOR 2 @extschema@.<=,
        OPERATOR 3 @extschema@.=,
        OPERATOR 4 @extschema@.>=,
        OPERATOR 5 @extschema@.>,
        FUNCTION 1 @extschema@.objectid_cmp(@extschema@.objectid, @extschema@.objectid),
        FUNCTION 2 @extschema@.objectid_sortsupport(internal),
        FUNCTION 4 btequalimage(oid);
