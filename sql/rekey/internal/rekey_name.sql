-- A relation's name, schema-qualified and quoted whatever the search_path: how every statement
-- here names a table it runs against. NULL when there is no such relation.
CREATE FUNCTION objectid_internal.rekey_name(relid oid)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT format('%I.%I', n.nspname, c.relname)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.oid = relid
$body$;
