-- One batch of the rekey of tbl, in the caller's transaction: locks the next batch_size
-- version-4 keys in key order, maps each to a version-7 key carrying its row's creation time,
-- rewrites the key and every column referencing it in one statement, and records the progress.
-- Returns the number of keys rekeyed; at the end of a pass it moves to the next or finishes.
-- rekey_run calls it once per transaction. The batch's statements run as the tables' owner in a
-- security-restricted operation (rekey_batch_as_owner), with search_path = pg_catalog, pg_temp:
-- the tables' triggers (run with fire_triggers) must not depend on the caller's search_path, as
-- for PostgreSQL's own maintenance commands.
CREATE FUNCTION objectid_internal.rekey_batch(tbl regclass, batch_size integer, fire_triggers boolean)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    st objectid_internal.rekey_state;
    statements objectid_internal.rekey_batch_statements;
    derived objectid_internal.rekey_batch_catalog;
    again objectid_internal.rekey_batch_catalog;
    done record;
    updated bigint;
BEGIN
    IF batch_size < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1, not %', batch_size USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl), 'USAGE') THEN
        RAISE EXCEPTION 'permission denied: only the owner of % or a member of its role may rekey it', tbl
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM FROM objectid_internal.rekey_state s WHERE s.relid OPERATOR(pg_catalog.=) tbl::oid FOR UPDATE;
    -- Read for every batch: the record is a table's rows, and the mapping table's comment (which
    -- rekey_state_of checks) changes without the invalidation that rekey_batch_catalog waits for.
    st := objectid_internal.rekey_state_of(tbl);
    IF st.relid IS NULL THEN
        RAISE EXCEPTION 'no rekey of % has been started', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = format('Start it with CALL %s, naming the column of each row''s creation time.',
                                objectid_internal.rekey_call('rekey_run', tbl, objectid_internal.rekey_run_arguments(
                                    coalesce((objectid_internal.rekey_time_columns(tbl))[1], 'TIME_COLUMN'), NULL, NULL,
                                    fire_triggers)));
    END IF;
    IF st.finished_at IS NOT NULL THEN
        RETURN 0;
    END IF;
    -- Again for every batch: a table, trigger, rule or privilege may have changed since the start.
    -- The tables are locked first (ROW EXCLUSIVE, as the batch's own writes would), so that no
    -- trigger, rule, constraint or column can be added between this check and the rewrite. What
    -- the catalogs say is read again only when a catalog may have changed since it was last read
    -- (rekey_batch_catalog); taking the locks processes every change committed before them.
    derived := objectid_internal.rekey_batch_catalog(tbl::oid, st.time_column::text, st.time_zone, st.mapping_table,
                                                     fire_triggers)::objectid_internal.rekey_batch_catalog;
    EXECUTE derived.lock_statement;
    -- Again now that they are locked: a foreign key added in between is followed too, its table
    -- locked as well.
    again := objectid_internal.rekey_batch_catalog(tbl::oid, st.time_column::text, st.time_zone, st.mapping_table,
                                                   fire_triggers)::objectid_internal.rekey_batch_catalog;
    IF again.lock_statement IS DISTINCT FROM derived.lock_statement THEN
        EXECUTE again.lock_statement;
    END IF;
    derived := again;
    IF cardinality(derived.problems) > 0 THEN
        RAISE EXCEPTION 'cannot go on with the rekey of %: %', tbl, derived.problems[1]
            USING ERRCODE = derived.code, DETAIL = 'Every problem found: ' || array_to_string(derived.problems, '; ');
    END IF;
    -- A deferred trigger cannot be queued inside a security-restricted operation (it would run
    -- at COMMIT, as the caller: afterTriggerMarkEvents refuses it). The foreign keys' checks are
    -- right at the end of the rewrite, when parent and children agree again, so every deferrable
    -- constraint of the tables that change is made immediate for this transaction first, as the
    -- caller, which also runs any of their checks the transaction had queued.
    IF derived.deferrable_constraints IS NOT NULL THEN
        EXECUTE 'SET CONSTRAINTS ' || derived.deferrable_constraints || ' IMMEDIATE';
    END IF;
    statements := derived.statements;
    SELECT * INTO done
      FROM objectid_internal.rekey_batch_as_owner(tbl::oid, statements.window_query, statements.map_query,
                                                  statements.rewrite_query, statements.other_tables,
                                                  statements.other_queries, st.high_water,
                                                  batch_size, st.fallback_time, st.batches + 1);
    IF done.window_end IS NULL THEN
        UPDATE objectid_internal.rekey_state s
           SET pass = 2, high_water = '00000000-0000-0000-0000-000000000000',
               finished_at = CASE WHEN s.pass >= 2 THEN clock_timestamp() END
         WHERE s.relid OPERATOR(pg_catalog.=) tbl::oid;
        RETURN 0;
    END IF;
    IF done.keys IS NULL THEN
        -- A window without a version-4 key to rekey: walk on.
        UPDATE objectid_internal.rekey_state s SET high_water = done.window_end
         WHERE s.relid OPERATOR(pg_catalog.=) tbl::oid;
        RETURN 0;
    END IF;
    IF done.changed[1] <> cardinality(done.keys) THEN
        -- The keys are locked, so only a BEFORE UPDATE trigger that keeps or changes the key can do
        -- this: never commit such a batch, whose mapping would name keys that exist nowhere.
        RAISE EXCEPTION 'rekey of %: % keys locked but % of them changed to their new key', tbl,
                cardinality(done.keys), done.changed[1]
            USING ERRCODE = 'triggered_action_exception',
                  HINT = 'A trigger on the table changes the key on UPDATE; disable it for the rekey.';
    END IF;
    UPDATE objectid_internal.rekey_state s
       SET keys_done = s.keys_done + cardinality(done.keys), run_keys_done = s.run_keys_done + cardinality(done.keys),
           keys_total = greatest(s.keys_total, s.keys_done + cardinality(done.keys)),
           batches = s.batches + 1, high_water = done.window_end, last_batch_at = clock_timestamp(),
           fast_path = objectid_internal.rekey_last_fast_path()
     WHERE s.relid OPERATOR(pg_catalog.=) tbl::oid;
    GET DIAGNOSTICS updated = ROW_COUNT;
    IF updated <> 1 THEN
        -- Never keys rewritten without their progress recorded.
        RAISE EXCEPTION 'the record of the rekey of % could not be updated', tbl USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN cardinality(done.keys);
END
$body$;
