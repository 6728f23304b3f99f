-- One batch's statements (rekey_batch_statements), run as the owner of relid in a
-- security-restricted operation (src/rekey/as_owner.rs).
CREATE FUNCTION objectid_internal.rekey_batch_as_owner(relid oid, window_query text, map_query text,
                                                      rewrite_query text, after uuid,
                                                      batch_size integer, fallback_time timestamptz,
                                                      batch bigint)
    RETURNS TABLE (window_end uuid, keys uuid[], changed bigint[])
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_batch_as_owner_wrapper';
