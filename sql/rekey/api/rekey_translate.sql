-- The new key of an old key of tbl, from its mapping table; a key that was never rekeyed (or is
-- already new) comes back unchanged, so that callers holding keys of either kind can always call
-- it, for the whole migration: WHERE id = rekey_translate('orders', $1). Before a rekey starts
-- every key maps to itself; after rekey_forget the mapping table made for tbl (found by its
-- comment) still answers while it exists. Whoever may read every row of tbl's key column may
-- translate (rekey_translate_read checks it), whoever ran the rekey, and so may whoever was granted
-- SELECT on the mapping table's old_key and new_key; the table must pass the checks rekey_batch makes of it
-- (rekey_mapping_problem: the table's owner's, made for tbl, with no trigger, rule, policy, index
-- or statistics expression or default of its own), and is read as its owner
-- (rekey_translate_read). Parallel unsafe: that read switches user and settings.
CREATE FUNCTION @extschema@.rekey_translate(tbl regclass, old_key uuid)
    RETURNS uuid
    LANGUAGE plpgsql STABLE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '100ms'
    AS $body$
DECLARE
    mapping oid;
    problem text;
    translated uuid;
BEGIN
    -- The recorded rekey's mapping table, after rekey_state_of's checks (the record is of this
    -- table, its mapping table qualifies). A lock another role takes on rekey_state (which everyone
    -- may read and write, through its policies) must not stop the application's translations:
    -- waiting at most lock_timeout (this function's setting), it goes by the comment instead.
    BEGIN
        SELECT s.mapping_table INTO mapping FROM objectid_internal.rekey_state s
         WHERE s.relid OPERATOR(pg_catalog.=) tbl::oid;
        IF FOUND THEN
            PERFORM objectid_internal.rekey_state_of(tbl);
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        mapping := NULL;
    END;
    IF mapping IS NULL THEN
        -- The mapping table made for this table, by the comment that binds it (after rekey_forget,
        -- or while the record cannot be read): the default name first, then any table of the
        -- table's owner with that comment; another role's table with it is not even looked at.
        mapping := to_regclass(objectid_internal.rekey_mapping_name(tbl, NULL));
        IF mapping IS NULL OR obj_description(mapping, 'pg_class') IS DISTINCT FROM objectid_internal.rekey_mapping_comment(tbl) THEN
            SELECT d.objoid INTO mapping
              FROM pg_description d JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objoid
             WHERE d.classoid OPERATOR(pg_catalog.=) 'pg_class'::regclass::oid AND d.objsubid OPERATOR(pg_catalog.=) 0
               AND d.description OPERATOR(pg_catalog.=) objectid_internal.rekey_mapping_comment(tbl)
               AND c.relowner OPERATOR(pg_catalog.=) (SELECT t.relowner FROM pg_class t WHERE t.oid OPERATOR(pg_catalog.=) tbl)
             ORDER BY d.objoid LIMIT 1;
        END IF;
    END IF;
    IF mapping IS NULL THEN
        -- No rekey started, nor a mapping table left by one: every key is its own.
        RETURN old_key;
    END IF;
    problem := objectid_internal.rekey_mapping_problem(tbl, mapping);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'the mapping table of the rekey of % cannot be used: %', tbl, problem
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    -- Read as the mapping table's owner, in a security-restricted operation: whatever its owner
    -- attached to it since the checks above (an index or statistics expression the planner
    -- folds) runs as the owner, never as the caller.
    translated := objectid_internal.rekey_translate_read(mapping, old_key);
    RETURN coalesce(translated, old_key);
END
$body$;
