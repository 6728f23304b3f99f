-- The default BRIN operator class: minmax over PostgreSQL's own minmax support functions. Since
-- objectids ascend with insertion time, block ranges hold narrow id ranges.

CREATE OPERATOR CLASS @extschema@.objectid_minmax_ops
    DEFAULT FOR TYPE @extschema@.objectid USING brin AS
        OPERATOR 1 @extschema@.<,
        OPERATOR 2 @extschema@.<=,
        OPERATOR 3 @extschema@.=,
        OPERATOR 4 @extschema@.>=,
        OPERATOR 5 @extschema@.>,
        FUNCTION 1 brin_minmax_opcinfo(internal),
        FUNCTION 2 brin_minmax_add_value(internal, internal, internal, internal),
        FUNCTION 3 brin_minmax_consistent(internal, internal, internal),
        FUNCTION 4 brin_minmax_union(internal, internal, internal);
