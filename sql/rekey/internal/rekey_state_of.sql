-- The recorded rekey of tbl, or NULL when there is none; an error when the record cannot be
-- trusted any more: its table was dropped and another made with the same OID, or its mapping
-- table no longer qualifies (rekey_mapping_problem).
CREATE FUNCTION objectid_internal.rekey_state_of(tbl regclass)
    RETURNS objectid_internal.rekey_state
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    st objectid_internal.rekey_state;
    problem text;
BEGIN
    SELECT * INTO st FROM objectid_internal.rekey_state s WHERE s.relid = tbl;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF st.key_constraint IS DISTINCT FROM (SELECT c.oid FROM pg_constraint c WHERE c.conrelid = tbl AND c.contype = 'p') THEN
        RAISE EXCEPTION 'the recorded rekey of % was of another table with the same OID, or of another primary key', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('SELECT %s drops the record.', objectid_internal.rekey_call('rekey_forget', tbl));
    END IF;
    problem := objectid_internal.rekey_mapping_problem(tbl, st.mapping_table);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'the mapping table of the rekey of % cannot be used: %', tbl, problem
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('Put it right; or, to start over with a new mapping table, SELECT %s drops the record'
                                ' (the keys rekeyed so far stay as they are).', objectid_internal.rekey_call('rekey_forget', tbl));
    END IF;
    RETURN st;
END
$body$;
