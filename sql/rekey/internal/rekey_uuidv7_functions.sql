-- This extension's uuidv7() and uuidv7(interval), by OID (members of the extension that a
-- superuser owns: the extension's owner may ALTER EXTENSION ... ADD a function of its own), and
-- PostgreSQL 18's: the functions a key's default may call to make version-7 keys.
CREATE FUNCTION objectid_internal.rekey_uuidv7_functions()
    RETURNS oid[]
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT array_agg(p.oid ORDER BY p.oid)
  FROM pg_proc p
 WHERE p.proname OPERATOR(pg_catalog.=) 'uuidv7'::name
   AND (p.pronamespace OPERATOR(pg_catalog.=) 'pg_catalog'::regnamespace::oid
        OR EXISTS (SELECT FROM pg_depend d JOIN pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
                    WHERE d.classid OPERATOR(pg_catalog.=) 'pg_proc'::regclass::oid
                      AND d.objid OPERATOR(pg_catalog.=) p.oid
                      AND d.refclassid OPERATOR(pg_catalog.=) 'pg_extension'::regclass::oid
                      AND d.deptype OPERATOR(pg_catalog.=) 'e'::"char"
                      AND e.extname OPERATOR(pg_catalog.=) 'pg_objectid'::name
                      AND (SELECT r.rolsuper FROM pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) p.proowner)))
$body$;
