-- Whether the caller may read every row of the relation relid: SELECT on it, and no row-level
-- security that shows it only some rows (a member of the owner's role counts as reading them all:
-- the owner can turn the policies off). What a role must have to see a count of the whole table,
-- in a rekey's record or its starting counts. False for a relation that is gone.
CREATE FUNCTION objectid_internal.rekey_reads_every_row(relid oid)
    RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT coalesce(has_table_privilege(relid, 'SELECT')
                AND (NOT row_security_active(relid)
                     OR pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE')), false)
$body$;
