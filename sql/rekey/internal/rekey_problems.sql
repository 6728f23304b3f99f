-- What stops a rekey of tbl, one line each, before anything changes. rekey_plan lists them;
-- rekey_run refuses to start or resume while there is any. mapping_table is the name of the
-- mapping table (NULL: the default); for a rekey already started, rekey_name of the recorded one.
CREATE FUNCTION objectid_internal.rekey_problems(tbl regclass, time_column name, mapping_table text,
                                                 fire_triggers boolean)
    RETURNS TABLE (code text, problem text)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := objectid_internal.rekey_key_column(tbl);
    owner oid := (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl);
    mapping text := objectid_internal.rekey_mapping_name(tbl, mapping_table);
    mapping_oid regclass;
    mapping_schema text;
    problem text;
    r record;
BEGIN
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RETURN QUERY SELECT '42501'::text, format('permission denied: only the owner of %s (%s) or a member of its role may rekey it',
                           tbl, owner::regrole);
    END IF;
    IF time_column IS NULL THEN
        RETURN QUERY SELECT '55000'::text, format('no time column: name the column that holds each row''s creation time (candidates: %s)',
                           coalesce(nullif(array_to_string(objectid_internal.rekey_time_columns(tbl), ', '), ''), 'none'));
    ELSIF NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = time_column
                         AND a.attnum > 0 AND NOT a.attisdropped) THEN
        RETURN QUERY SELECT '55000'::text, format('time column "%s" does not exist in %s', time_column, tbl);
    ELSIF objectid_internal.rekey_time_expression(tbl, time_column, 'UTC') IS NULL THEN
        RETURN QUERY SELECT '55000'::text, format('time column "%s" of %s is of type %s, not timestamptz, timestamp or date', time_column, tbl,
                           (SELECT a.atttypid::regtype FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = time_column));
    ELSIF NOT has_column_privilege(owner, tbl, time_column, 'SELECT') THEN
        RETURN QUERY SELECT '42501'::text, format('permission denied: %s cannot read column %s of %s', owner::regrole,
                                                 time_column, tbl);
    END IF;

    FOR r IN SELECT c.*, cl.relkind, cl.relrowsecurity, cl.relowner, a.attgenerated,
                    EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = c.relid OR i.inhparent = c.relid) AS inherits
               FROM objectid_internal.rekey_columns(tbl) c
               JOIN pg_class cl ON cl.oid = c.relid
               JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum = c.attnum
    LOOP
        IF r.relowner <> owner THEN
            -- Its triggers, CHECK constraints and index expressions would run as whoever rekeys.
            RETURN QUERY SELECT '42501'::text, format('%s is owned by %s, not by %s, the owner of %s: every table that changes must be the same owner''s',
                               r.relid, r.relowner::regrole, owner::regrole, tbl);
        END IF;
        IF r.relkind <> 'r' OR r.inherits THEN
            RETURN QUERY SELECT '55000'::text, format('%s is %s: only plain tables without inheritance can be rekeyed', r.relid,
                               CASE WHEN r.relkind = 'p' THEN 'partitioned' WHEN r.relkind = 'f' THEN 'a foreign table'
                                    WHEN r.inherits THEN 'part of an inheritance tree or a partition'
                                    ELSE 'not a plain table' END);
        END IF;
        IF r.atttype <> 'uuid'::regtype THEN
            RETURN QUERY SELECT '55000'::text, format('%s.%I references the key but is of type %s, not uuid', r.relid, r.attname, r.atttype);
        END IF;
        IF r.attgenerated <> '' THEN
            RETURN QUERY SELECT '55000'::text, format('%s.%I references the key but is a generated column', r.relid, r.attname);
        END IF;
        IF r.depth > 0 AND NOT objectid_internal.rekey_column_indexed(r.relid, r.attnum) THEN
            RETURN QUERY SELECT '55000'::text, format('%s.%I references the key but no btree index starts with it: CREATE INDEX CONCURRENTLY ON %s (%I)',
                               r.relid, r.attname, r.relid, r.attname);
        END IF;
        -- What the batch's statements will meet, running as the owner: its privileges, and
        -- row-level security when forced on the owner.
        IF NOT has_column_privilege(r.relowner, r.relid, r.attnum, 'UPDATE')
           OR NOT has_column_privilege(r.relowner, r.relid, r.attnum, 'SELECT') THEN
            RETURN QUERY SELECT '42501'::text, format('permission denied: %s cannot read and update column %I of %s',
                                                     r.relowner::regrole, r.attname, r.relid);
        END IF;
        IF r.relrowsecurity AND pg_has_role(r.relowner, 'USAGE') THEN
            IF (objectid_internal.rekey_read_as_owner(r.relid::oid,
                    format('SELECT pg_catalog.row_security_active(%s::pg_catalog.oid) AS active', r.relid::oid))
                OPERATOR(pg_catalog.->>) 'active'::text)::boolean THEN
                RETURN QUERY SELECT '55000'::text,
                    format('row-level security applies to %s on %s: a rekey must see and update every row',
                           r.relowner::regrole, r.relid);
            END IF;
        END IF;
    END LOOP;

    -- A rewritten column that is also in a foreign key to columns the rekey does not change: its
    -- new values would have to exist there (the table's key itself referencing another table, say).
    FOR r IN SELECT DISTINCT c.relid, c.attname, k.conname, k.confrelid::regclass AS target
               FROM objectid_internal.rekey_columns(tbl) c
               JOIN pg_constraint k ON k.contype = 'f' AND k.conrelid = c.relid
               CROSS JOIN LATERAL generate_subscripts(k.conkey, 1) AS i
              WHERE k.conkey[i] = c.attnum
                AND NOT EXISTS (SELECT FROM objectid_internal.rekey_columns(tbl) t
                                 WHERE t.relid = k.confrelid AND t.attnum = k.confkey[i])
              ORDER BY 1, 2, 3
    LOOP
        RETURN QUERY SELECT '55000'::text, format('%s.%I is also in foreign key %I to %s, whose columns the rekey does not change',
                           r.relid, r.attname, r.conname, r.target);
    END LOOP;

    FOR r IN SELECT DISTINCT c.relid, t.tgname
               FROM objectid_internal.rekey_columns(tbl) c
               JOIN pg_trigger t ON t.tgrelid = c.relid
              WHERE NOT t.tgisinternal AND t.tgenabled <> 'D' AND (t.tgtype & 16) <> 0
                AND (cardinality(t.tgattr::int2[]) = 0
                     OR EXISTS (SELECT FROM objectid_internal.rekey_columns(tbl) c2
                                 WHERE c2.relid = c.relid AND c2.attnum = ANY (t.tgattr::int2[])))
                AND NOT fire_triggers
              ORDER BY 1, 2
    LOOP
        RETURN QUERY SELECT '55000'::text, format('trigger %I on %s would fire on the rewrite of every row: disable it, or pass fire_triggers => true',
                           r.tgname, r.relid);
    END LOOP;
    FOR r IN SELECT DISTINCT c.relid, w.rulename
               FROM objectid_internal.rekey_columns(tbl) c JOIN pg_rewrite w ON w.ev_class = c.relid
              WHERE w.ev_type = '2' ORDER BY 1, 2
    LOOP
        RETURN QUERY SELECT '55000'::text, format('rule %I on %s rewrites UPDATE: drop it for the rekey', r.rulename, r.relid);
    END LOOP;

    mapping_oid := to_regclass(mapping);
    IF mapping_oid IS NULL THEN
        -- Made by the caller, then given to the table's owner, who must be allowed to own it there
        -- (unless a superuser gives it).
        mapping_schema := coalesce((parse_ident(mapping))[cardinality(parse_ident(mapping)) - 1], current_schema());
        IF to_regnamespace(mapping_schema) IS NULL THEN
            RETURN QUERY SELECT '55000'::text, format('schema %s of the mapping table %s does not exist', mapping_schema, mapping);
        ELSIF NOT has_schema_privilege(mapping_schema, 'CREATE')
              OR NOT (has_schema_privilege(owner, mapping_schema, 'CREATE')
                      OR (SELECT rl.rolsuper FROM pg_roles rl WHERE rl.rolname = current_user)) THEN
            RETURN QUERY SELECT '42501'::text, format('permission denied: you and %s must both be allowed to create the mapping table %s',
                               owner::regrole, mapping);
        END IF;
    ELSE
        problem := objectid_internal.rekey_mapping_problem(tbl, mapping_oid);
        IF problem IS NOT NULL THEN
            RETURN QUERY SELECT '55000'::text, problem;
        ELSIF NOT (has_table_privilege(owner, mapping_oid, 'SELECT') AND has_table_privilege(owner, mapping_oid, 'INSERT')) THEN
            RETURN QUERY SELECT '42501'::text, format('permission denied: %s cannot read and insert into the mapping table %s',
                                                     owner::regrole, mapping);
        END IF;
    END IF;
END
$body$;
