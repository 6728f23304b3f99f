-- Why the relation mapping cannot serve as the mapping table of tbl, or NULL when it can: a plain
-- table of the table's owner, made for tbl (its comment), of exactly the mapping's columns, with
-- no user trigger or rule that the toolkit's reads and inserts would run.
CREATE FUNCTION objectid_internal.rekey_mapping_problem(tbl regclass, mapping oid)
    RETURNS text
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    m pg_class;
BEGIN
    SELECT * INTO m FROM pg_class c WHERE c.oid = mapping;
    IF NOT FOUND THEN
        RETURN format('the mapping table (OID %s) is gone', mapping);
    ELSIF m.relkind <> 'r' OR EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = mapping OR i.inhparent = mapping) THEN
        RETURN format('%s is not a plain table', objectid_internal.rekey_name(mapping));
    ELSIF m.relowner <> (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl) THEN
        RETURN format('%s is owned by %s, not by %s, the owner of %s', objectid_internal.rekey_name(mapping),
                      m.relowner::regrole, (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl)::regrole, tbl);
    ELSIF (SELECT array_agg(a.attname::text || ' ' || format_type(a.atttypid, a.atttypmod) ORDER BY a.attnum)
             FROM pg_attribute a WHERE a.attrelid = mapping AND a.attnum > 0 AND NOT a.attisdropped)
          IS DISTINCT FROM ARRAY['old_key uuid', 'new_key uuid', 'batch bigint'] THEN
        RETURN format('%s exists and is not a rekey mapping table (old_key uuid, new_key uuid, batch bigint)',
                      objectid_internal.rekey_name(mapping));
    ELSIF obj_description(mapping, 'pg_class') IS DISTINCT FROM objectid_internal.rekey_mapping_comment(tbl) THEN
        RETURN format('%s exists and is not the mapping table of %s (its comment says what it maps)',
                      objectid_internal.rekey_name(mapping), tbl);
    ELSIF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = mapping AND NOT t.tgisinternal)
          OR EXISTS (SELECT FROM pg_rewrite w WHERE w.ev_class = mapping)
          -- (PostgreSQL 18 records NOT NULL as constraints too.)
          OR EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = mapping AND k.contype NOT IN ('p', 'u', 'n'))
          OR EXISTS (SELECT FROM pg_index i WHERE i.indrelid = mapping
                        AND (i.indexprs IS NOT NULL OR i.indpred IS NOT NULL))
          OR EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = mapping AND a.attnum > 0
                        AND (a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> ''))
          -- Extended statistics: the planner folds their expressions (14 and later) whenever it
          -- plans a read of the table, which rekey_translate does as its caller.
          OR EXISTS (SELECT FROM pg_statistic_ext x WHERE x.stxrelid = mapping)
          OR m.relrowsecurity THEN
        -- Code of its own (a trigger, rule, CHECK, index expression, default or policy) would run
        -- as whoever inserts into or reads the mapping table.
        RETURN format('%s has a trigger, rule, constraint, index expression, statistics object, default, identity or row-level security of its own',
                      objectid_internal.rekey_name(mapping));
    END IF;
    RETURN NULL;
END
$body$;
