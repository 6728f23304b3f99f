-- What stops a rekey of tbl, one line each, before anything changes. rekey_plan lists them;
-- rekey_run refuses to start or resume while there is any. mapping_table is the name of the
-- mapping table (NULL: the default); for a rekey already started, rekey_name of the recorded one.
-- columns: rekey_columns(tbl) as an array, when the caller has read them already (NULL: read here).
CREATE FUNCTION objectid_internal.rekey_problems(tbl regclass, time_column name, mapping_table text,
                                                 fire_triggers boolean,
                                                 columns objectid_internal.rekey_column[] DEFAULT NULL)
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
    cols objectid_internal.rekey_column[] := coalesce(columns, ARRAY(SELECT c FROM objectid_internal.rekey_columns(tbl) c));
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

    -- Over an array, not a cursor: no cursor is open while the owner's code runs (as_owner.rs).
    FOREACH r IN ARRAY ARRAY(SELECT x FROM (SELECT c.*, cl.relkind, cl.relrowsecurity, cl.relowner, cl.relispartition, a.attgenerated,
                    EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = c.relid OR i.inhparent = c.relid) AS inherits,
                    -- Whether rewriting the column can move a row to another partition: it is in
                    -- the partition key, or may be (an expression) at some level below.
                    EXISTS (SELECT FROM pg_partition_tree(c.relid) t
                              JOIN pg_partitioned_table pt ON pt.partrelid = t.relid
                              JOIN pg_attribute ta ON ta.attrelid = t.relid AND ta.attname = a.attname
                             WHERE ta.attnum = ANY (pt.partattrs::int2[]) OR pt.partexprs IS NOT NULL) AS moves_rows
               FROM unnest(cols) c
               JOIN pg_class cl ON cl.oid = c.relid
               JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum = c.attnum) x)
    LOOP
        IF r.relowner <> owner AND NOT pg_has_role(r.relowner, 'USAGE') THEN
            -- Its statements run as its owner (its triggers, constraints and index expressions
            -- are that owner's code): only a caller who may act as every owner may rekey.
            RETURN QUERY SELECT '42501'::text, format('%s is owned by %s, not by %s, the owner of %s: only a role that may act as'
                               ' both (a superuser, or a member of both roles) may rekey it', r.relid, r.relowner::regrole,
                               owner::regrole, tbl);
        END IF;
        IF r.relispartition THEN
            RETURN QUERY SELECT '55000'::text, format('%s is a partition of %s: rekey the partitioned table, with all its partitions',
                               r.relid, (SELECT i.inhparent::regclass FROM pg_inherits i WHERE i.inhrelid = r.relid));
        ELSIF r.relkind = 'p' THEN
            -- A partitioned table is rewritten through its root, which routes each row to its
            -- partition. A row that moves to another partition is deleted from one and inserted
            -- into the other: PostgreSQL 15 and later run the foreign keys' actions as for an
            -- UPDATE of the root (ExecCrossPartitionUpdateForeignKey); 13 and 14 as a DELETE, which
            -- would cascade to, or null, the rows that reference it.
            IF r.moves_rows AND current_setting('server_version_num')::integer < 150000 THEN
                RETURN QUERY SELECT '55000'::text, format('%s is partitioned by %I, which the rekey rewrites: rows would move between'
                                   ' partitions, and PostgreSQL %s runs such a move''s foreign-key actions as a DELETE;'
                                   ' rekey it on PostgreSQL 15 or later', r.relid, r.attname,
                                   current_setting('server_version_num')::integer / 10000);
            END IF;
        ELSIF r.relkind <> 'r' OR r.inherits THEN
            RETURN QUERY SELECT '55000'::text, format('%s is %s: only plain and partitioned tables can be rekeyed', r.relid,
                               CASE WHEN r.relkind = 'f' THEN 'a foreign table'
                                    WHEN r.inherits THEN 'part of an inheritance tree (not partitioning)'
                                    ELSE 'not a table' END);
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
               FROM unnest(cols) c
               JOIN pg_constraint k ON k.contype = 'f' AND k.conrelid = c.relid AND k.conparentid = 0
               CROSS JOIN LATERAL generate_subscripts(k.conkey, 1) AS i
              WHERE k.conkey[i] = c.attnum
                AND NOT EXISTS (SELECT FROM unnest(cols) t
                                 WHERE t.relid = k.confrelid AND t.attnum = k.confkey[i])
              ORDER BY 1, 2, 3
    LOOP
        RETURN QUERY SELECT '55000'::text, format('%s.%I is also in foreign key %I to %s, whose columns the rekey does not change',
                           r.relid, r.attname, r.conname, r.target);
    END LOOP;

    -- A foreign key that references a partition of a table that changes, rather than the
    -- partitioned table: the rekey would not follow it, and a row that moves to another partition
    -- would fire its ON DELETE action (it is not one PostgreSQL treats as the root's).
    FOR r IN SELECT k.conname, k.conrelid::regclass AS referencing, k.confrelid::regclass AS partition, x.root
               FROM objectid_internal.rekey_tables(cols) x
               JOIN pg_constraint k ON k.contype = 'f' AND k.confrelid = x.relid AND k.conparentid = 0
              WHERE x.relid <> x.root
              ORDER BY 1, 2
    LOOP
        RETURN QUERY SELECT '55000'::text, format('foreign key %I of %s references partition %s of %s, not %s itself:'
                           ' make it reference %s', r.conname, r.referencing, r.partition, r.root, r.root, r.root);
    END LOOP;

    -- A partition's code runs for the rows the rewrite routes to it, as the partitioned table's
    -- owner: it must be that owner's.
    FOR r IN SELECT x.relid, x.root, c.relowner, rc.relowner AS root_owner
               FROM objectid_internal.rekey_tables(cols) x JOIN pg_class c ON c.oid = x.relid
               JOIN pg_class rc ON rc.oid = x.root
              WHERE x.relid <> x.root AND c.relowner <> rc.relowner
              ORDER BY 1
    LOOP
        RETURN QUERY SELECT '42501'::text, format('partition %s of %s is owned by %s, not by %s, the owner of %s: every'
                           ' partition that changes must be its partitioned table''s owner''s', r.relid, r.root,
                           r.relowner::regrole, r.root_owner::regrole, r.root);
    END LOOP;

    -- A foreign key the rekey follows from one owner's table to another's, with an ON UPDATE
    -- action: the rewrite of the referenced table fires it, and should the referencing rows still
    -- hold the old key (the referencing owner's code can see to that), PostgreSQL's action
    -- changes them as their owner but queues their AFTER triggers, and their deferrable
    -- constraints' rechecks, with the referenced table's statement, which fires them as the
    -- referenced table's owner. The rekey rewrites those rows itself: NO ACTION loses nothing.
    -- (A foreign key the rekey follows references columns that change: the key, or columns that
    -- reference it.)
    FOR r IN SELECT k.conname, k.conrelid::regclass AS referencing, k.confrelid::regclass AS referenced,
                    CASE k.confupdtype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' ELSE 'SET DEFAULT' END AS action,
                    fc.relowner AS referencing_owner, pc.relowner AS referenced_owner
               FROM pg_constraint k
               JOIN pg_class fc ON fc.oid = k.conrelid
               JOIN pg_class pc ON pc.oid = k.confrelid
              WHERE k.contype = 'f' AND k.conparentid = 0 AND k.confupdtype IN ('c', 'n', 'd')
                AND fc.relowner <> pc.relowner
                AND EXISTS (SELECT FROM unnest(cols) c WHERE c.relid = k.confrelid AND c.attnum = ANY (k.confkey))
              ORDER BY 2, 1
    LOOP
        RETURN QUERY SELECT '55000'::text, format('foreign key %I of %s (owned by %s) references %s (owned by %s) ON UPDATE %s:'
                           ' its action would fire the triggers of %s as %s; make it ON UPDATE NO ACTION for the rekey,'
                           ' which rewrites those rows itself', r.conname, r.referencing, r.referencing_owner::regrole,
                           r.referenced, r.referenced_owner::regrole, r.action, r.referencing, r.referenced_owner::regrole);
    END LOOP;

    -- A foreign key the rekey does not follow (it references other columns of a table that
    -- changes) with an ON UPDATE action. Its action runs only if a referenced column changes in
    -- the rewrite, which sets only the key's columns: a stored generated column made from one of
    -- them can, and so can a BEFORE row trigger the run fires on the referenced table (an UPDATE
    -- rule is refused below). Then PostgreSQL's action would change the referencing rows in the
    -- middle of the rekey: refused. Where the two tables have different owners it is refused in
    -- any case: the action changes the referencing rows as their owner but queues their AFTER
    -- triggers with the referenced table's statement, which fires them as the referenced table's
    -- owner, should anything the rewrite runs change those columns after all. Between tables of
    -- one owner nothing runs as another role. Foreign keys from partitions to partitions are made
    -- by PostgreSQL for those of their partitioned tables.
    FOR r IN SELECT k.conname, k.conrelid::regclass AS referencing, k.confrelid::regclass AS referenced,
                    CASE k.confupdtype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' ELSE 'SET DEFAULT' END AS action,
                    fc.relowner AS referencing_owner, pc.relowner AS referenced_owner,
                    (SELECT string_agg(DISTINCT format('%I', ga.attname), ', ')
                       FROM pg_attribute ga
                       -- A generated column's expression is its default. The columns it reads
                       -- are recorded as dependencies of the column itself on some releases
                       -- (StoreAttrDefault's colobject) and of its pg_attrdef row on others
                       -- (defobject): both are taken.
                       JOIN pg_attrdef ad ON ad.adrelid = ga.attrelid AND ad.adnum = ga.attnum
                       JOIN pg_depend d ON ((d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid)
                                            OR (d.classid = 'pg_class'::regclass AND d.objid = ga.attrelid
                                                AND d.objsubid = ga.attnum))
                                       AND d.refclassid = 'pg_class'::regclass AND d.refobjid = ga.attrelid
                       JOIN unnest(cols) c ON c.relid = k.confrelid AND c.attnum = d.refobjsubid
                      WHERE ga.attrelid = k.confrelid AND ga.attnum = ANY (k.confkey) AND ga.attgenerated <> '') AS generated,
                    (SELECT string_agg(format('%I', f.trigger_name), ', ' ORDER BY f.trigger_name)
                       FROM objectid_internal.rekey_fired_triggers(cols) f
                      WHERE f.before AND f.root = k.confrelid) AS before_triggers
               FROM pg_constraint k
               JOIN pg_class fc ON fc.oid = k.conrelid
               JOIN pg_class pc ON pc.oid = k.confrelid
              WHERE k.contype = 'f' AND k.conparentid = 0 AND k.confupdtype IN ('c', 'n', 'd')
                AND k.confrelid IN (SELECT x.relid FROM objectid_internal.rekey_tables(cols) x)
                AND NOT EXISTS (SELECT FROM unnest(cols) c WHERE c.relid = k.confrelid AND c.attnum = ANY (k.confkey))
              ORDER BY 2, 1
    LOOP
        IF r.generated IS NOT NULL THEN
            RETURN QUERY SELECT '55000'::text, format('foreign key %I of %s references %s (%s), generated from columns the rekey'
                               ' rewrites, ON UPDATE %s: the rewrite would change them and its action would change %s;'
                               ' make it ON UPDATE NO ACTION for the rekey', r.conname, r.referencing, r.referenced,
                               r.generated, r.action, r.referencing);
        ELSIF r.before_triggers IS NOT NULL THEN
            RETURN QUERY SELECT '55000'::text, format('foreign key %I of %s references columns of %s ON UPDATE %s, and the run'
                               ' fires BEFORE trigger %s on %s, which could change them: its action would change %s;'
                               ' make it ON UPDATE NO ACTION for the rekey, or disable the trigger',
                               r.conname, r.referencing, r.referenced, r.action, r.before_triggers, r.referenced,
                               r.referencing);
        ELSIF r.referencing_owner <> r.referenced_owner THEN
            RETURN QUERY SELECT '55000'::text, format('foreign key %I of %s (owned by %s) references columns of %s (owned by %s)'
                               ' other than the key, ON UPDATE %s: should they change during the rekey, its action would'
                               ' fire the triggers of %s as %s; make it ON UPDATE NO ACTION for the rekey', r.conname,
                               r.referencing, r.referencing_owner::regrole, r.referenced, r.referenced_owner::regrole,
                               r.action, r.referencing, r.referenced_owner::regrole);
        END IF;
    END LOOP;

    -- Further down: should such a column change after all (an AFTER trigger the run fires, of the
    -- referenced table's owner, may update it), the action's update of the referencing table runs
    -- that table's own ON UPDATE actions in turn, and the AFTER triggers of every table the chain
    -- reaches are queued with the rewrite's statement, which fires them as the rewritten table's
    -- owner. So every table reached through ON UPDATE actions (partitions included) must have that
    -- owner; the first step is refused above where it does not.
    FOR r IN WITH RECURSIVE reach(root_owner, depth, relid, conname, referenced) AS (
                 SELECT pc.relowner, 1, k.conrelid, k.conname, k.confrelid
                   FROM pg_constraint k
                   JOIN pg_class pc ON pc.oid = k.confrelid
                  WHERE k.contype = 'f' AND k.conparentid = 0 AND k.confupdtype IN ('c', 'n', 'd')
                    AND k.confrelid IN (SELECT x.relid FROM objectid_internal.rekey_tables(cols) x)
                    AND NOT EXISTS (SELECT FROM unnest(cols) c WHERE c.relid = k.confrelid AND c.attnum = ANY (k.confkey))
                 UNION
                 -- Every foreign key to a table reached or one of its partitions, the partitions'
                 -- own copies included; the depth stops at 2 so that a cycle ends.
                 SELECT h.root_owner, 2, k.conrelid, k.conname, k.confrelid
                   FROM reach h
                   JOIN pg_constraint k ON k.contype = 'f' AND k.confupdtype IN ('c', 'n', 'd')
                                       AND (k.confrelid = h.relid
                                            OR k.confrelid IN (SELECT p.relid FROM pg_partition_tree(h.relid) p))
             )
             SELECT DISTINCT ON (t.oid) t.oid::regclass AS tbl, t.relowner AS tbl_owner, h.conname,
                    h.relid::regclass AS referencing, h.referenced::regclass AS referenced, h.root_owner
               FROM reach h
               -- pg_partition_tree gives nothing for a table that is not partitioned.
               JOIN pg_class t ON t.oid = h.relid OR t.oid IN (SELECT p.relid FROM pg_partition_tree(h.relid) p)
              -- The first step's own table is refused above.
              WHERE t.relowner <> h.root_owner AND (h.depth > 1 OR t.oid <> h.relid)
              ORDER BY t.oid, h.depth, h.conname
    LOOP
        RETURN QUERY SELECT '55000'::text, format('foreign key %I of %s references %s ON UPDATE, in a chain of ON UPDATE'
                           ' actions from a table the rekey rewrites (owned by %s), and %s is owned by %s: should a'
                           ' column the chain follows change during the rekey, it would fire the triggers of %s as %s;'
                           ' make the chain''s foreign keys ON UPDATE NO ACTION for the rekey', r.conname,
                           r.referencing, r.referenced, r.root_owner::regrole, r.tbl, r.tbl_owner::regrole, r.tbl,
                           r.root_owner::regrole);
    END LOOP;

    -- User triggers that the rewrite fires (rekey_fired_triggers), on every table it touches.
    FOR r IN SELECT f.relid, f.trigger_name AS tgname FROM objectid_internal.rekey_fired_triggers(cols) f
              WHERE NOT fire_triggers
              ORDER BY 1, 2
    LOOP
        RETURN QUERY SELECT '55000'::text, format('trigger %I on %s would fire on the rewrite of every row: disable it, or pass fire_triggers => true',
                           r.tgname, r.relid);
    END LOOP;
    FOR r IN SELECT DISTINCT x.relid, w.rulename
               FROM objectid_internal.rekey_tables(cols) x JOIN pg_rewrite w ON w.ev_class = x.relid
              WHERE w.ev_type = '2' ORDER BY 1, 2
    LOOP
        RETURN QUERY SELECT '55000'::text, format('rule %I on %s rewrites UPDATE: drop it for the rekey', r.rulename, r.relid);
    END LOOP;

    mapping_oid := to_regclass(mapping);
    IF mapping_oid IS NULL THEN
        -- Made by the caller, then given to the table's owner, who must be allowed to own it there
        -- (unless a superuser gives it).
        mapping_schema := coalesce((parse_ident(mapping))[cardinality(parse_ident(mapping)) - 1], current_schema());
        -- to_regnamespace parses its argument as an identifier: quoted, so that "Sales" stays Sales.
        IF to_regnamespace(quote_ident(mapping_schema)) IS NULL THEN
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
