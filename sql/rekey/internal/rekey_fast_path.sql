-- Whether a batch's rewrite of tbl's keys takes the fast path, leaving out the foreign-key checks
-- it satisfies by construction (src/rekey/implied_checks.rs), and if not, why: 'on'; 'on, but
-- ...' where some tables keep their per-row checks; 'off: ...'. Decided for each table the
-- rewrite statement changes (the key owner's: other owners' tables are rewritten in statements of
-- their own, which keep every check) by what can run there, as PostgreSQL decides it: row-level
-- security only where it applies to the owner, who runs the rewrite (check_enable_rls in
-- rls.c: enabled, forced on the owner, and the owner neither a superuser nor BYPASSRLS); a rule
-- only for UPDATE; a trigger only where it fires (rekey_fired_triggers), and then only a BEFORE
-- row trigger, which can store another value than the new key, keeps its table's per-row checks
-- (an AFTER trigger runs once the row is stored; the set-based check after the rewrite sees what
-- it does). mapping_table: the recorded one, or NULL before it is made (it is made unique).
-- rekey_plan shows the answer before the run, rekey_status after each batch.
CREATE FUNCTION objectid_internal.rekey_fast_path(tbl regclass, mapping_table oid,
                                                  columns objectid_internal.rekey_column[])
    RETURNS text
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    owner oid := (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl);
    key name := objectid_internal.rekey_key_column(tbl);
    why text;
BEGIN
    IF tbl IS NULL OR columns IS NULL THEN
        RETURN NULL;
    END IF;
    -- Read as text: before the library is loaded here, a value set for the placeholder is not
    -- checked, and must not make this fail.
    IF lower(coalesce(current_setting('pg_objectid.rekey_implied_checks', true), 'on')) ~ '^(off?|f(a(l(se?)?)?)?|no?|0)$' THEN
        RETURN 'off: pg_objectid.rekey_implied_checks is off';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_constraint k
                     JOIN pg_class f ON f.oid = k.conrelid
                     JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = key
                    WHERE k.contype = 'f' AND k.conparentid = 0 AND k.confrelid = tbl
                      AND cardinality(k.confkey) = 1 AND k.confkey[1] = a.attnum AND f.relowner = owner) THEN
        RETURN format('off: no table of %s references the key, so there is no check to leave out', owner::regrole);
    END IF;
    SELECT string_agg(format('row-level security applies to %s on %s', owner::regrole, c.oid::regclass), '; ' ORDER BY c.oid)
      INTO why
      FROM objectid_internal.rekey_tables(columns) x JOIN pg_class c ON c.oid = x.relid
     WHERE c.relowner = owner AND c.relrowsecurity AND c.relforcerowsecurity
       AND NOT EXISTS (SELECT FROM pg_roles r WHERE r.oid = owner AND (r.rolsuper OR r.rolbypassrls));
    IF why IS NOT NULL THEN
        RETURN 'off: ' || why;
    END IF;
    SELECT string_agg(format('rule %I on %s rewrites UPDATE', w.rulename, w.ev_class::regclass), '; ' ORDER BY w.oid)
      INTO why
      FROM objectid_internal.rekey_tables(columns) x
      JOIN pg_class c ON c.oid = x.relid
      JOIN pg_rewrite w ON w.ev_class = x.relid
     WHERE c.relowner = owner AND w.ev_type = '2';
    IF why IS NOT NULL THEN
        RETURN 'off: ' || why;
    END IF;
    IF mapping_table IS NOT NULL
       AND NOT EXISTS (SELECT FROM pg_index i
                         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attname = 'old_key'
                        WHERE i.indrelid = mapping_table AND i.indisunique AND i.indimmediate AND i.indisvalid
                          AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indnatts = 1
                          AND i.indkey[0] = a.attnum) THEN
        RETURN format('off: the mapping table %s has no unique index on old_key', mapping_table::regclass);
    END IF;
    SELECT string_agg(format('BEFORE trigger %I fires on %s', f.trigger_name, f.relid), ', ' ORDER BY f.relid::oid, f.trigger_name)
      INTO why
      FROM objectid_internal.rekey_fired_triggers(columns) f JOIN pg_class c ON c.oid = f.relid
     WHERE f.before AND c.relowner = owner;
    IF why IS NOT NULL THEN
        RETURN 'on, but for the per-row checks of the tables where ' || why;
    END IF;
    RETURN 'on';
END
$body$;
