-- New rows get version-7 keys: sets the key's default to uuidv7(), a catalog change under a short
-- ACCESS EXCLUSIVE lock. Each attempt waits at most lock_timeout, so that it never queues the
-- table's readers behind a long transaction; it retries up to attempts times, backing off.
-- Returns the statement run, or says that there was nothing to do.
CREATE FUNCTION @extschema@.rekey_switch_default(tbl regclass, lock_timeout interval DEFAULT '100ms',
                                                 attempts integer DEFAULT 50)
    RETURNS text
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := objectid_internal.rekey_key_column(tbl);
    -- The extension's schema by its name now: a name written into this script would reach
    -- whatever schema its owner gave that name since.
    statement text := format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s.uuidv7()', objectid_internal.rekey_name(tbl::oid),
                             key, objectid_internal.rekey_api_schema());
    saved text := current_setting('lock_timeout');
    attempt integer := 0;
BEGIN
    IF objectid_internal.rekey_default_is_v7(tbl) THEN
        RETURN format('unchanged: the default of %s.%I already makes version-7 keys', tbl, key);
    END IF;
    IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table % to change its default', tbl
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    LOOP
        attempt := attempt + 1;
        BEGIN
            PERFORM set_config('lock_timeout', (extract(epoch FROM lock_timeout) * 1000)::bigint::text || 'ms', true);
            EXECUTE statement;
            -- What the name resolved to, by OID: never a default that calls another function.
            IF NOT objectid_internal.rekey_default_is_v7(tbl) THEN
                RAISE EXCEPTION 'the default set on %.% does not call this extension''s uuidv7()', tbl, key
                    USING ERRCODE = 'object_not_in_prerequisite_state';
            END IF;
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            IF attempt >= attempts THEN
                RAISE EXCEPTION 'could not lock % to change its default in % attempts of %', tbl, attempts, lock_timeout
                    USING ERRCODE = 'lock_not_available',
                          HINT = 'A long transaction holds a lock on the table; try again later or allow more attempts.';
            END IF;
        END;
        PERFORM pg_sleep(least(0.05 * attempt, 1));
    END LOOP;
    PERFORM set_config('lock_timeout', saved, true);
    RETURN statement;
END
$body$;
