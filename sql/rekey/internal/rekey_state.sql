-- One row per table being rekeyed or rekeyed. Its progress columns change in the same transaction
-- as the batch they count, so that a run killed at any point resumes exactly where the last
-- committed batch left it. Row-level security shows each row to whoever may read every row of the
-- table and lets only the table's owner (or a member of its role) write it.
CREATE TABLE objectid_internal.rekey_state (
    relid oid PRIMARY KEY,
    -- The table's primary key constraint when the rekey started: a table dropped and another made
    -- with the same OID does not inherit the state (rekey_state_of).
    key_constraint oid NOT NULL,
    key_column name NOT NULL,
    time_column name NOT NULL,
    -- A time column without time zone is read in the zone of the first run, in every run.
    time_zone text NOT NULL,
    fallback_time timestamptz NOT NULL,
    mapping_table oid NOT NULL,
    -- Pass 1 walks the keys in order from high_water; pass 2 sweeps again from the start for
    -- version-4 keys inserted behind pass 1.
    pass integer NOT NULL DEFAULT 1,
    high_water uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000',
    keys_total bigint NOT NULL,
    keys_done bigint NOT NULL DEFAULT 0,
    batches bigint NOT NULL DEFAULT 0,
    runs integer NOT NULL DEFAULT 1,
    started_at timestamptz NOT NULL,
    run_started_at timestamptz NOT NULL,
    run_keys_done bigint NOT NULL DEFAULT 0,
    last_batch_at timestamptz,
    finished_at timestamptz,
    -- The session running it (rekey_runner), recorded by the owner's run: an advisory lock alone
    -- can be taken by anyone.
    runner_pid integer,
    runner_started timestamptz,
    -- Whether the last batch's rewrite left out the foreign-key checks it satisfies by
    -- construction, and if not (or not on every table) why (rekey_last_fast_path).
    fast_path text
);

ALTER TABLE objectid_internal.rekey_state ENABLE ROW LEVEL SECURITY;
-- Its counts are of the whole table: not for a role that row-level security shows only some rows.
CREATE POLICY rekey_state_read ON objectid_internal.rekey_state FOR SELECT
    USING (objectid_internal.rekey_reads_every_row(relid));
CREATE POLICY rekey_state_insert ON objectid_internal.rekey_state FOR INSERT
    WITH CHECK (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'));
CREATE POLICY rekey_state_update ON objectid_internal.rekey_state FOR UPDATE
    USING (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'))
    WITH CHECK (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'));
CREATE POLICY rekey_state_delete ON objectid_internal.rekey_state FOR DELETE
    USING (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON objectid_internal.rekey_state TO PUBLIC;

-- The same rule for roles that bypass row-level security: a trigger, which they do not bypass.
CREATE FUNCTION objectid_internal.rekey_state_guard()
    RETURNS trigger
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    rel oid := CASE WHEN TG_OP = 'INSERT' THEN NEW.relid ELSE OLD.relid END;
BEGIN
    IF NOT coalesce(pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = rel), 'USAGE'), false)
       AND NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user) THEN
        RAISE EXCEPTION 'only the owner of the table (OID %) may change the record of its rekey', rel
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.relid <> OLD.relid THEN
        RAISE EXCEPTION 'the record of a rekey cannot move to another table' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$body$;

CREATE TRIGGER rekey_state_guard BEFORE INSERT OR UPDATE OR DELETE ON objectid_internal.rekey_state
    FOR EACH ROW EXECUTE FUNCTION objectid_internal.rekey_state_guard();

