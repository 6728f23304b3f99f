-- One batch's statements (rekey_batch_statements), each run as the owner of the tables it
-- changes (relid's, or for other_queries the table's at the same place in other_tables) in a
-- security-restricted operation (src/rekey/rekey_batch_as_owner.rs, on as_owner.rs).
CREATE FUNCTION objectid_internal.rekey_batch_as_owner(relid oid, window_query text, map_query text,
                                                      rewrite_query text, other_tables oid[],
                                                      other_queries text[], after uuid,
                                                      batch_size integer, fallback_time timestamptz,
                                                      batch bigint)
    RETURNS TABLE (window_end uuid, keys uuid[], changed bigint[])
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_batch_as_owner_wrapper';
