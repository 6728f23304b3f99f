CREATE FUNCTION @extschema@.rekey_references(tbl regclass)
    RETURNS TABLE (depth integer, constraint_name name, referencing_table regclass,
                   referencing_columns name[], referenced_table regclass, referenced_columns name[],
                   rekeyed_columns name[], column_types regtype[], on_update text, on_delete text,
                   is_deferrable boolean, initially_deferred boolean, validated boolean, indexed boolean,
                   constraint_id oid)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT * FROM objectid_internal.rekey_references(tbl)
$body$;
