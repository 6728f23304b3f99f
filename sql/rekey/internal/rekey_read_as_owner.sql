-- A query returning one row, run as the owner of relid in a security-restricted operation; the
-- row as jsonb (src/rekey/as_owner.rs).
CREATE FUNCTION objectid_internal.rekey_read_as_owner(relid oid, query text)
    RETURNS jsonb
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_read_as_owner_wrapper';
