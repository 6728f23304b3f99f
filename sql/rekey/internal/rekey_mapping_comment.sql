-- The comment a mapping table is made with: it binds the mapping table to its table (by OID and
-- primary key constraint), so that a rekey adopts an existing mapping table (after rekey_forget)
-- only when it was made for that very table.
CREATE FUNCTION objectid_internal.rekey_mapping_comment(tbl regclass)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT format('pg_objectid rekey mapping: old -> new keys of relation %s (primary key constraint %s)',
              tbl::oid, (SELECT c.oid FROM pg_constraint c WHERE c.conrelid = tbl AND c.contype = 'p'))
$body$;
