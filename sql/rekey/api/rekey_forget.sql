-- Forgets the rekey of tbl (its rekey_state row), for starting over or once it is verified. The
-- mapping table stays, for rekey_translate's callers to query directly, until its owner drops it.
CREATE FUNCTION @extschema@.rekey_forget(tbl regclass)
    RETURNS text
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    mapping oid;
BEGIN
    IF objectid_internal.rekey_runner(tbl, false) IS NOT NULL THEN
        RAISE EXCEPTION 'a session is rekeying % now', tbl USING ERRCODE = 'object_in_use';
    END IF;
    DELETE FROM objectid_internal.rekey_state s WHERE s.relid = tbl RETURNING s.mapping_table INTO mapping;
    IF mapping IS NULL THEN
        RAISE EXCEPTION 'no rekey of % is recorded', tbl USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN format('forgot the rekey of %s; the mapping table %s stays until you drop it', tbl,
                  coalesce(mapping::regclass::text, '(gone)'));
END
$body$;
