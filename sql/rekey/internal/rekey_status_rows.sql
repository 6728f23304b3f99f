-- Progress of every rekey the caller may see, from any session: what rekey_run reports per batch.
-- A function under the view so that the rows are read with the caller's privileges (and row-level
-- security), not the view owner's: views run as their owner before PostgreSQL 15's
-- security_invoker. Running means that a session that may rekey the table holds its rekey lock and
-- is busy (rekey_runner); one that holds it idle (after a run that failed at a COMMIT) is not.
CREATE FUNCTION objectid_internal.rekey_status_rows()
    RETURNS TABLE (table_name regclass, key_column name, state text, pass integer, keys_done bigint,
                   keys_total bigint, percent_done numeric, keys_per_second numeric, time_left interval,
                   batches bigint, runs integer, started_at timestamptz, last_batch_at timestamptz,
                   finished_at timestamptz, runner_pid integer, mapping_table regclass, fast_path text)
    LANGUAGE sql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT s.relid::regclass, s.key_column,
       CASE WHEN l.pid IS NOT NULL THEN 'running' WHEN s.finished_at IS NOT NULL THEN 'finished' ELSE 'stopped' END,
       s.pass, s.keys_done, s.keys_total,
       round(100.0 * s.keys_done / greatest(s.keys_total, 1), 1),
       round(r.rate),
       -- In numeric, and only for a time an interval can hold: a table's owner writes its row,
       -- and no value there may break the view for everyone else.
       CASE WHEN l.pid IS NOT NULL AND r.rate > 0
                 AND (s.keys_total::numeric - s.keys_done) / r.rate BETWEEN 0 AND 1e10
            THEN make_interval(secs => round((s.keys_total::numeric - s.keys_done) / r.rate)) END,
       s.batches, s.runs, s.started_at, s.last_batch_at, s.finished_at, l.pid, s.mapping_table::regclass,
       s.fast_path
  FROM objectid_internal.rekey_state s
  -- The seconds between the two times from their epochs, not from their difference: an interval
  -- cannot hold the difference of two extreme times, nor (before 17) of an infinite one; and in
  -- numeric, which extract gives only from 14 on (13's float8 epochs of two times a microsecond
  -- apart may be equal).
  CROSS JOIN LATERAL (
      SELECT CASE WHEN isfinite(s.last_batch_at) AND isfinite(s.run_started_at)
                       AND s.last_batch_at > s.run_started_at
                  THEN s.run_keys_done::numeric / nullif(extract(epoch FROM s.last_batch_at)::numeric
                                                          - extract(epoch FROM s.run_started_at)::numeric, 0)
             END AS rate) r
  LEFT JOIN LATERAL (SELECT objectid_internal.rekey_runner(s.relid, true) AS pid) l ON true
 ORDER BY s.relid::regclass::text
$body$;
