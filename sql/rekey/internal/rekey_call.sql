-- How a message or a plan tells its reader to call a documented routine on tbl: schema-qualified,
-- the table by its qualified name (which no search_path changes), and every argument cast to its
-- declared type (more: the arguments after the table, as the caller renders them, each with its
-- cast). An untyped literal would let an overload that another role plants take the call, even a
-- qualified one: the database's owner may create functions in its public schema, and for an
-- unknown literal PostgreSQL prefers the version that takes text (func_select_candidate in
-- parse_func.c).
CREATE FUNCTION objectid_internal.rekey_call(routine text, tbl oid, more text DEFAULT NULL)
    RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT format('%s.%s(%s::pg_catalog.regclass%s)', objectid_internal.rekey_api_schema(), routine,
              quote_literal(coalesce(objectid_internal.rekey_name(tbl), tbl::text)),
              CASE WHEN more IS NOT NULL THEN ', ' || more ELSE '' END)
$body$;

-- The named arguments after the table of a rekey_run (or rekey_plan, which takes the same) that
-- a message prints, each cast or a typed literal: the time column, and the batch size, mapping
-- table and fire_triggers where they are not the defaults, so that the call printed does what the
-- plan or the problem was about.
CREATE FUNCTION objectid_internal.rekey_run_arguments(time_column name, batch_size integer, mapping_table text,
                                                      fire_triggers boolean)
    RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT array_to_string(ARRAY[format('time_column => %L::pg_catalog.name', time_column)]
                       || CASE WHEN batch_size IS NOT NULL THEN ARRAY[format('batch_size => %s', batch_size)] END
                       || CASE WHEN mapping_table IS NOT NULL
                               THEN ARRAY[format('mapping_table => %L::pg_catalog.text', mapping_table)] END
                       || CASE WHEN fire_triggers THEN ARRAY['fire_triggers => true'] END, ', ')
$body$;

-- Functions, procedures and relations named like the documented routines, the functions the
-- toolkit's messages print (uuidv7, uuidv7_at) and rekey_status that are not the extension's, in
-- every schema (each role has its own search_path, "$user" in it): a call that is not qualified,
-- or not cast to the declared types, can reach one and run its owner's code as the caller. rekey_plan and rekey_assess name them. A member of the extension
-- counts as its own only when a superuser owns it: the extension's owner (the database owner,
-- after a trusted install) may ALTER EXTENSION ... ADD an object of its own.
CREATE FUNCTION objectid_internal.rekey_lookalikes()
    RETURNS SETOF text
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT x.what FROM (
    SELECT format('%s (a %s of %s)', p.oid::regprocedure,
                  CASE p.prokind WHEN 'p' THEN 'procedure' ELSE 'function' END, p.proowner::regrole) AS what
      FROM pg_proc p
     WHERE p.proname OPERATOR(pg_catalog.=) ANY (ARRAY['rekey_assess', 'rekey_assess_schema', 'rekey_references',
                                                       'rekey_plan', 'rekey_switch_default', 'rekey_run',
                                                       'rekey_translate', 'rekey_verify', 'rekey_forget',
                                                       'uuidv7', 'uuidv7_at']::name[])
       -- PostgreSQL 18's own uuidv7: a call that means it finds it first.
       AND p.pronamespace OPERATOR(pg_catalog.<>) 'pg_catalog'::regnamespace
       AND NOT EXISTS (SELECT FROM pg_depend d JOIN pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
                        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_proc'::regclass AND d.objid OPERATOR(pg_catalog.=) p.oid
                          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_extension'::regclass AND d.deptype OPERATOR(pg_catalog.=) 'e'
                          AND e.extname OPERATOR(pg_catalog.=) 'pg_objectid'::name
                          AND (SELECT r.rolsuper FROM pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) p.proowner))
    UNION ALL
    SELECT format('%s (a relation of %s)', objectid_internal.rekey_name(c.oid), c.relowner::regrole)
      FROM pg_class c
     WHERE c.relname OPERATOR(pg_catalog.=) 'rekey_status'::name
       AND NOT EXISTS (SELECT FROM pg_depend d JOIN pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
                        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_class'::regclass AND d.objid OPERATOR(pg_catalog.=) c.oid
                          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_extension'::regclass AND d.deptype OPERATOR(pg_catalog.=) 'e'
                          AND e.extname OPERATOR(pg_catalog.=) 'pg_objectid'::name
                          AND (SELECT r.rolsuper FROM pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) c.relowner))) x
 ORDER BY x.what
$body$;
