-- Rekeys tbl: starts (or resumes) with rekey_start, then runs rekey_batch until every version-4 key
-- is rekeyed, committing after each batch, so that no lock is held longer than one batch and a
-- run stopped at any point (cancelled, terminated, the server restarted) resumes where the last
-- committed batch left it; a run after the end changes nothing unless version-4 keys were
-- inserted since. A batch that cannot get a lock within lock_timeout, deadlocks or collides is
-- rolled back and retried, up to max_retries times. Each batch reports its progress as a NOTICE;
-- other sessions read the same from rekey_status. One session at a time rekeys a table (an
-- advisory lock, which rekey_status also reads). Only a CALL of its own, outside a transaction
-- block, can commit: anywhere else it refuses before anything changes, unless in_one_transaction
-- asks for the whole work in the current transaction. With refresh_materialized_views, the
-- materialized views that read the key (rekey_materialized_views) are refreshed once it finishes.
-- Without a batch_size, each batch is sized from the time the last one took
-- (rekey_batch_size), so that none holds its locks for much more than half a second.
CREATE PROCEDURE @extschema@.rekey_run(tbl regclass, time_column name DEFAULT NULL,
                                       batch_size integer DEFAULT NULL, pause interval DEFAULT '0',
                                       lock_timeout interval DEFAULT '1s', max_retries integer DEFAULT 10,
                                       fallback_time timestamptz DEFAULT NULL,
                                       fire_triggers boolean DEFAULT false, mapping_table text DEFAULT NULL,
                                       in_one_transaction boolean DEFAULT false, max_batches bigint DEFAULT NULL,
                                       refresh_materialized_views boolean DEFAULT false)
    LANGUAGE plpgsql
    AS $body$
DECLARE
    -- Nothing here but qualified names: a procedure cannot pin its search_path (it commits), so
    -- these are compiled, and their initial values computed, under the caller's path. The types
    -- too: text and float8 are names a schema on that path could give a domain of its own
    -- (bigint, integer and boolean are keywords, always pg_catalog's).
    committing boolean := objectid_internal.rekey_can_commit();
    lock_key bigint;
    lock_ms pg_catalog.text;
    saved_timeout pg_catalog.text := pg_catalog.current_setting('lock_timeout');
    -- The caller's search_path: every transaction of the run uses only pg_catalog (below), so that
    -- no function or operator of a schema on the caller's path can stand in for a built-in.
    saved_path pg_catalog.text := pg_catalog.current_setting('search_path');
    holder integer;
    holding boolean;
    st objectid_internal.rekey_state;
    n bigint;
    attempt integer;
    batches_run bigint := 0;
    rate pg_catalog.float8;
    failure pg_catalog.text;
    failure_state pg_catalog.text;
    r record;
    size integer := batch_size;
    sizing pg_catalog.text;
    batch_started pg_catalog.timestamptz;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    committing := committing AND NOT in_one_transaction;
    -- 'reky' in the high half, the table in the low half; rekey_runner looks for it.
    lock_key := (1919249273::bigint << 32) | tbl::oid::bigint;
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'rekey_run needs a table' USING ERRCODE = 'null_value_not_allowed';
    ELSIF batch_size < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1, not %', batch_size USING ERRCODE = 'invalid_parameter_value';
    ELSIF max_retries IS NULL OR max_retries < 0 OR pause IS NULL OR pause < interval '0'
          OR lock_timeout IS NULL OR lock_timeout < interval '0' OR lock_timeout >= interval '24 days'
          OR max_batches < 0 OR in_one_transaction IS NULL OR fire_triggers IS NULL
          OR refresh_materialized_views IS NULL THEN
        RAISE EXCEPTION 'max_retries, pause, lock_timeout (under 24 days) and max_batches must not be negative, nor NULL but max_batches'
            USING ERRCODE = 'invalid_parameter_value';
    ELSIF fallback_time < '1970-01-01 00:00:00+00' OR fallback_time >= '10000-01-01 00:00:00+00' THEN
        RAISE EXCEPTION 'fallback_time % is not a time a UUIDv7 can carry', fallback_time
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Give a time from 1970-01-01 to 9999-12-31.';
    END IF;
    IF NOT objectid_internal.rekey_can_commit() AND NOT in_one_transaction THEN
        RAISE EXCEPTION 'rekey_run must be called by a CALL of its own, outside a transaction block'
            USING ERRCODE = 'active_sql_transaction',
                  DETAIL = 'It commits after each batch, so that no lock is held longer than one batch; inside a transaction block, a function or a block with an exception handler it cannot.',
                  HINT = 'Run the CALL on its own, or pass in_one_transaction => true to rekey every key in the current transaction, which then holds every batch''s locks until it ends.';
    END IF;
    -- REFRESH needs the materialized view's owner's privileges (PostgreSQL then runs its query as
    -- that owner, in a security-restricted operation): known before anything changes.
    IF refresh_materialized_views THEN
        SELECT string_agg(format('%s (owned by %s)', v.matview, c.relowner::regrole), ', ') INTO failure
          FROM objectid_internal.rekey_materialized_views(tbl) v
          JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) v.matview::oid
         WHERE NOT pg_has_role(c.relowner, 'USAGE');
        IF failure IS NOT NULL THEN
            RAISE EXCEPTION 'refresh_materialized_views: you may not refresh %', failure
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'Leave refresh_materialized_views out and have their owners refresh them after the rekey.';
        END IF;
        -- rekey_refresh_materialized_view (in Rust) reads a view's name as UTF-8 text, which a name
        -- outside ASCII in a database of another encoding is not (server_text in as_owner.rs).
        IF getdatabaseencoding() <> 'UTF8' THEN
            SELECT string_agg(v.matview::text, ', ') INTO failure
              FROM objectid_internal.rekey_materialized_views(tbl) v
             WHERE objectid_internal.rekey_name(v.matview::oid) !~ '^[[:ascii:]]*$';
            IF failure IS NOT NULL THEN
                RAISE EXCEPTION 'the rekey toolkit does not yet support names with characters outside ASCII in a database of encoding %: materialized views %',
                        getdatabaseencoding(), failure
                    USING ERRCODE = 'feature_not_supported',
                          HINT = 'Leave refresh_materialized_views out and refresh them after the rekey.';
            END IF;
        END IF;
    END IF;
    -- A batch retried after a lock timeout must see what the other session committed meanwhile,
    -- which a retry inside one REPEATABLE READ or SERIALIZABLE transaction never does.
    IF current_setting('transaction_isolation') <> 'read committed'
       OR (committing AND current_setting('default_transaction_isolation') <> 'read committed') THEN
        RAISE EXCEPTION 'rekey_run needs the READ COMMITTED isolation level'
            USING ERRCODE = 'invalid_transaction_state',
                  HINT = 'SET default_transaction_isolation = ''read committed'' in this session first.';
    END IF;
    -- PostgreSQL times the whole CALL as one statement, its COMMITs notwithstanding
    -- (enable_statement_timeout runs when a client's statement starts): a limit meant for an
    -- application's queries cancels a long rekey again and again.
    IF current_setting('statement_timeout') <> '0' THEN
        RAISE WARNING 'rekey of %: statement_timeout (%) counts the whole CALL, all of its batches: when it runs out, the batches committed before stay and the run stops',
                tbl, current_setting('statement_timeout')
            USING HINT = 'SET statement_timeout = 0 in the session that rekeys: each batch holds its locks for about half a second, and waits for one at most lock_timeout.';
    END IF;
    lock_ms := (extract(epoch FROM lock_timeout) * 1000)::numeric(20)::text || 'ms';
    IF committing THEN
        -- Commits nothing yet; fails here, before the lock is taken, where a COMMIT is refused
        -- for a reason rekey_can_commit cannot see (a loop over a cursor that is not read-only).
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    END IF;

    -- One session at a time: a session lock kept across the batches' commits (released by
    -- rekey_run_end on every way out), or in one transaction a transaction lock. Each batch also locks the table's
    -- rekey_state row, so two runs could only take turns; the lock says who runs, and refuses a
    -- second run. A holder that may not rekey the table (anyone can take an advisory lock) stops
    -- nobody: the run goes on without the lock.
    IF committing THEN
        holding := EXISTS (SELECT FROM pg_locks l WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid()
                              AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
                              AND l.classid = 1919249273::oid AND l.objid = tbl::oid AND l.objsubid = 1::smallint)
                   OR pg_try_advisory_lock(lock_key);
    ELSE
        holding := pg_try_advisory_xact_lock(lock_key);
    END IF;
    -- Only a session running a statement stops the run: one left idle with the lock (a cancel
    -- between two of a run's statements outside its exception handlers, after a COMMIT, leaves
    -- a session lock behind, which PL/pgSQL cannot prevent) runs nothing, and the batches take
    -- turns on the table's rekey_state row anyway.
    holder := objectid_internal.rekey_runner(tbl, true);
    IF holder IS NOT NULL AND holder <> pg_backend_pid() THEN
        PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
        RAISE EXCEPTION 'another session (process %) is rekeying % now', holder, tbl
            USING ERRCODE = 'object_in_use';
    END IF;
    IF NOT holding THEN
        RAISE NOTICE 'rekey of %: a session that is not running it, or may not rekey it, holds its rekey lock; going on without it', tbl;
    END IF;

    BEGIN
        st := objectid_internal.rekey_start(tbl, time_column, fallback_time, fire_triggers, mapping_table);
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
        RAISE;
    END;
    IF batch_size IS NULL THEN
        SELECT k.first_size, format('batches sized to take about %s s each (%s to %s keys, %s first)', k.target_seconds,
                                    k.least_size, k.most_size, k.first_size)
          INTO size, sizing
          FROM objectid_internal.rekey_batch_size(NULL, NULL, NULL) k;
    ELSE
        sizing := format('batches of up to %s keys', batch_size);
    END IF;
    RAISE NOTICE 'rekey of %: % of % version-4 keys done, pass %, %', tbl, st.keys_done, st.keys_total, st.pass, sizing;
    IF committing THEN
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    END IF;

    LOOP
        EXIT WHEN max_batches IS NOT NULL AND batches_run >= max_batches;
        attempt := 0;
        LOOP
            BEGIN
                PERFORM set_config('lock_timeout', lock_ms, true);
                batch_started := clock_timestamp();
                n := objectid_internal.rekey_batch(tbl, size, fire_triggers);
                PERFORM set_config('lock_timeout', saved_timeout, true);
                IF batch_size IS NULL THEN
                    size := (SELECT k.next_size
                               FROM objectid_internal.rekey_batch_size(size, n,
                                        extract(epoch FROM clock_timestamp() - batch_started)::pg_catalog.float8) k);
                END IF;
                EXIT;
            EXCEPTION
                WHEN lock_not_available OR deadlock_detected OR serialization_failure
                     OR unique_violation OR foreign_key_violation THEN
                    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, failure_state = RETURNED_SQLSTATE;
                    attempt := attempt + 1;
                    IF attempt > max_retries THEN
                        PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
                        RAISE EXCEPTION 'rekey of % stopped: a batch failed % times, last with: %', tbl, attempt, failure
                            USING ERRCODE = failure_state,
                                  HINT = format('Nothing of that batch was kept. CALL %s again to resume, perhaps with a longer lock_timeout or more retries.',
                                                objectid_internal.rekey_call('rekey_run', tbl));
                    END IF;
                    RAISE NOTICE 'rekey of %: batch rolled back (%), retry % of %', tbl, failure, attempt, max_retries;
                WHEN OTHERS OR query_canceled THEN
                    PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
                    RAISE;
            END;
            BEGIN
                PERFORM pg_sleep(least(0.1 * attempt, 2));
            EXCEPTION WHEN query_canceled THEN
                PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
                RAISE;
            END;
        END LOOP;
        batches_run := batches_run + 1;

        SELECT * INTO st FROM objectid_internal.rekey_state s WHERE s.relid = tbl;
        IF n > 0 THEN
            -- From the epochs, in float8, with the time left only where an interval holds it: the
            -- owner writes the record (rekey_status_rows), and no value there may stop the run.
            rate := CASE WHEN isfinite(st.run_started_at)
                         THEN st.run_keys_done / greatest(extract(epoch FROM clock_timestamp())::pg_catalog.float8
                                                          - extract(epoch FROM st.run_started_at)::pg_catalog.float8, 0.001)
                    END;
            RAISE NOTICE '%', format('rekey of %s: %s/%s keys (%s%%), %s keys/s, about %s left; fast path %s', tbl, st.keys_done,
                st.keys_total, round(100.0 * st.keys_done / greatest(st.keys_total, 1), 1),
                coalesce(round(rate::numeric)::pg_catalog.text, 'unknown'),
                CASE WHEN rate > 0 AND (st.keys_total::numeric - st.keys_done) / rate::numeric BETWEEN 0 AND 1e10
                     THEN make_interval(secs => round((st.keys_total::numeric - st.keys_done) / rate::numeric))::pg_catalog.text
                     ELSE 'unknown' END,
                coalesce(st.fast_path, 'unknown'));
        END IF;
        IF committing THEN
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        END IF;
        EXIT WHEN st.finished_at IS NOT NULL;
        IF n > 0 AND pause > interval '0' THEN
            BEGIN
                PERFORM pg_sleep(extract(epoch FROM pause));
            EXCEPTION WHEN query_canceled THEN
                PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
                RAISE;
            END;
        END IF;
    END LOOP;

    IF st.finished_at IS NOT NULL THEN
        RAISE NOTICE 'rekey of % finished: % keys rekeyed in % batches; check it with SELECT * FROM %',
            tbl, st.keys_done, st.batches, objectid_internal.rekey_call('rekey_verify', tbl);
        IF refresh_materialized_views THEN
            BEGIN
                -- Over an array, not a cursor: no cursor is open while the owner's code runs (as_owner.rs).
                FOREACH r IN ARRAY ARRAY(SELECT x FROM (SELECT v.matview FROM objectid_internal.rekey_materialized_views(tbl) v) x)
                LOOP
                    PERFORM objectid_internal.rekey_refresh_materialized_view(r.matview::oid);
                    RAISE NOTICE 'rekey of %: refreshed materialized view %', tbl, r.matview;
                END LOOP;
            EXCEPTION WHEN OTHERS OR query_canceled THEN
                PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
                RAISE;
            END;
        END IF;
    ELSE
        RAISE NOTICE 'rekey of % paused after % batches: % of % keys done; CALL % again to go on',
            tbl, batches_run, st.keys_done, st.keys_total, objectid_internal.rekey_call('rekey_run', tbl);
    END IF;
    UPDATE objectid_internal.rekey_state s SET runner_pid = NULL, runner_started = NULL
     WHERE s.relid = tbl AND s.runner_pid = pg_backend_pid();
    PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
    IF NOT committing THEN
        PERFORM set_config('lock_timeout', saved_timeout, true);
    END IF;
    PERFORM set_config('search_path', saved_path, true);
END
$body$;
