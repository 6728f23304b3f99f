-- The session that runs the rekey of a table in this database, or NULL: the one its record names,
-- or one that holds its rekey lock and may rekey it (a member of the owner's role: anyone can take
-- an advisory lock, so a holder without that right neither counts as a runner nor stops one);
-- with busy_only, only while it runs a statement.
CREATE FUNCTION objectid_internal.rekey_runner(relid oid, busy_only boolean)
    RETURNS integer
    LANGUAGE sql STABLE STRICT PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT x.pid FROM (
    SELECT l.pid, a.state
      FROM pg_locks l
      JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted
       AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
       AND l.classid = 1919249273::oid AND l.objid = relid AND l.objsubid = 1::smallint
       AND pg_has_role(a.usesysid, (SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE')
    UNION ALL
    SELECT a.pid, a.state
      FROM objectid_internal.rekey_state s
      JOIN pg_stat_activity a ON a.pid = s.runner_pid AND a.backend_start = s.runner_started
     WHERE s.relid = rekey_runner.relid) x
 WHERE NOT busy_only OR x.state IS NULL OR x.state <> 'idle'
 LIMIT 1
$body$;
