-- The new key of old_key in a mapping table, read as the mapping table's owner in a
-- security-restricted operation once the caller's SELECT on its columns is checked
-- (src/rekey/as_owner.rs); NULL when it holds no such old key.
CREATE FUNCTION objectid_internal.rekey_translate_read(mapping oid, old_key uuid)
    RETURNS uuid
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_translate_read_wrapper';
