-- pgstattuple's leaf density of an index, called by OID (src/rekey/leaf_density.rs).
CREATE FUNCTION objectid_internal.rekey_leaf_density(index oid)
    RETURNS float8
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_leaf_density_wrapper';
