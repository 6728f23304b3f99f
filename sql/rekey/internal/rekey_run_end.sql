-- Every way out of rekey_run, whether it finished, paused or failed: the session's rekey lock
-- released when the run holds it (a session lock, which neither a COMMIT nor an error releases).
-- rekey_run cannot have a single exit in PL/pgSQL (it commits, and a block with an exception
-- handler cannot): each of its exception handlers calls this, then raises the error again, which
-- keeps its own message, detail, hint and context. What else rekey_run changes needs no such
-- care on an error: its settings and its record of the session are the transaction's, and the
-- error's rollback restores them.
CREATE FUNCTION objectid_internal.rekey_run_end(lock_key bigint, unlock boolean)
    RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
BEGIN
    IF unlock THEN
        PERFORM pg_advisory_unlock(lock_key);
    END IF;
END
$body$;
