-- What a batch of the rekey of tbl derives from the system catalogs (rekey_batch_catalog), read
-- now. time_column, time_zone and mapping_table are the rekey's record (rekey_state_of). Reads
-- nothing but the catalogs, and runs no table owner's code: rekey_batch_catalog keeps the answer
-- for as long as no catalog changes.
CREATE FUNCTION objectid_internal.rekey_batch_catalog_read(tbl regclass, time_column name, time_zone text,
                                                           mapping_table oid, fire_triggers boolean)
    RETURNS objectid_internal.rekey_batch_catalog
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cols objectid_internal.rekey_column[] := ARRAY(SELECT c FROM objectid_internal.rekey_columns(tbl) c);
    mapping text := objectid_internal.rekey_name(mapping_table);
    d objectid_internal.rekey_batch_catalog;
BEGIN
    d.lock_statement := (SELECT 'LOCK TABLE ' || string_agg(objectid_internal.rekey_name(x.relid), ', ' ORDER BY x.relid)
                                || ' IN ROW EXCLUSIVE MODE'
                           FROM (SELECT DISTINCT c.relid::oid AS relid FROM unnest(cols) c
                                 UNION SELECT mapping_table) x);
    SELECT array_agg(p.problem), (array_agg(p.code ORDER BY p.code = '42501' DESC))[1]
      INTO d.problems, d.code
      FROM objectid_internal.rekey_problems(tbl, time_column, mapping, fire_triggers, cols) p;
    SELECT string_agg(DISTINCT format('%I.%I', n.nspname, k.conname), ', ')
      INTO d.deferrable_constraints
      FROM pg_constraint k JOIN pg_namespace n ON n.oid OPERATOR(pg_catalog.=) k.connamespace
     WHERE k.condeferrable
       AND (k.conrelid IN (SELECT x.relid::oid FROM objectid_internal.rekey_tables(cols) x)
            OR k.confrelid IN (SELECT x.relid::oid FROM objectid_internal.rekey_tables(cols) x));
    IF d.problems IS NULL THEN
        d.statements := objectid_internal.rekey_statements(tbl, time_column, time_zone, mapping, cols);
    END IF;
    RETURN d;
END
$body$;
