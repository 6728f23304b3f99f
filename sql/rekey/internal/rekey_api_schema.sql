-- The extension's schema, quoted, as it is named now: how hints and plans name the documented
-- functions (never as text written into this script, where a schema name with a quote in it
-- would be an injection).
CREATE FUNCTION objectid_internal.rekey_api_schema()
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT quote_ident(n.nspname)
  FROM pg_extension e JOIN pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
 WHERE e.extname OPERATOR(pg_catalog.=) 'pg_objectid'::name
$body$;
