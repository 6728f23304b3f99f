-- Whether the key's default makes version-7 keys: a call of uuidv7() or uuidv7(interval), this
-- extension's or PostgreSQL 18's, recognised by OID in the stored expression.
CREATE FUNCTION objectid_internal.rekey_default_is_v7(tbl regclass)
    RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT coalesce((
    SELECT bool_or(d.adbin::text LIKE format('{FUNCEXPR :funcid %s %%', f.oid))
      FROM pg_attrdef d
      JOIN pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) d.adrelid AND a.attnum OPERATOR(pg_catalog.=) d.adnum
      CROSS JOIN unnest(objectid_internal.rekey_uuidv7_functions()) f(oid)
     WHERE d.adrelid OPERATOR(pg_catalog.=) tbl::oid
       AND a.attname OPERATOR(pg_catalog.=) objectid_internal.rekey_key_column(tbl)), false)
$body$;
