-- The row counts and foreign-key join counts when the rekey started, which rekey_verify compares
-- with: one row per count, apart from the record because each is shown only to a role that may
-- read every row of the tables it counts (a role that may read the key table, and so its record,
-- must not learn how many rows a table holds that it may not read, or of which row-level security
-- shows it only some). Written by the same rule as the record, and gone
-- with it.
CREATE TABLE objectid_internal.rekey_snapshot (
    relid oid NOT NULL REFERENCES objectid_internal.rekey_state ON DELETE CASCADE,
    -- The table whose rows are counted, or the referencing table of a join.
    counted oid NOT NULL,
    -- A join's foreign key and the table it references; NULL for a count of rows.
    constraint_id oid,
    referenced oid,
    n bigint NOT NULL
);
CREATE INDEX ON objectid_internal.rekey_snapshot (relid);

ALTER TABLE objectid_internal.rekey_snapshot ENABLE ROW LEVEL SECURITY;
-- A count of a table that is gone only to a member of the key table's owner: no privilege on it
-- is left to ask about.
CREATE POLICY rekey_snapshot_read ON objectid_internal.rekey_snapshot FOR SELECT
    USING (CASE WHEN EXISTS (SELECT FROM pg_class c WHERE c.oid = counted)
                     AND (referenced IS NULL OR EXISTS (SELECT FROM pg_class c WHERE c.oid = referenced))
                THEN objectid_internal.rekey_reads_every_row(counted)
                     AND (referenced IS NULL OR objectid_internal.rekey_reads_every_row(referenced))
                ELSE coalesce(pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'), false) END);
CREATE POLICY rekey_snapshot_insert ON objectid_internal.rekey_snapshot FOR INSERT
    WITH CHECK (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'));
CREATE POLICY rekey_snapshot_update ON objectid_internal.rekey_snapshot FOR UPDATE
    USING (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'))
    WITH CHECK (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'));
CREATE POLICY rekey_snapshot_delete ON objectid_internal.rekey_snapshot FOR DELETE
    USING (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON objectid_internal.rekey_snapshot TO PUBLIC;

CREATE TRIGGER rekey_snapshot_guard BEFORE INSERT OR UPDATE OR DELETE ON objectid_internal.rekey_snapshot
    FOR EACH ROW EXECUTE FUNCTION objectid_internal.rekey_state_guard();
