-- pg_objectid 0.2.0 -> 0.3.0.
--
-- Adds the rekey toolkit (docs/migration.md): what follows is sql/rekey.sql as it stood in 0.3.0,
-- which the update test (tests/server/extension.rs) checks object by object against a fresh
-- install.
\echo Use "ALTER EXTENSION pg_objectid UPDATE TO '0.3.0'" to load this file. \quit

-- This script names @extschema@ inside function bodies and string literals, where a schema name
-- holding a quote, a dollar sign or a backslash could end the quoting and run what follows as
-- the superuser that runs the update. PostgreSQL refuses such names itself from 13.12, 14.9, 15.4
-- and 16.0 on (execute_extension_script); on older minor releases this refuses them first,
-- before any statement that names the schema.
DO $guard$
BEGIN
    IF pg_catalog.current_schema() OPERATOR(pg_catalog.~) '[$''"\\]' THEN
        RAISE EXCEPTION 'invalid character in extension "pg_objectid" schema: must not contain any of ""$''\"'
            USING ERRCODE = 'invalid_text_representation';
    END IF;
END
$guard$;

-- The rekey toolkit: move a table's random UUIDv4 primary key, and every column that references
-- it, to UUIDv7 keys carrying each row's creation time, online. docs/migration.md walks it through:
--
--   rekey_assess(table) / rekey_assess_schema(schema)   what there is: versions, order, density, references
--   rekey_references(table)                            every foreign key that must follow the key
--   rekey_plan(table, time_column)                     the exact steps, locks, rows and problems; changes nothing
--   rekey_switch_default(table)                        new rows get uuidv7() at once
--   CALL rekey_run(table, time_column)                 rekey in batches, one transaction each, resumable
--   rekey_status                                       progress, from any session
--   rekey_translate(table, old_key)                    old key -> new key, from the mapping table
--   rekey_verify(table)                                what is left, constraints, counts against the start
--   rekey_forget(table)                                drop the recorded state (the mapping table stays)
--
-- How parent and children change together: each batch locks its parent rows (FOR UPDATE), records
-- old -> new in the mapping table, then rewrites the key and every referencing column in one
-- statement, one data-modifying WITH query. PostgreSQL runs the foreign keys' checks and actions
-- at the end of that statement (AfterTriggerEndQuery, after every sub-statement), when parent and
-- children agree again; so no constraint is altered, deferred or re-validated, whatever its
-- ON UPDATE action: a cascade or SET NULL finds no child left with the old key.
--
-- Privileges: everything runs as the caller, nothing here is SECURITY DEFINER. Only the table's
-- owner (or a member of its role) may start, run or forget a rekey, and the mapping table belongs
-- to the table's owner: the state and the mapping table are then only as trustworthy as the table
-- itself, for whoever later translates or verifies. No stored text is ever run as SQL: tables are
-- recorded by OID and named through rekey_name, columns quoted with %I, time zones with %L.

-- Whether the calling procedure may COMMIT (src/rekey/mod.rs).
CREATE FUNCTION @extschema@.rekey_can_commit()
    RETURNS boolean
    LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED
    AS 'MODULE_PATHNAME', 'rekey_can_commit_wrapper';

-- One row per table being rekeyed or rekeyed. Its progress columns change in the same transaction
-- as the batch they count, so that a run killed at any point resumes exactly where the last
-- committed batch left it. Row-level security shows each row to whoever may read the table and
-- lets only the table's owner (or a member of its role) write it.
CREATE TABLE @extschema@.rekey_state (
    relid oid PRIMARY KEY,
    -- The table's primary key constraint when the rekey started: a table dropped and another made
    -- with the same OID does not inherit the state (rekey_state_of).
    key_constraint oid NOT NULL,
    key_column name NOT NULL,
    time_column name NOT NULL,
    -- A time column without time zone is read in the zone of the first run, in every run.
    time_zone text NOT NULL,
    fallback_time timestamptz NOT NULL,
    mapping_table oid NOT NULL,
    -- Pass 1 walks the keys in order from high_water; pass 2 sweeps again from the start for
    -- version-4 keys inserted behind pass 1.
    pass integer NOT NULL DEFAULT 1,
    high_water uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000',
    keys_total bigint NOT NULL,
    keys_done bigint NOT NULL DEFAULT 0,
    batches bigint NOT NULL DEFAULT 0,
    runs integer NOT NULL DEFAULT 1,
    started_at timestamptz NOT NULL,
    run_started_at timestamptz NOT NULL,
    run_keys_done bigint NOT NULL DEFAULT 0,
    last_batch_at timestamptz,
    finished_at timestamptz,
    -- The session running it (rekey_runner), recorded by the owner's run: an advisory lock alone
    -- can be taken by anyone.
    runner_pid integer,
    runner_started timestamptz,
    -- Row counts and foreign-key join counts when the rekey started, by table OID and constraint
    -- OID, for rekey_verify.
    snapshot jsonb NOT NULL
);

ALTER TABLE @extschema@.rekey_state ENABLE ROW LEVEL SECURITY;
CREATE POLICY rekey_state_read ON @extschema@.rekey_state FOR SELECT
    USING (has_table_privilege(relid, 'SELECT'));
CREATE POLICY rekey_state_insert ON @extschema@.rekey_state FOR INSERT
    WITH CHECK (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'));
CREATE POLICY rekey_state_update ON @extschema@.rekey_state FOR UPDATE
    USING (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'))
    WITH CHECK (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'));
CREATE POLICY rekey_state_delete ON @extschema@.rekey_state FOR DELETE
    USING (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON @extschema@.rekey_state TO PUBLIC;

-- The same rule for roles that bypass row-level security: a trigger, which they do not bypass.
CREATE FUNCTION @extschema@.rekey_state_guard()
    RETURNS trigger
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    rel oid := CASE WHEN TG_OP = 'INSERT' THEN NEW.relid ELSE OLD.relid END;
BEGIN
    IF NOT coalesce(pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = rel), 'USAGE'), false)
       AND NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user) THEN
        RAISE EXCEPTION 'only the owner of the table (OID %) may change the record of its rekey', rel
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.relid <> OLD.relid THEN
        RAISE EXCEPTION 'the record of a rekey cannot move to another table' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$body$;

CREATE TRIGGER rekey_state_guard BEFORE INSERT OR UPDATE OR DELETE ON @extschema@.rekey_state
    FOR EACH ROW EXECUTE FUNCTION @extschema@.rekey_state_guard();

-- A relation's name, schema-qualified and quoted whatever the search_path: how every statement
-- here names a table it runs against. NULL when there is no such relation.
CREATE FUNCTION @extschema@.rekey_name(relid oid)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT format('%I.%I', n.nspname, c.relname)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.oid = relid
$body$;

-- The session that runs the rekey of a table in this database, or NULL: the one its record names,
-- or one that holds its rekey lock and may rekey it (a member of the owner's role: anyone can take
-- an advisory lock, so a holder without that right neither counts as a runner nor stops one);
-- with busy_only, only while it runs a statement.
CREATE FUNCTION @extschema@.rekey_runner(relid oid, busy_only boolean)
    RETURNS integer
    LANGUAGE sql STABLE STRICT PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT x.pid FROM (
    SELECT l.pid, a.state
      FROM pg_locks l
      JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted
       AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
       AND l.classid = 1919249273::oid AND l.objid = relid AND l.objsubid = 1::smallint
       AND pg_has_role(a.usesysid, (SELECT c.relowner FROM pg_class c WHERE c.oid = relid), 'USAGE')
    UNION ALL
    SELECT a.pid, a.state
      FROM @extschema@.rekey_state s
      JOIN pg_stat_activity a ON a.pid = s.runner_pid AND a.backend_start = s.runner_started
     WHERE s.relid = rekey_runner.relid) x
 WHERE NOT busy_only OR x.state IS NULL OR x.state <> 'idle'
 LIMIT 1
$body$;

-- The key: a primary key of exactly one uuid column, or a clear error.
CREATE FUNCTION @extschema@.rekey_key_column(tbl regclass)
    RETURNS name
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key_columns name[];
    key_type regtype;
BEGIN
    SELECT array_agg(a.attname ORDER BY k.n), min(a.atttypid)::regtype
      INTO key_columns, key_type
      FROM pg_constraint c
      CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
      JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
     WHERE c.conrelid = tbl AND c.contype = 'p';
    IF key_columns IS NULL THEN
        RAISE EXCEPTION 'table % has no primary key', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'The rekey toolkit moves a primary key of one uuid column and the columns that reference it.';
    ELSIF cardinality(key_columns) > 1 THEN
        RAISE EXCEPTION 'the primary key of % has % columns (%), not one',
                tbl, cardinality(key_columns), array_to_string(key_columns, ', ')
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'The rekey toolkit moves a primary key of one uuid column and the columns that reference it.';
    ELSIF key_type <> 'uuid'::regtype THEN
        RAISE EXCEPTION 'the primary key column % of % is of type %, not uuid', key_columns[1], tbl, key_type
            USING ERRCODE = 'datatype_mismatch';
    END IF;
    RETURN key_columns[1];
END
$body$;

-- Every column that holds values of the key: the key, every column that references it, and every
-- column that references one of those (a child's key used by a grandchild), with the number of
-- foreign keys between it and the key. These change together in each batch.
CREATE FUNCTION @extschema@.rekey_columns(tbl regclass)
    RETURNS TABLE (relid regclass, attnum smallint, attname name, atttype regtype, depth integer)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
WITH RECURSIVE reach (relid, attnum, depth, path) AS (
    SELECT tbl::oid, a.attnum, 0, ARRAY[tbl::oid::text || ':' || a.attnum]
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = @extschema@.rekey_key_column(tbl)
    UNION ALL
    SELECT c.conrelid, c.conkey[i], r.depth + 1, r.path || (c.conrelid::text || ':' || c.conkey[i])
      FROM reach r
      JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = r.relid
      CROSS JOIN LATERAL generate_subscripts(c.confkey, 1) AS i
     WHERE c.confkey[i] = r.attnum
       AND NOT (c.conrelid::text || ':' || c.conkey[i]) = ANY (r.path)
)
SELECT r.relid::regclass, r.attnum, a.attname, a.atttypid::regtype, min(r.depth)
  FROM reach r
  JOIN pg_attribute a ON a.attrelid = r.relid AND a.attnum = r.attnum
 GROUP BY r.relid, r.attnum, a.attname, a.atttypid
 ORDER BY min(r.depth), r.relid::regclass::text, r.attnum
$body$;

-- Whether the toolkit may read a table that changes with tbl's key: one of tbl's owner (another
-- role's policies or casts would run as the reader), whose columns that change are all uuid.
CREATE FUNCTION @extschema@.rekey_readable(tbl regclass, relid oid)
    RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT (SELECT c.relowner FROM pg_class c WHERE c.oid = relid) OPERATOR(pg_catalog.=)
       (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl)
   AND NOT EXISTS (SELECT FROM @extschema@.rekey_columns(tbl) x
                    WHERE x.relid OPERATOR(pg_catalog.=) rekey_readable.relid AND x.atttype <> 'uuid'::regtype)
$body$;

-- Whether a btree index, valid and not partial, starts with the column: what each batch needs to
-- find the rows holding a batch's keys without reading the whole table.
CREATE FUNCTION @extschema@.rekey_column_indexed(relid regclass, attnum smallint)
    RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT EXISTS (
    SELECT FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
     WHERE i.indrelid = relid AND i.indkey[0] = attnum AND i.indisvalid AND i.indisready
       AND i.indpred IS NULL AND ic.relam = (SELECT oid FROM pg_am WHERE amname = 'btree'))
$body$;

-- Every foreign key that must follow the key, recursively: those whose referenced columns include
-- one of rekey_columns(tbl).
CREATE FUNCTION @extschema@.rekey_references(tbl regclass)
    RETURNS TABLE (depth integer, constraint_name name, referencing_table regclass,
                   referencing_columns name[], referenced_table regclass, referenced_columns name[],
                   rekeyed_columns name[], column_types regtype[], on_update text, on_delete text,
                   is_deferrable boolean, initially_deferred boolean, validated boolean, indexed boolean,
                   constraint_id oid)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
WITH cols AS (SELECT * FROM @extschema@.rekey_columns(tbl))
SELECT (SELECT min(p.depth) + 1 FROM cols p
         WHERE p.relid = c.confrelid AND p.attnum = ANY (c.confkey)),
       c.conname, c.conrelid::regclass,
       (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(c.conkey) WITH ORDINALITY k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum),
       c.confrelid::regclass,
       (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(c.confkey) WITH ORDINALITY k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum),
       rk.names, rk.types,
       CASE c.confupdtype WHEN 'a' THEN 'NO ACTION' WHEN 'r' THEN 'RESTRICT' WHEN 'c' THEN 'CASCADE'
                          WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' END,
       CASE c.confdeltype WHEN 'a' THEN 'NO ACTION' WHEN 'r' THEN 'RESTRICT' WHEN 'c' THEN 'CASCADE'
                          WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' END,
       c.condeferrable, c.condeferred, c.convalidated,
       rk.indexed, c.oid
  FROM pg_constraint c
  CROSS JOIN LATERAL (
      SELECT array_agg(x.attname ORDER BY x.attnum) AS names,
             array_agg(x.atttype ORDER BY x.attnum) AS types,
             bool_and(@extschema@.rekey_column_indexed(x.relid, x.attnum)) AS indexed
        FROM cols x WHERE x.relid = c.conrelid AND x.attnum = ANY (c.conkey)) rk
 WHERE c.contype = 'f'
   AND EXISTS (SELECT FROM cols p WHERE p.relid = c.confrelid AND p.attnum = ANY (c.confkey))
 ORDER BY 1, c.conrelid::regclass::text, c.conname
$body$;

-- A SQL expression, over the table aliased t, for the creation time in a time column as a
-- timestamptz; NULL when the column does not exist or is of no time type.
CREATE FUNCTION @extschema@.rekey_time_expression(tbl regclass, time_column name, time_zone text)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT CASE a.atttypid
         WHEN 'timestamptz'::regtype THEN format('t.%I', a.attname)
         WHEN 'timestamp'::regtype THEN format('(t.%I AT TIME ZONE %L)', a.attname, time_zone)
         WHEN 'date'::regtype THEN format('(t.%I::timestamp AT TIME ZONE %L)', a.attname, time_zone)
       END
  FROM pg_attribute a
 WHERE a.attrelid = tbl AND a.attname = time_column AND a.attnum > 0 AND NOT a.attisdropped
$body$;

-- The mapping table's name, quoted and schema-qualified: the given one (parsed as an identifier,
-- so that it can only ever name a table; without a schema, in the table's), or <table>_rekey_map
-- beside the table. Never resolved through the search_path.
CREATE FUNCTION @extschema@.rekey_mapping_name(tbl regclass, mapping_table text)
    RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT CASE WHEN mapping_table IS NULL
            THEN (SELECT format('%I.%I', n.nspname, left(c.relname, 53) || '_rekey_map')
                    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE c.oid = tbl)
            WHEN cardinality(parse_ident(mapping_table)) = 1
            THEN (SELECT format('%I.%I', n.nspname, (parse_ident(mapping_table))[1])
                    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE c.oid = tbl)
            ELSE (SELECT string_agg(quote_ident(p.part), '.' ORDER BY p.n)
                    FROM unnest(parse_ident(mapping_table)) WITH ORDINALITY AS p(part, n))
       END
$body$;

-- The comment a mapping table is made with: it binds the mapping table to its table (by OID and
-- primary key constraint), so that a rekey adopts an existing mapping table (after rekey_forget)
-- only when it was made for that very table.
CREATE FUNCTION @extschema@.rekey_mapping_comment(tbl regclass)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT format('pg_objectid rekey mapping: old -> new keys of relation %s (primary key constraint %s)',
              tbl::oid, (SELECT c.oid FROM pg_constraint c WHERE c.conrelid = tbl AND c.contype = 'p'))
$body$;

-- Why the relation mapping cannot serve as the mapping table of tbl, or NULL when it can: a plain
-- table of the table's owner, made for tbl (its comment), of exactly the mapping's columns, with
-- no user trigger or rule that the toolkit's reads and inserts would run.
CREATE FUNCTION @extschema@.rekey_mapping_problem(tbl regclass, mapping oid)
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
        RETURN format('%s is not a plain table', @extschema@.rekey_name(mapping));
    ELSIF m.relowner <> (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl) THEN
        RETURN format('%s is owned by %s, not by %s, the owner of %s', @extschema@.rekey_name(mapping),
                      m.relowner::regrole, (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl)::regrole, tbl);
    ELSIF (SELECT array_agg(a.attname::text || ' ' || format_type(a.atttypid, a.atttypmod) ORDER BY a.attnum)
             FROM pg_attribute a WHERE a.attrelid = mapping AND a.attnum > 0 AND NOT a.attisdropped)
          IS DISTINCT FROM ARRAY['old_key uuid', 'new_key uuid', 'batch bigint'] THEN
        RETURN format('%s exists and is not a rekey mapping table (old_key uuid, new_key uuid, batch bigint)',
                      @extschema@.rekey_name(mapping));
    ELSIF obj_description(mapping, 'pg_class') IS DISTINCT FROM @extschema@.rekey_mapping_comment(tbl) THEN
        RETURN format('%s exists and is not the mapping table of %s (its comment says what it maps)',
                      @extschema@.rekey_name(mapping), tbl);
    ELSIF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = mapping AND NOT t.tgisinternal)
          OR EXISTS (SELECT FROM pg_rewrite w WHERE w.ev_class = mapping)
          -- (PostgreSQL 18 records NOT NULL as constraints too.)
          OR EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = mapping AND k.contype NOT IN ('p', 'u', 'n'))
          OR EXISTS (SELECT FROM pg_index i WHERE i.indrelid = mapping
                        AND (i.indexprs IS NOT NULL OR i.indpred IS NOT NULL))
          OR EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = mapping AND a.attnum > 0
                        AND (a.atthasdef OR a.attgenerated <> ''))
          OR m.relrowsecurity THEN
        -- Code of its own (a trigger, rule, CHECK, index expression, default or policy) would run
        -- as whoever inserts into or reads the mapping table.
        RETURN format('%s has a trigger, rule, constraint, index expression, default or row-level security of its own',
                      @extschema@.rekey_name(mapping));
    END IF;
    RETURN NULL;
END
$body$;

-- The recorded rekey of tbl, or NULL when there is none; an error when the record cannot be
-- trusted any more: its table was dropped and another made with the same OID, or its mapping
-- table no longer qualifies (rekey_mapping_problem).
CREATE FUNCTION @extschema@.rekey_state_of(tbl regclass)
    RETURNS @extschema@.rekey_state
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    st @extschema@.rekey_state;
    problem text;
BEGIN
    SELECT * INTO st FROM @extschema@.rekey_state s WHERE s.relid = tbl;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF st.key_constraint IS DISTINCT FROM (SELECT c.oid FROM pg_constraint c WHERE c.conrelid = tbl AND c.contype = 'p') THEN
        RAISE EXCEPTION 'the recorded rekey of % was of another table with the same OID, or of another primary key', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('SELECT %s.rekey_forget(%L) drops the record.', '@extschema@', tbl::oid::text);
    END IF;
    problem := @extschema@.rekey_mapping_problem(tbl, st.mapping_table);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'the mapping table of the rekey of % cannot be used: %', tbl, problem
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN st;
END
$body$;

-- The four statements of a batch, exactly as rekey_batch runs them and rekey_plan shows them:
--   [1] the window: the next keys after $1, the high-water key, at most $2, the batch size, in key
--       order, whatever their version (so that the walk always goes through the key's index);
--   [2] lock the window's version-4 keys not yet mapped: $1 the window; returns them in order;
--   [3] map them: $1 the keys, $2 the fallback time, $3 the batch number;
--   [4] rewrite the key and every referencing column in one statement: $1 the keys; returns the
--       rows changed per table, in the order of rekey_columns (for the key's table, the rows whose
--       key became its new key). The one statement that fires the tables' own triggers, so it runs
--       under the caller's search_path (rekey_batch), every operator and function in it qualified.
-- mapping_table is a qualified name (rekey_name of the recorded mapping table, or the one to be
-- made).
CREATE FUNCTION @extschema@.rekey_statements(tbl regclass, time_column name, time_zone text,
                                             mapping_table text)
    RETURNS text[]
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := @extschema@.rekey_key_column(tbl);
    time_expr text := @extschema@.rekey_time_expression(tbl, time_column, time_zone);
    updates text[] := '{}';
    counts text[] := '{}';
    r record;
    i integer := 0;
BEGIN
    IF time_expr IS NULL THEN
        RAISE EXCEPTION 'column "%" of % is not a timestamptz, timestamp or date column', time_column, tbl
            USING ERRCODE = 'undefined_column';
    END IF;
    FOR r IN SELECT c.relid, array_agg(c.attname ORDER BY c.attnum) AS names, min(c.depth) AS depth
               FROM @extschema@.rekey_columns(tbl) c
              GROUP BY c.relid
              ORDER BY min(c.depth), c.relid::text
    LOOP
        i := i + 1;
        IF cardinality(r.names) = 1 THEN
            updates := updates || format(
                'u%s AS (UPDATE ONLY %s t SET %I = b.new_key FROM b WHERE b.old_key OPERATOR(pg_catalog.=) t.%I'
                ' AND t.%I OPERATOR(pg_catalog.=) ANY ($1) RETURNING %s)',
                i, @extschema@.rekey_name(r.relid), r.names[1], r.names[1], r.names[1],
                CASE WHEN i = 1 THEN format('t.%I AS k', key) ELSE '1' END);
        ELSE
            -- One UPDATE per table, so that no row is changed twice by the statement (a
            -- self-reference, or two columns referencing the key).
            updates := updates || format(
                'u%s AS (UPDATE ONLY %s t SET %s WHERE %s RETURNING %s)', i, @extschema@.rekey_name(r.relid),
                (SELECT string_agg(format('%1$I = CASE WHEN t.%1$I OPERATOR(pg_catalog.=) ANY ($1)'
                                          ' THEN (SELECT b.new_key FROM b WHERE b.old_key OPERATOR(pg_catalog.=) t.%1$I)'
                                          ' ELSE t.%1$I END', n), ', ')
                   FROM unnest(r.names) n),
                (SELECT string_agg(format('t.%I OPERATOR(pg_catalog.=) ANY ($1)', n), ' OR ') FROM unnest(r.names) n),
                CASE WHEN i = 1 THEN format('t.%I AS k', key) ELSE '1' END);
        END IF;
        -- For the key's table, the rows whose key really became its new key: a BEFORE trigger
        -- could have kept the old one.
        counts := counts || CASE WHEN i = 1
            THEN '(SELECT pg_catalog.count(*) FROM u1 JOIN b ON b.new_key OPERATOR(pg_catalog.=) u1.k)'
            ELSE format('(SELECT pg_catalog.count(*) FROM u%s)', i) END;
    END LOOP;
    RETURN ARRAY[
        format('SELECT array_agg(k ORDER BY k) FROM (SELECT t.%1$I AS k FROM ONLY %2$s t'
               ' WHERE t.%1$I > $1 ORDER BY t.%1$I LIMIT $2) s',
               key, @extschema@.rekey_name(tbl)),
        format('SELECT array_agg(k ORDER BY k) FROM (SELECT t.%1$I AS k FROM ONLY %2$s t'
               ' WHERE t.%1$I = ANY ($1) AND %3$s.uuid_extract_version(t.%1$I) = 4'
               ' AND NOT EXISTS (SELECT FROM %4$s m WHERE m.old_key = t.%1$I) FOR UPDATE OF t) s',
               key, @extschema@.rekey_name(tbl), '@extschema@', mapping_table),
        format('INSERT INTO %1$s (old_key, new_key, batch) SELECT t.%2$I, %3$s.uuidv7_at(CASE WHEN %4$s >= ''1970-01-01 00:00:00+00'''
               ' AND %4$s < ''10000-01-01 00:00:00+00'' THEN %4$s ELSE $2 END), $3 FROM ONLY %5$s t WHERE t.%2$I = ANY ($1)',
               mapping_table, key, '@extschema@', time_expr, @extschema@.rekey_name(tbl)),
        format('WITH b AS MATERIALIZED (SELECT m.old_key, m.new_key FROM %s m WHERE m.old_key OPERATOR(pg_catalog.=) ANY ($1)),'
               ' %s SELECT ARRAY[%s]',
               mapping_table, array_to_string(updates, ', '), array_to_string(counts, ', '))
    ];
END
$body$;

-- Whether the key's default makes version-7 keys: a call of uuidv7() or uuidv7(interval), this
-- extension's or PostgreSQL 18's, recognised by OID in the stored expression.
CREATE FUNCTION @extschema@.rekey_default_is_v7(tbl regclass)
    RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT coalesce((
    SELECT bool_or(d.adbin::text LIKE format('{FUNCEXPR :funcid %s %%', f.oid))
      FROM pg_attrdef d
      JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
      CROSS JOIN (VALUES ('@extschema@.uuidv7()'::regprocedure::oid),
                         ('@extschema@.uuidv7(interval)'::regprocedure::oid),
                         (to_regprocedure('pg_catalog.uuidv7()')::oid),
                         (to_regprocedure('pg_catalog.uuidv7(interval)')::oid)) f(oid)
     WHERE d.adrelid = tbl AND a.attname = @extschema@.rekey_key_column(tbl) AND f.oid IS NOT NULL), false)
$body$;

-- What stops a rekey of tbl, one line each, before anything changes. rekey_plan lists them;
-- rekey_run refuses to start or resume while there is any. mapping_table is the name of the
-- mapping table (NULL: the default); for a rekey already started, rekey_name of the recorded one.
CREATE FUNCTION @extschema@.rekey_problems(tbl regclass, time_column name, mapping_table text DEFAULT NULL,
                                           fire_triggers boolean DEFAULT false)
    RETURNS SETOF text
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := @extschema@.rekey_key_column(tbl);
    owner oid := (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl);
    mapping text := @extschema@.rekey_mapping_name(tbl, mapping_table);
    mapping_oid regclass;
    mapping_schema text;
    problem text;
    r record;
BEGIN
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RETURN NEXT format('permission denied: only the owner of %s (%s) or a member of its role may rekey it',
                           tbl, owner::regrole);
    END IF;
    IF time_column IS NULL THEN
        RETURN NEXT format('no time column: name the column that holds each row''s creation time (candidates: %s)',
                           coalesce(nullif(array_to_string(@extschema@.rekey_time_columns(tbl), ', '), ''), 'none'));
    ELSIF NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = time_column
                         AND a.attnum > 0 AND NOT a.attisdropped) THEN
        RETURN NEXT format('time column "%s" does not exist in %s', time_column, tbl);
    ELSIF @extschema@.rekey_time_expression(tbl, time_column, 'UTC') IS NULL THEN
        RETURN NEXT format('time column "%s" of %s is of type %s, not timestamptz, timestamp or date', time_column, tbl,
                           (SELECT a.atttypid::regtype FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = time_column));
    ELSIF NOT has_column_privilege(tbl, time_column, 'SELECT') THEN
        RETURN NEXT format('permission denied: you cannot read column %s of %s', time_column, tbl);
    END IF;

    FOR r IN SELECT c.*, cl.relkind, cl.relrowsecurity, cl.relowner, a.attgenerated,
                    EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = c.relid OR i.inhparent = c.relid) AS inherits
               FROM @extschema@.rekey_columns(tbl) c
               JOIN pg_class cl ON cl.oid = c.relid
               JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum = c.attnum
    LOOP
        IF r.relowner <> owner THEN
            -- Its triggers, CHECK constraints and index expressions would run as whoever rekeys.
            RETURN NEXT format('%s is owned by %s, not by %s, the owner of %s: every table that changes must be the same owner''s',
                               r.relid, r.relowner::regrole, owner::regrole, tbl);
        END IF;
        IF r.relkind <> 'r' OR r.inherits THEN
            RETURN NEXT format('%s is %s: only plain tables without inheritance can be rekeyed', r.relid,
                               CASE WHEN r.relkind = 'p' THEN 'partitioned' WHEN r.relkind = 'f' THEN 'a foreign table'
                                    WHEN r.inherits THEN 'part of an inheritance tree or a partition'
                                    ELSE 'not a plain table' END);
        END IF;
        IF r.atttype <> 'uuid'::regtype THEN
            RETURN NEXT format('%s.%I references the key but is of type %s, not uuid', r.relid, r.attname, r.atttype);
        END IF;
        IF r.attgenerated <> '' THEN
            RETURN NEXT format('%s.%I references the key but is a generated column', r.relid, r.attname);
        END IF;
        IF r.depth > 0 AND NOT @extschema@.rekey_column_indexed(r.relid, r.attnum) THEN
            RETURN NEXT format('%s.%I references the key but no btree index starts with it: CREATE INDEX CONCURRENTLY ON %s (%I)',
                               r.relid, r.attname, r.relid, r.attname);
        END IF;
        IF NOT has_column_privilege(r.relid, r.attnum, 'UPDATE') OR NOT has_column_privilege(r.relid, r.attnum, 'SELECT') THEN
            RETURN NEXT format('permission denied: you cannot read and update column %I of %s', r.attname, r.relid);
        END IF;
        IF r.relrowsecurity AND row_security_active(r.relid) THEN
            RETURN NEXT format('row-level security applies to you on %s: a rekey must see and update every row', r.relid);
        END IF;
    END LOOP;

    -- A rewritten column that is also in a foreign key to columns the rekey does not change: its
    -- new values would have to exist there (the table's key itself referencing another table, say).
    FOR r IN SELECT DISTINCT c.relid, c.attname, k.conname, k.confrelid::regclass AS target
               FROM @extschema@.rekey_columns(tbl) c
               JOIN pg_constraint k ON k.contype = 'f' AND k.conrelid = c.relid
               CROSS JOIN LATERAL generate_subscripts(k.conkey, 1) AS i
              WHERE k.conkey[i] = c.attnum
                AND NOT EXISTS (SELECT FROM @extschema@.rekey_columns(tbl) t
                                 WHERE t.relid = k.confrelid AND t.attnum = k.confkey[i])
              ORDER BY 1, 2, 3
    LOOP
        RETURN NEXT format('%s.%I is also in foreign key %I to %s, whose columns the rekey does not change',
                           r.relid, r.attname, r.conname, r.target);
    END LOOP;

    FOR r IN SELECT DISTINCT c.relid, t.tgname
               FROM @extschema@.rekey_columns(tbl) c
               JOIN pg_trigger t ON t.tgrelid = c.relid
              WHERE NOT t.tgisinternal AND t.tgenabled <> 'D' AND (t.tgtype & 16) <> 0
                AND (cardinality(t.tgattr::int2[]) = 0
                     OR EXISTS (SELECT FROM @extschema@.rekey_columns(tbl) c2
                                 WHERE c2.relid = c.relid AND c2.attnum = ANY (t.tgattr::int2[])))
                AND NOT fire_triggers
              ORDER BY 1, 2
    LOOP
        RETURN NEXT format('trigger %I on %s would fire on the rewrite of every row: disable it, or pass fire_triggers => true',
                           r.tgname, r.relid);
    END LOOP;
    FOR r IN SELECT DISTINCT c.relid, w.rulename
               FROM @extschema@.rekey_columns(tbl) c JOIN pg_rewrite w ON w.ev_class = c.relid
              WHERE w.ev_type = '2' ORDER BY 1, 2
    LOOP
        RETURN NEXT format('rule %I on %s rewrites UPDATE: drop it for the rekey', r.rulename, r.relid);
    END LOOP;

    mapping_oid := to_regclass(mapping);
    IF mapping_oid IS NULL THEN
        -- Made by the caller, then given to the table's owner, who must be allowed to own it there
        -- (unless a superuser gives it).
        mapping_schema := coalesce((parse_ident(mapping))[cardinality(parse_ident(mapping)) - 1], current_schema());
        IF to_regnamespace(mapping_schema) IS NULL THEN
            RETURN NEXT format('schema %s of the mapping table %s does not exist', mapping_schema, mapping);
        ELSIF NOT has_schema_privilege(mapping_schema, 'CREATE')
              OR NOT (has_schema_privilege(owner, mapping_schema, 'CREATE')
                      OR (SELECT rl.rolsuper FROM pg_roles rl WHERE rl.rolname = current_user)) THEN
            RETURN NEXT format('permission denied: you and %s must both be allowed to create the mapping table %s',
                               owner::regrole, mapping);
        END IF;
    ELSE
        problem := @extschema@.rekey_mapping_problem(tbl, mapping_oid);
        IF problem IS NOT NULL THEN
            RETURN NEXT problem;
        ELSIF NOT (has_table_privilege(mapping_oid, 'SELECT') AND has_table_privilege(mapping_oid, 'INSERT')) THEN
            RETURN NEXT format('permission denied: you cannot read and insert into the mapping table %s', mapping);
        END IF;
    END IF;
END
$body$;

-- Columns that could supply creation times: time columns, the usual names first, then NOT NULL.
CREATE FUNCTION @extschema@.rekey_time_columns(tbl regclass)
    RETURNS name[]
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT coalesce(array_agg(a.attname ORDER BY
           a.attname NOT IN ('created_at', 'created', 'creation_time', 'created_on', 'inserted_at',
                             'create_time', 'createdat', 'date_created', 'insert_time'),
           a.attname !~* '(creat|insert)', NOT a.attnotnull, a.attnum), '{}')
  FROM pg_attribute a
 WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped
   AND a.atttypid IN ('timestamptz'::regtype, 'timestamp'::regtype, 'date'::regtype)
$body$;

-- What there is, for one table: key versions, the v7 keys' time span, the key's physical order,
-- the key index's size and leaf density, the foreign keys that follow it, candidate time columns.
CREATE FUNCTION @extschema@.rekey_assess(tbl regclass)
    RETURNS TABLE (table_name regclass, key_column name, total_rows bigint, v4_keys bigint,
                   v7_keys bigint, v1_keys bigint, other_keys bigint, null_keys bigint,
                   v7_first timestamptz, v7_last timestamptz, key_correlation real,
                   key_index regclass, key_index_size bigint, key_index_leaf_density float8,
                   foreign_keys text[], time_columns name[], notes text[])
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    stattuple name;
BEGIN
    table_name := tbl;
    key_column := @extschema@.rekey_key_column(tbl);
    notes := '{}';
    EXECUTE format(
        'SELECT count(*), count(*) FILTER (WHERE v = 4), count(*) FILTER (WHERE v = 7),'
        ' count(*) FILTER (WHERE v = 1), count(*) FILTER (WHERE k IS NOT NULL AND v IS DISTINCT FROM 1'
        ' AND v IS DISTINCT FROM 4 AND v IS DISTINCT FROM 7), count(*) FILTER (WHERE k IS NULL),'
        ' min(%2$s.uuid_extract_timestamp(k)) FILTER (WHERE v = 7), max(%2$s.uuid_extract_timestamp(k)) FILTER (WHERE v = 7)'
        ' FROM (SELECT t.%1$I AS k, %2$s.uuid_extract_version(t.%1$I) AS v FROM ONLY %3$s t) s',
        key_column, '@extschema@', @extschema@.rekey_name(tbl))
       INTO total_rows, v4_keys, v7_keys, v1_keys, other_keys, null_keys, v7_first, v7_last;

    SELECT s.correlation INTO key_correlation
      FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename
      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname
     WHERE c.oid = tbl AND s.attname = key_column AND NOT s.inherited;
    IF key_correlation IS NULL THEN
        notes := notes || 'key correlation not available: ANALYZE the table first'::text;
    END IF;

    SELECT c.conindid::regclass INTO key_index FROM pg_constraint c WHERE c.conrelid = tbl AND c.contype = 'p';
    key_index_size := pg_relation_size(key_index);
    SELECT n.nspname INTO stattuple
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pgstattuple';
    IF stattuple IS NULL THEN
        notes := notes || 'leaf density not available: the pgstattuple extension is not installed'::text;
    ELSE
        BEGIN
            EXECUTE format('SELECT avg_leaf_density FROM %I.pgstatindex($1)', stattuple)
               INTO key_index_leaf_density USING key_index;
        EXCEPTION WHEN insufficient_privilege THEN
            notes := notes || format('leaf density not available: %s', SQLERRM);
        END;
    END IF;

    SELECT array_agg(format('%s(%s) -> %s(%s) ON UPDATE %s ON DELETE %s%s%s, %s',
                            r.referencing_table, array_to_string(r.referencing_columns, ', '),
                            r.referenced_table, array_to_string(r.referenced_columns, ', '),
                            r.on_update, r.on_delete,
                            CASE WHEN r.is_deferrable THEN ' DEFERRABLE' ELSE '' END,
                            CASE WHEN r.validated THEN '' ELSE ' NOT VALID' END,
                            CASE WHEN r.indexed THEN 'indexed' ELSE 'NOT INDEXED' END)
                     ORDER BY r.depth, r.referencing_table::text, r.constraint_name)
      INTO foreign_keys FROM @extschema@.rekey_references(tbl) r;
    foreign_keys := coalesce(foreign_keys, '{}');

    time_columns := @extschema@.rekey_time_columns(tbl);
    RETURN NEXT;
END
$body$;

-- rekey_assess for every table of a schema whose primary key is one uuid column.
CREATE FUNCTION @extschema@.rekey_assess_schema(schema_name regnamespace)
    RETURNS TABLE (table_name regclass, key_column name, total_rows bigint, v4_keys bigint,
                   v7_keys bigint, v1_keys bigint, other_keys bigint, null_keys bigint,
                   v7_first timestamptz, v7_last timestamptz, key_correlation real,
                   key_index regclass, key_index_size bigint, key_index_leaf_density float8,
                   foreign_keys text[], time_columns name[], notes text[])
    LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT a.*
  FROM pg_class c
  JOIN pg_constraint k ON k.conrelid = c.oid AND k.contype = 'p' AND cardinality(k.conkey) = 1
  JOIN pg_attribute ka ON ka.attrelid = c.oid AND ka.attnum = k.conkey[1] AND ka.atttypid = 'uuid'::regtype
  CROSS JOIN LATERAL @extschema@.rekey_assess(c.oid::regclass) a
 WHERE c.relnamespace = schema_name AND c.relkind = 'r' AND has_table_privilege(c.oid, 'SELECT')
 ORDER BY c.relname
$body$;

-- The exact steps a rekey of tbl takes, the locks each takes and the rows each touches, what it
-- costs in WAL and bloat, and the problems that stop it, as lines of text. Changes nothing. For a
-- rekey already started, its recorded time column and mapping table are used, and the counts are
-- of what is left.
CREATE FUNCTION @extschema@.rekey_plan(tbl regclass, time_column name DEFAULT NULL,
                                       batch_size integer DEFAULT 10000, mapping_table text DEFAULT NULL,
                                       fire_triggers boolean DEFAULT false)
    RETURNS SETOF text
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := @extschema@.rekey_key_column(tbl);
    st @extschema@.rekey_state;
    mapping text;
    zone text := current_setting('TimeZone');
    problems text[];
    statements text[];
    total bigint;
    todo bigint;
    v7 bigint;
    rows_touched bigint;
    row_bytes numeric;
    index_entry numeric;
    index_count integer;
    wal numeric := 0;
    dead bigint := 0;
    dead_bytes numeric := 0;
    entries bigint := 0;
    step integer := 0;
    r record;
    line text;
BEGIN
    IF batch_size IS NULL OR batch_size < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1, not %', batch_size USING ERRCODE = 'invalid_parameter_value';
    END IF;
    st := @extschema@.rekey_state_of(tbl);
    IF st.relid IS NOT NULL THEN
        time_column := coalesce(time_column, st.time_column);
        mapping_table := @extschema@.rekey_name(st.mapping_table);
        zone := st.time_zone;
    END IF;
    mapping := @extschema@.rekey_mapping_name(tbl, mapping_table);
    problems := ARRAY(SELECT @extschema@.rekey_problems(tbl, time_column, mapping, fire_triggers));

    EXECUTE format('SELECT count(*), count(*) FILTER (WHERE %2$s.uuid_extract_version(t.%1$I) = 4),'
                   ' count(*) FILTER (WHERE %2$s.uuid_extract_version(t.%1$I) = 7) FROM ONLY %3$s t',
                   key, '@extschema@', @extschema@.rekey_name(tbl))
       INTO total, todo, v7;

    RETURN NEXT format('Rekey plan for %s: primary key %I to UUIDv7, creation times from %s',
                       tbl, key, coalesce(quote_ident(time_column), '(no time column given)'));
    RETURN NEXT format('  keys: %s rows, %s version 4 to rekey, %s version 7 already, %s other', total, todo, v7,
                       total - todo - v7);
    IF st.relid IS NOT NULL THEN
        RETURN NEXT format('  started %s: %s keys rekeyed in %s batches, pass %s%s',
                           to_char(st.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'),
                           st.keys_done, st.batches, st.pass,
                           CASE WHEN st.finished_at IS NOT NULL THEN ', finished (a new run sweeps again)' ELSE '' END);
    END IF;
    RETURN NEXT format('  mapping table: %s (%s)', mapping,
                       CASE WHEN to_regclass(mapping) IS NULL THEN 'to be created' ELSE 'exists' END);

    RETURN NEXT '  columns that change together, with the rows each batch run will rewrite:';
    FOR r IN SELECT c.relid, array_agg(c.attname ORDER BY c.attnum) AS names,
                    @extschema@.rekey_readable(tbl, c.relid) AS all_uuid
               FROM @extschema@.rekey_columns(tbl) c
              GROUP BY c.relid ORDER BY min(c.depth), c.relid::text
    LOOP
        rows_touched := NULL;
        IF r.all_uuid THEN
            EXECUTE format('SELECT count(*), coalesce(avg(pg_column_size(t.*)), 0) FROM ONLY %s t WHERE %s',
                           @extschema@.rekey_name(r.relid),
                           (SELECT string_agg(format('%s.uuid_extract_version(t.%I) = 4', '@extschema@', n), ' OR ')
                              FROM unnest(r.names) n))
               INTO rows_touched, row_bytes;
            SELECT count(*), coalesce(sum(e.size), 0) INTO index_count, index_entry
              FROM (SELECT ((8 + sum(CASE WHEN ty.typlen > 0 THEN ty.typlen ELSE 16 END) + 7) / 8) * 8 + 4 AS size
                      FROM pg_index i
                      JOIN pg_attribute a ON a.attrelid = i.indexrelid
                      JOIN pg_type ty ON ty.oid = a.atttypid
                     WHERE i.indrelid = r.relid GROUP BY i.indexrelid) e;
            wal := wal + rows_touched * (row_bytes + 60) + rows_touched * (index_entry + 40 * index_count);
            dead := dead + rows_touched;
            dead_bytes := dead_bytes + rows_touched * row_bytes;
            entries := entries + rows_touched * index_count;
        END IF;
        RETURN NEXT format('    %s (%s): %s rows', r.relid,
                           (SELECT string_agg(quote_ident(n), ', ') FROM unnest(r.names) n),
                           coalesce(rows_touched::text, 'unknown'));
    END LOOP;
    -- The mapping table: a row and two index entries per key.
    wal := wal + todo * ((24 + 16 + 16 + 8) + 60 + 2 * ((8 + 16 + 7) / 8 * 8 + 4 + 40));

    FOR r IN SELECT * FROM @extschema@.rekey_references(tbl) LOOP
        RETURN NEXT format('  foreign key %I: %s(%s) -> %s(%s), ON UPDATE %s%s', r.constraint_name,
                           r.referencing_table, array_to_string(r.referencing_columns, ', '),
                           r.referenced_table, array_to_string(r.referenced_columns, ', '), r.on_update,
                           CASE WHEN r.is_deferrable THEN ', deferrable' ELSE '' END);
    END LOOP;

    IF cardinality(problems) = 0 THEN
        RETURN NEXT 'Problems that stop it: none';
    ELSE
        RETURN NEXT 'Problems that stop it:';
        FOREACH line IN ARRAY problems LOOP
            RETURN NEXT '  - ' || line;
        END LOOP;
    END IF;

    RETURN NEXT 'Steps:';
    step := step + 1;
    IF @extschema@.rekey_default_is_v7(tbl) THEN
        RETURN NEXT format('  %s. new rows already get version-7 keys: the default of %I calls uuidv7()', step, key);
    ELSE
        RETURN NEXT format('  %s. SELECT %s.rekey_switch_default(%L): new rows get version-7 keys from now on',
                           step, '@extschema@', tbl::text);
        RETURN NEXT format('       ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s.uuidv7()', @extschema@.rekey_name(tbl), key,
                           '@extschema@');
        RETURN NEXT format('       lock: ACCESS EXCLUSIVE on %s for a catalog change, each attempt waiting at most its lock_timeout', tbl);
    END IF;

    step := step + 1;
    RETURN NEXT format('  %s. CALL %s.rekey_run(%L, time_column => %L): records the starting counts%s', step,
                       '@extschema@', tbl::text, time_column,
                       CASE WHEN to_regclass(mapping) IS NULL THEN ' and creates the mapping table' ELSE '' END);
    IF to_regclass(mapping) IS NULL THEN
        RETURN NEXT format('       CREATE TABLE %s (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE, batch bigint NOT NULL)', mapping);
    END IF;
    RETURN NEXT format('     then %s windows of up to %s keys in key order, the version-4 keys of each a batch in its own'
                       ' transaction (with enable_seqscan off):', (total + batch_size - 1) / batch_size, batch_size);
    IF time_column IS NOT NULL AND @extschema@.rekey_time_expression(tbl, time_column, zone) IS NOT NULL
       AND NOT EXISTS (SELECT FROM @extschema@.rekey_columns(tbl) c WHERE c.atttype <> 'uuid'::regtype) THEN
        statements := @extschema@.rekey_statements(tbl, time_column, zone, mapping);
        RETURN NEXT '     a. ' || statements[1];
        RETURN NEXT format('        lock: ACCESS SHARE on %s', tbl);
        RETURN NEXT '     b. ' || statements[2];
        RETURN NEXT format('        lock: ROW SHARE on %s; the batch''s rows FOR UPDATE, so that updates and deletes of them,'
                           ' and inserts that reference them, wait for the COMMIT', tbl);
        RETURN NEXT '     c. ' || statements[3];
        RETURN NEXT format('        lock: ROW EXCLUSIVE on %s', mapping);
        RETURN NEXT '     d. ' || statements[4];
        RETURN NEXT format('        lock: ROW EXCLUSIVE on %s; every rewritten row',
                           (SELECT string_agg(DISTINCT c.relid::text, ', ') FROM @extschema@.rekey_columns(tbl) c));
        RETURN NEXT format('     e. UPDATE %s.rekey_state (progress), COMMIT, then the pause; a lock not granted within'
                           ' lock_timeout rolls the batch back and retries it', '@extschema@');
    ELSE
        RETURN NEXT '     (the statements depend on the time column)';
    END IF;
    RETURN NEXT '     then a second pass over the key from the start, for version-4 keys inserted behind the first';

    step := step + 1;
    RETURN NEXT format('  %s. SELECT * FROM %s.rekey_verify(%L): keys left, foreign keys, counts against the start',
                       step, '@extschema@', tbl::text);
    step := step + 1;
    RETURN NEXT format('  %s. compact the indexes, which every rewritten row added an entry to; lock: SHARE UPDATE EXCLUSIVE,'
                       ' reads and writes go on', step);
    FOR r IN SELECT DISTINCT c.relid::text AS name FROM @extschema@.rekey_columns(tbl) c ORDER BY 1 LOOP
        RETURN NEXT format('       REINDEX TABLE CONCURRENTLY %s', r.name);
    END LOOP;

    RETURN NEXT format('Expected cost: %s row versions written, about %s of WAL before full-page images;'
                       ' %s dead row versions (about %s) until vacuumed, %s new index entries until reindexed',
                       dead, pg_size_pretty(wal::bigint), dead, pg_size_pretty(dead_bytes::bigint), entries);
END
$body$;

-- New rows get version-7 keys: sets the key's default to uuidv7(), a catalog change under a short
-- ACCESS EXCLUSIVE lock. Each attempt waits at most lock_timeout, so that it never queues the
-- table's readers behind a long transaction; it retries up to attempts times, backing off.
-- Returns the statement run, or says that there was nothing to do.
CREATE FUNCTION @extschema@.rekey_switch_default(tbl regclass, lock_timeout interval DEFAULT '100ms',
                                                 attempts integer DEFAULT 50)
    RETURNS text
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := @extschema@.rekey_key_column(tbl);
    statement text := format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s.uuidv7()', @extschema@.rekey_name(tbl), key,
                             '@extschema@');
    saved text := current_setting('lock_timeout');
    attempt integer := 0;
BEGIN
    IF @extschema@.rekey_default_is_v7(tbl) THEN
        RETURN format('unchanged: the default of %s.%I already makes version-7 keys', tbl, key);
    END IF;
    IF NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = tbl), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table % to change its default', tbl
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    LOOP
        attempt := attempt + 1;
        BEGIN
            PERFORM set_config('lock_timeout', (extract(epoch FROM lock_timeout) * 1000)::bigint::text || 'ms', true);
            EXECUTE statement;
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            IF attempt >= attempts THEN
                RAISE EXCEPTION 'could not lock % to change its default in % attempts of %', tbl, attempts, lock_timeout
                    USING ERRCODE = 'lock_not_available',
                          HINT = 'A long transaction holds a lock on the table; try again later or allow more attempts.';
            END IF;
        END;
        PERFORM pg_sleep(least(0.05 * attempt, 1));
    END LOOP;
    PERFORM set_config('lock_timeout', saved, true);
    RETURN statement;
END
$body$;

-- Starts or resumes the rekey of tbl in the caller's transaction: refuses while rekey_problems
-- finds any problem or the key's default still makes version-4 keys; on the first start makes
-- (or adopts, after rekey_forget) the mapping table and records the counts rekey_verify compares
-- with; on a rekey that finished, starts a sweep for version-4 keys inserted since. A time
-- column, mapping table or fallback time given must be the recorded one.
CREATE FUNCTION @extschema@.rekey_start(tbl regclass, time_column name, fallback_time timestamptz,
                                        fire_triggers boolean, mapping_table text)
    RETURNS @extschema@.rekey_state
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := @extschema@.rekey_key_column(tbl);
    owner oid := (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl);
    st @extschema@.rekey_state;
    mapping text;
    mapping_oid oid;
    problems text[];
    remaining bigint;
    done bigint;
    snapshot jsonb;
    r record;
    n bigint;
BEGIN
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RAISE EXCEPTION 'cannot rekey %: permission denied: only the owner of % (%) or a member of its role may rekey it',
                tbl, tbl, owner::regrole
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM FROM @extschema@.rekey_state s WHERE s.relid = tbl FOR UPDATE;
    st := @extschema@.rekey_state_of(tbl);
    IF st.relid IS NOT NULL THEN
        IF time_column IS NOT NULL AND time_column <> st.time_column THEN
            RAISE EXCEPTION 'the rekey of % started with time column "%", not "%"', tbl, st.time_column, time_column
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Leave time_column out to resume, or call rekey_forget first to start over.';
        END IF;
        IF mapping_table IS NOT NULL AND to_regclass(mapping_table) IS DISTINCT FROM st.mapping_table THEN
            RAISE EXCEPTION 'the rekey of % started with mapping table %, not %', tbl, st.mapping_table::regclass, mapping_table
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF fallback_time IS NOT NULL AND fallback_time <> st.fallback_time THEN
            RAISE EXCEPTION 'the rekey of % started with fallback time %, not %', tbl, st.fallback_time, fallback_time
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        time_column := st.time_column;
        mapping := @extschema@.rekey_name(st.mapping_table);
    ELSE
        mapping := @extschema@.rekey_mapping_name(tbl, mapping_table);
    END IF;

    problems := ARRAY(SELECT @extschema@.rekey_problems(tbl, time_column, mapping, fire_triggers));
    IF NOT @extschema@.rekey_default_is_v7(tbl) THEN
        problems := problems || format('the default of %s.%I does not make version-7 keys: run rekey_switch_default(%L) first,'
                                       ' so that rows inserted during the rekey get them', tbl, key, tbl::text);
    END IF;
    IF cardinality(problems) > 0 THEN
        RAISE EXCEPTION 'cannot rekey %: %', tbl, problems[1]
            USING ERRCODE = CASE WHEN EXISTS (SELECT FROM unnest(problems) p WHERE p LIKE 'permission denied%')
                                 THEN 'insufficient_privilege' ELSE 'object_not_in_prerequisite_state' END,
                  DETAIL = 'Every problem found: ' || array_to_string(problems, '; '),
                  HINT = format('SELECT * FROM %s.rekey_plan(%L, %L) shows the plan and its problems.',
                                '@extschema@', tbl::text, time_column);
    END IF;

    EXECUTE format('SELECT count(*) FROM ONLY %s t WHERE %s.uuid_extract_version(t.%I) = 4',
                   @extschema@.rekey_name(tbl), '@extschema@', key)
       INTO remaining;
    IF st.relid IS NOT NULL THEN
        UPDATE @extschema@.rekey_state s
           SET runs = s.runs + 1, run_started_at = clock_timestamp(), run_keys_done = 0,
               keys_total = s.keys_done + remaining,
               pass = CASE WHEN s.finished_at IS NULL THEN s.pass ELSE 2 END,
               high_water = CASE WHEN s.finished_at IS NULL THEN s.high_water
                                 ELSE '00000000-0000-0000-0000-000000000000' END,
               finished_at = NULL, runner_pid = pg_backend_pid(),
               runner_started = (SELECT a.backend_start FROM pg_stat_activity a WHERE a.pid = pg_backend_pid())
         WHERE s.relid = tbl
        RETURNING * INTO st;
        RETURN st;
    END IF;

    mapping_oid := to_regclass(mapping);
    IF mapping_oid IS NULL THEN
        EXECUTE format('CREATE TABLE %s (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE, batch bigint NOT NULL)', mapping);
        mapping_oid := to_regclass(mapping);
        EXECUTE format('COMMENT ON TABLE %s IS %L', @extschema@.rekey_name(mapping_oid), @extschema@.rekey_mapping_comment(tbl));
        IF (SELECT c.relowner FROM pg_class c WHERE c.oid = mapping_oid) <> owner THEN
            EXECUTE format('ALTER TABLE %s OWNER TO %I', @extschema@.rekey_name(mapping_oid),
                           (SELECT rl.rolname FROM pg_roles rl WHERE rl.oid = owner));
        END IF;
    END IF;
    -- An adopted mapping table (rekey_problems checked it was made for this table) counts as done.
    EXECUTE format('SELECT count(*) FROM %s', @extschema@.rekey_name(mapping_oid)) INTO done;

    snapshot := jsonb_build_object('rows', '{}'::jsonb, 'joins', '{}'::jsonb);
    FOR r IN SELECT DISTINCT c.relid FROM @extschema@.rekey_columns(tbl) c LOOP
        EXECUTE format('SELECT count(*) FROM ONLY %s', @extschema@.rekey_name(r.relid)) INTO n;
        snapshot := jsonb_set(snapshot, ARRAY['rows', r.relid::oid::text], to_jsonb(n));
    END LOOP;
    FOR r IN SELECT * FROM @extschema@.rekey_references(tbl) LOOP
        EXECUTE @extschema@.rekey_join_count_query(r.referencing_table, r.referencing_columns,
                                                   r.referenced_table, r.referenced_columns) INTO n;
        snapshot := jsonb_set(snapshot, ARRAY['joins', r.constraint_id::text], to_jsonb(n));
    END LOOP;

    INSERT INTO @extschema@.rekey_state (relid, key_constraint, key_column, time_column, time_zone, fallback_time,
                                         mapping_table, keys_total, keys_done, started_at, run_started_at, snapshot,
                                         runner_pid, runner_started)
    VALUES (tbl, (SELECT c.oid FROM pg_constraint c WHERE c.conrelid = tbl AND c.contype = 'p'), key, time_column,
            current_setting('TimeZone'), coalesce(fallback_time, '1970-01-01 00:00:00+00'), mapping_oid,
            done + remaining, done, clock_timestamp(), clock_timestamp(), snapshot, pg_backend_pid(),
            (SELECT a.backend_start FROM pg_stat_activity a WHERE a.pid = pg_backend_pid()))
    RETURNING * INTO st;
    RETURN st;
END
$body$;

-- A query counting the rows of a foreign key's join: child rows that find their parent row.
CREATE FUNCTION @extschema@.rekey_join_count_query(referencing_table regclass, referencing_columns name[],
                                                   referenced_table regclass, referenced_columns name[])
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT format('SELECT count(*) FROM ONLY %s c JOIN ONLY %s p ON %s', @extschema@.rekey_name(referencing_table),
              @extschema@.rekey_name(referenced_table),
              (SELECT string_agg(format('c.%I OPERATOR(pg_catalog.=) p.%I', f, t), ' AND ')
                 FROM unnest(referencing_columns, referenced_columns) u(f, t)))
$body$;

-- One batch of the rekey of tbl, in the caller's transaction: locks the next batch_size
-- version-4 keys in key order, maps each to a version-7 key carrying its row's creation time,
-- rewrites the key and every column referencing it in one statement, and records the progress.
-- Returns the number of keys rekeyed; at the end of a pass it moves to the next or finishes.
-- rekey_run calls it once per transaction.
CREATE FUNCTION @extschema@.rekey_batch(tbl regclass, batch_size integer DEFAULT 10000,
                                        fire_triggers boolean DEFAULT false,
                                        caller_search_path text DEFAULT current_setting('search_path'))
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    st @extschema@.rekey_state;
    saved_seqscan text := current_setting('enable_seqscan');
    saved_role text := current_setting('role');
    statements text[];
    keys uuid[];
    window_end uuid;
    changed bigint[];
    problems text[];
    updated bigint;
BEGIN
    IF batch_size < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1, not %', batch_size USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = tbl), 'USAGE') THEN
        RAISE EXCEPTION 'permission denied: only the owner of % or a member of its role may rekey it', tbl
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM FROM @extschema@.rekey_state s WHERE s.relid = tbl FOR UPDATE;
    st := @extschema@.rekey_state_of(tbl);
    IF st.relid IS NULL THEN
        RAISE EXCEPTION 'no rekey of % has been started', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Start it with CALL rekey_run.';
    END IF;
    IF st.finished_at IS NOT NULL THEN
        RETURN 0;
    END IF;
    -- Again for every batch: a table, trigger, rule or privilege may have changed since the start.
    -- The tables are locked first (ROW EXCLUSIVE, as the batch's own writes would), so that no
    -- trigger, rule, constraint or column can be added between this check and the rewrite.
    EXECUTE (SELECT 'LOCK TABLE ' || string_agg(@extschema@.rekey_name(x.relid), ', ' ORDER BY x.relid) || ' IN ROW EXCLUSIVE MODE'
               FROM (SELECT DISTINCT c.relid::oid AS relid FROM @extschema@.rekey_columns(tbl) c
                     UNION SELECT st.mapping_table) x);
    problems := ARRAY(SELECT @extschema@.rekey_problems(tbl, st.time_column, @extschema@.rekey_name(st.mapping_table),
                                                        fire_triggers));
    IF cardinality(problems) > 0 THEN
        RAISE EXCEPTION 'cannot go on with the rekey of %: %', tbl, problems[1]
            USING ERRCODE = CASE WHEN EXISTS (SELECT FROM unnest(problems) p WHERE p LIKE 'permission denied%')
                                 THEN 'insufficient_privilege' ELSE 'object_not_in_prerequisite_state' END,
                  DETAIL = 'Every problem found: ' || array_to_string(problems, '; ');
    END IF;
    statements := @extschema@.rekey_statements(tbl, st.time_column, st.time_zone,
                                               @extschema@.rekey_name(st.mapping_table));
    -- A batch touches a few thousand rows of tables of any size: always through their indexes. The
    -- planner, seeing 10,000 keys in an array, would otherwise read whole tables for every batch.
    -- Only for these statements (the catalog queries above need sequential scans), and only until
    -- the end of the batch: the setting reverts with its transaction or subtransaction.
    PERFORM set_config('enable_seqscan', 'off', true);
    EXECUTE statements[1] INTO keys USING st.high_water, batch_size;
    IF keys IS NULL THEN
        UPDATE @extschema@.rekey_state s
           SET pass = 2, high_water = '00000000-0000-0000-0000-000000000000',
               finished_at = CASE WHEN s.pass >= 2 THEN clock_timestamp() END
         WHERE s.relid = tbl;
        PERFORM set_config('enable_seqscan', saved_seqscan, true);
        RETURN 0;
    END IF;
    window_end := keys[cardinality(keys)];
    EXECUTE statements[2] INTO keys USING keys;
    IF keys IS NULL THEN
        -- A window without a version-4 key to rekey: walk on.
        UPDATE @extschema@.rekey_state s SET high_water = window_end WHERE s.relid = tbl;
        PERFORM set_config('enable_seqscan', saved_seqscan, true);
        RETURN 0;
    END IF;
    EXECUTE statements[3] USING keys, st.fallback_time, st.batches + 1;
    -- The tables' triggers (acknowledged with fire_triggers) see the search_path they were written
    -- for, the caller's (the default of caller_search_path is evaluated where rekey_batch is called).
    -- And as the tables' owner, as PostgreSQL runs its own maintenance of a table: their triggers,
    -- CHECK constraints, generated columns and index expressions are the owner's code, which must
    -- not run with the rights of a superuser who runs the rekey.
    PERFORM set_config('role', (SELECT rl.rolname FROM pg_roles rl JOIN pg_class c ON c.relowner = rl.oid WHERE c.oid = tbl), true);
    PERFORM set_config('search_path', caller_search_path, true);
    EXECUTE statements[4] INTO changed USING keys;
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM set_config('role', saved_role, true);
    PERFORM set_config('enable_seqscan', saved_seqscan, true);
    IF changed[1] <> cardinality(keys) THEN
        -- The keys are locked, so only a BEFORE UPDATE trigger that keeps or changes the key can do
        -- this: never commit such a batch, whose mapping would name keys that exist nowhere.
        RAISE EXCEPTION 'rekey of %: % keys locked but % of them changed to their new key', tbl, cardinality(keys), changed[1]
            USING ERRCODE = 'triggered_action_exception',
                  HINT = 'A trigger on the table changes the key on UPDATE; disable it for the rekey.';
    END IF;
    UPDATE @extschema@.rekey_state s
       SET keys_done = s.keys_done + cardinality(keys), run_keys_done = s.run_keys_done + cardinality(keys),
           keys_total = greatest(s.keys_total, s.keys_done + cardinality(keys)),
           batches = s.batches + 1, high_water = window_end, last_batch_at = clock_timestamp()
     WHERE s.relid = tbl;
    GET DIAGNOSTICS updated = ROW_COUNT;
    IF updated <> 1 THEN
        -- Never keys rewritten without their progress recorded.
        RAISE EXCEPTION 'the record of the rekey of % could not be updated', tbl USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN cardinality(keys);
END
$body$;

-- Rekeys tbl: starts (or resumes) with rekey_start, then runs rekey_batch until every version-4 key
-- is rekeyed, committing after each batch, so that no lock is held longer than one batch and a
-- run stopped at any point (cancelled, terminated, the server restarted) resumes where the last
-- committed batch left it; a run after the end changes nothing unless version-4 keys were
-- inserted since. A batch that cannot get a lock within lock_timeout, deadlocks or collides is
-- rolled back and retried, up to max_retries times. Each batch reports its progress as a NOTICE;
-- other sessions read the same from rekey_status. One session at a time rekeys a table (an
-- advisory lock, which rekey_status also reads). Only a CALL of its own, outside a transaction
-- block, can commit: anywhere else it refuses before anything changes, unless in_one_transaction
-- asks for the whole work in the current transaction.
CREATE PROCEDURE @extschema@.rekey_run(tbl regclass, time_column name DEFAULT NULL,
                                       batch_size integer DEFAULT 10000, pause interval DEFAULT '0',
                                       lock_timeout interval DEFAULT '1s', max_retries integer DEFAULT 10,
                                       fallback_time timestamptz DEFAULT NULL,
                                       fire_triggers boolean DEFAULT false, mapping_table text DEFAULT NULL,
                                       in_one_transaction boolean DEFAULT false, max_batches bigint DEFAULT NULL)
    LANGUAGE plpgsql
    AS $body$
DECLARE
    -- Nothing here but qualified calls: these run before the search_path is set below.
    committing boolean := @extschema@.rekey_can_commit();
    lock_key bigint;
    lock_ms text;
    saved_timeout text := pg_catalog.current_setting('lock_timeout');
    -- The caller's search_path: every transaction of the run uses only pg_catalog (below), so that
    -- no function or operator of a schema on the caller's path can stand in for a built-in.
    saved_path text := pg_catalog.current_setting('search_path');
    holder integer;
    holding boolean;
    st @extschema@.rekey_state;
    n bigint;
    attempt integer;
    batches_run bigint := 0;
    rate float8;
    failure text;
    failure_state text;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    committing := committing AND NOT in_one_transaction;
    -- 'reky' in the high half, the table in the low half; rekey_runner looks for it.
    lock_key := (1919249273::bigint << 32) | tbl::oid::bigint;
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'rekey_run needs a table' USING ERRCODE = 'null_value_not_allowed';
    ELSIF batch_size IS NULL OR batch_size < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1, not %', batch_size USING ERRCODE = 'invalid_parameter_value';
    ELSIF max_retries IS NULL OR max_retries < 0 OR pause IS NULL OR pause < interval '0'
          OR lock_timeout IS NULL OR lock_timeout < interval '0' OR lock_timeout >= interval '24 days'
          OR max_batches < 0 OR in_one_transaction IS NULL OR fire_triggers IS NULL THEN
        RAISE EXCEPTION 'max_retries, pause, lock_timeout (under 24 days) and max_batches must not be negative, nor NULL but max_batches'
            USING ERRCODE = 'invalid_parameter_value';
    ELSIF fallback_time < '1970-01-01 00:00:00+00' OR fallback_time >= '10000-01-01 00:00:00+00' THEN
        RAISE EXCEPTION 'fallback_time % is not a time a UUIDv7 can carry', fallback_time
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Give a time from 1970-01-01 to 9999-12-31.';
    END IF;
    IF NOT @extschema@.rekey_can_commit() AND NOT in_one_transaction THEN
        RAISE EXCEPTION 'rekey_run must be called by a CALL of its own, outside a transaction block'
            USING ERRCODE = 'active_sql_transaction',
                  DETAIL = 'It commits after each batch, so that no lock is held longer than one batch; inside a transaction block, a function or a block with an exception handler it cannot.',
                  HINT = 'Run the CALL on its own, or pass in_one_transaction => true to rekey every key in the current transaction, which then holds every batch''s locks until it ends.';
    END IF;
    -- A batch retried after a lock timeout must see what the other session committed meanwhile,
    -- which a retry inside one REPEATABLE READ or SERIALIZABLE transaction never does.
    IF current_setting('transaction_isolation') <> 'read committed'
       OR (committing AND current_setting('default_transaction_isolation') <> 'read committed') THEN
        RAISE EXCEPTION 'rekey_run needs the READ COMMITTED isolation level'
            USING ERRCODE = 'invalid_transaction_state',
                  HINT = 'SET default_transaction_isolation = ''read committed'' in this session first.';
    END IF;
    lock_ms := (extract(epoch FROM lock_timeout) * 1000)::numeric(20)::text || 'ms';
    IF committing THEN
        -- Commits nothing yet; fails here, before the lock is taken, where a COMMIT is refused
        -- for a reason rekey_can_commit cannot see (a loop over a cursor that is not read-only).
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    END IF;

    -- One session at a time: a session lock kept across the batches' commits (released below on
    -- every way out), or in one transaction a transaction lock. Each batch also locks the table's
    -- rekey_state row, so two runs could only take turns; the lock says who runs, and refuses a
    -- second run. A holder that may not rekey the table (anyone can take an advisory lock) stops
    -- nobody: the run goes on without the lock.
    IF committing THEN
        holding := EXISTS (SELECT FROM pg_locks l WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid()
                              AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
                              AND l.classid = 1919249273::oid AND l.objid = tbl::oid AND l.objsubid = 1::smallint)
                   OR pg_try_advisory_lock(lock_key);
    ELSE
        holding := pg_try_advisory_xact_lock(lock_key);
    END IF;
    holder := @extschema@.rekey_runner(tbl, false);
    IF holder IS NOT NULL AND holder <> pg_backend_pid() THEN
        IF committing AND holding THEN
            PERFORM pg_advisory_unlock(lock_key);
        END IF;
        RAISE EXCEPTION 'another session (process %) is rekeying % now', holder, tbl
            USING ERRCODE = 'object_in_use';
    END IF;
    IF NOT holding THEN
        RAISE NOTICE 'rekey of %: a session that may not rekey it holds its rekey lock; going on without it', tbl;
    END IF;

    BEGIN
        st := @extschema@.rekey_start(tbl, time_column, fallback_time, fire_triggers, mapping_table);
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        IF committing AND holding THEN
            PERFORM pg_advisory_unlock(lock_key);
        END IF;
        RAISE;
    END;
    RAISE NOTICE 'rekey of %: % of % version-4 keys done, pass %, batches of up to % keys',
        tbl, st.keys_done, st.keys_total, st.pass, batch_size;
    IF committing THEN
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    END IF;

    LOOP
        EXIT WHEN max_batches IS NOT NULL AND batches_run >= max_batches;
        attempt := 0;
        LOOP
            BEGIN
                PERFORM set_config('lock_timeout', lock_ms, true);
                n := @extschema@.rekey_batch(tbl, batch_size, fire_triggers, saved_path);
                PERFORM set_config('lock_timeout', saved_timeout, true);
                EXIT;
            EXCEPTION
                WHEN lock_not_available OR deadlock_detected OR serialization_failure
                     OR unique_violation OR foreign_key_violation THEN
                    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, failure_state = RETURNED_SQLSTATE;
                    attempt := attempt + 1;
                    IF attempt > max_retries THEN
                        IF committing AND holding THEN
                            PERFORM pg_advisory_unlock(lock_key);
                        END IF;
                        RAISE EXCEPTION 'rekey of % stopped: a batch failed % times, last with: %', tbl, attempt, failure
                            USING ERRCODE = failure_state,
                                  HINT = 'Nothing of that batch was kept. CALL rekey_run again to resume, perhaps with a longer lock_timeout or more retries.';
                    END IF;
                    RAISE NOTICE 'rekey of %: batch rolled back (%), retry % of %', tbl, failure, attempt, max_retries;
                WHEN OTHERS OR query_canceled THEN
                    IF committing AND holding THEN
                        PERFORM pg_advisory_unlock(lock_key);
                    END IF;
                    RAISE;
            END;
            BEGIN
                PERFORM pg_sleep(least(0.1 * attempt, 2));
            EXCEPTION WHEN query_canceled THEN
                IF committing AND holding THEN
                    PERFORM pg_advisory_unlock(lock_key);
                END IF;
                RAISE;
            END;
        END LOOP;
        batches_run := batches_run + 1;

        SELECT * INTO st FROM @extschema@.rekey_state s WHERE s.relid = tbl;
        IF n > 0 THEN
            rate := st.run_keys_done / greatest(extract(epoch FROM clock_timestamp() - st.run_started_at), 0.001);
            RAISE NOTICE '%', format('rekey of %s: %s/%s keys (%s%%), %s keys/s, about %s left', tbl, st.keys_done,
                st.keys_total, round(100.0 * st.keys_done / greatest(st.keys_total, 1), 1), round(rate::numeric),
                make_interval(secs => round(((st.keys_total - st.keys_done) / greatest(rate, 0.001))::numeric)));
        END IF;
        IF committing THEN
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        END IF;
        EXIT WHEN st.finished_at IS NOT NULL;
        IF n > 0 AND pause > interval '0' THEN
            BEGIN
                PERFORM pg_sleep(extract(epoch FROM pause));
            EXCEPTION WHEN query_canceled THEN
                IF committing AND holding THEN
                    PERFORM pg_advisory_unlock(lock_key);
                END IF;
                RAISE;
            END;
        END IF;
    END LOOP;

    IF st.finished_at IS NOT NULL THEN
        RAISE NOTICE 'rekey of % finished: % keys rekeyed in % batches; check it with SELECT * FROM %.rekey_verify(%)',
            tbl, st.keys_done, st.batches, '@extschema@', quote_literal(tbl::text);
    ELSE
        RAISE NOTICE 'rekey of % paused after % batches: % of % keys done; CALL rekey_run(%) again to go on',
            tbl, batches_run, st.keys_done, st.keys_total, quote_literal(tbl::text);
    END IF;
    UPDATE @extschema@.rekey_state s SET runner_pid = NULL, runner_started = NULL
     WHERE s.relid = tbl AND s.runner_pid = pg_backend_pid();
    IF committing AND holding THEN
        PERFORM pg_advisory_unlock(lock_key);
    ELSIF NOT committing THEN
        PERFORM set_config('lock_timeout', saved_timeout, true);
    END IF;
    PERFORM set_config('search_path', saved_path, true);
END
$body$;

-- Progress of every rekey the caller may see, from any session: what rekey_run reports per batch.
-- A function under the view so that the rows are read with the caller's privileges (and row-level
-- security), not the view owner's: views run as their owner before PostgreSQL 15's
-- security_invoker. Running means that a session that may rekey the table holds its rekey lock and
-- is busy (rekey_runner); one that holds it idle (after a run that failed at a COMMIT) is not.
CREATE FUNCTION @extschema@.rekey_status_rows()
    RETURNS TABLE (table_name regclass, key_column name, state text, pass integer, keys_done bigint,
                   keys_total bigint, percent_done numeric, keys_per_second numeric, time_left interval,
                   batches bigint, runs integer, started_at timestamptz, last_batch_at timestamptz,
                   finished_at timestamptz, runner_pid integer, mapping_table regclass)
    LANGUAGE sql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT s.relid::regclass, s.key_column,
       CASE WHEN l.pid IS NOT NULL THEN 'running' WHEN s.finished_at IS NOT NULL THEN 'finished' ELSE 'stopped' END,
       s.pass, s.keys_done, s.keys_total,
       round(100.0 * s.keys_done / greatest(s.keys_total, 1), 1),
       round(r.rate::numeric),
       CASE WHEN l.pid IS NOT NULL AND r.rate > 0
            THEN make_interval(secs => round(((s.keys_total - s.keys_done) / r.rate)::numeric)) END,
       s.batches, s.runs, s.started_at, s.last_batch_at, s.finished_at, l.pid, s.mapping_table::regclass
  FROM @extschema@.rekey_state s
  CROSS JOIN LATERAL (
      SELECT CASE WHEN s.last_batch_at > s.run_started_at
                  THEN s.run_keys_done / extract(epoch FROM s.last_batch_at - s.run_started_at) END AS rate) r
  LEFT JOIN LATERAL (SELECT @extschema@.rekey_runner(s.relid, true) AS pid) l ON true
 ORDER BY s.relid::regclass::text
$body$;

CREATE VIEW @extschema@.rekey_status AS SELECT * FROM @extschema@.rekey_status_rows();
GRANT SELECT ON @extschema@.rekey_status TO PUBLIC;

-- The new key of an old key of tbl, from its mapping table; a key that was never rekeyed (or is
-- already new) comes back unchanged, so that callers holding keys of either kind can always call
-- it: WHERE id = rekey_translate('orders', $1). The caller needs SELECT on the mapping table.
CREATE FUNCTION @extschema@.rekey_translate(tbl regclass, old_key uuid)
    RETURNS uuid
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    mapping text;
    translated uuid;
BEGIN
    -- Called for every statement of an application that holds old keys: only the checks that
    -- make the recorded mapping table the one its table's owner made for this table (the full
    -- ones run at every batch).
    SELECT @extschema@.rekey_name(m.oid) INTO mapping
      FROM @extschema@.rekey_state s
      JOIN pg_class m ON m.oid = s.mapping_table AND m.relkind = 'r'
      JOIN pg_class t ON t.oid = s.relid AND t.relowner = m.relowner
      JOIN pg_constraint k ON k.oid = s.key_constraint AND k.conrelid = s.relid AND k.contype = 'p'
     WHERE s.relid = tbl
       AND (SELECT array_agg(a.atttypid ORDER BY a.attnum) FROM pg_attribute a
             WHERE a.attrelid = m.oid AND a.attnum > 0 AND NOT a.attisdropped)
           = ARRAY['uuid'::regtype, 'uuid'::regtype, 'bigint'::regtype]::oid[];
    IF mapping IS NULL THEN
        PERFORM @extschema@.rekey_state_of(tbl);
        RAISE EXCEPTION 'no rekey of % is recorded', tbl USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    EXECUTE format('SELECT m.new_key FROM %s m WHERE m.old_key OPERATOR(pg_catalog.=) $1', mapping)
       INTO translated USING old_key;
    RETURN coalesce(translated, old_key);
END
$body$;

-- Checks a rekey of tbl: version-4 keys and references left (and why), every foreign key valid
-- with no orphan, row counts and foreign-key join counts against those when it started, the
-- mapping complete, and each rekeyed key carrying its row's creation time. One row per check,
-- with status ok, failed, changed (counts moved since the start: writes during the rekey do that)
-- or not finished.
CREATE FUNCTION @extschema@.rekey_verify(tbl regclass)
    RETURNS TABLE (check_name text, status text, detail text)
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := @extschema@.rekey_key_column(tbl);
    st @extschema@.rekey_state;
    r record;
    k record;
    n bigint;
    m bigint;
    reasons text[];
    time_expr text;
    mapping text;
BEGIN
    st := @extschema@.rekey_state_of(tbl);
    mapping := @extschema@.rekey_name(st.mapping_table);
    IF st.relid IS NULL THEN
        RAISE EXCEPTION 'no rekey of % is recorded', tbl USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;

    check_name := 'run';
    status := CASE WHEN st.finished_at IS NOT NULL THEN 'ok' ELSE 'not finished' END;
    detail := format('%s keys rekeyed in %s batches and %s runs', st.keys_done, st.batches, st.runs);
    RETURN NEXT;

    EXECUTE format('SELECT count(*) FROM ONLY %s t WHERE %s.uuid_extract_version(t.%I) = 4',
                   @extschema@.rekey_name(tbl), '@extschema@', key)
       INTO n;
    check_name := format('version-4 keys in %s.%I', tbl, key);
    IF n = 0 THEN
        status := 'ok';
        detail := 'none left';
    ELSE
        status := CASE WHEN st.finished_at IS NULL THEN 'not finished' ELSE 'failed' END;
        reasons := '{}';
        FOR k IN EXECUTE format('SELECT t.%1$I AS key, EXISTS (SELECT FROM %2$s m WHERE m.old_key = t.%1$I) AS mapped'
                                ' FROM ONLY %3$s t WHERE %4$s.uuid_extract_version(t.%1$I) = 4 ORDER BY 1 LIMIT 10',
                                key, mapping, @extschema@.rekey_name(tbl), '@extschema@')
        LOOP
            reasons := reasons || format('%s: %s', k.key,
                CASE WHEN k.mapped THEN 'an old key, inserted again after its row was rekeyed'
                     WHEN st.finished_at IS NULL AND st.pass = 1 AND k.key > st.high_water THEN 'not reached yet'
                     ELSE 'inserted with a version-4 key behind the run; CALL rekey_run again' END);
        END LOOP;
        detail := format('%s left%s: %s', n, CASE WHEN n > 10 THEN ', the first 10' ELSE '' END,
                         array_to_string(reasons, '; '));
    END IF;
    RETURN NEXT;

    FOR r IN SELECT * FROM @extschema@.rekey_columns(tbl) c WHERE c.depth > 0 LOOP
        check_name := format('version-4 values in %s.%I', r.relid, r.attname);
        IF NOT @extschema@.rekey_readable(tbl, r.relid) THEN
            status := 'failed';
            detail := format('not read: of type %s, or of another owner than %s''s', r.atttype, tbl);
        ELSE
            EXECUTE format('SELECT count(*) FROM ONLY %s t WHERE %s.uuid_extract_version(t.%I) = 4',
                           @extschema@.rekey_name(r.relid), '@extschema@', r.attname)
               INTO n;
            status := CASE WHEN n = 0 THEN 'ok' WHEN st.finished_at IS NULL THEN 'not finished' ELSE 'failed' END;
            detail := CASE WHEN n = 0 THEN 'none left' ELSE n || ' left, referencing version-4 keys' END;
        END IF;
        RETURN NEXT;
    END LOOP;

    FOR r IN SELECT * FROM @extschema@.rekey_references(tbl) LOOP
        IF NOT (@extschema@.rekey_readable(tbl, r.referencing_table) AND @extschema@.rekey_readable(tbl, r.referenced_table)) THEN
            check_name := format('foreign key %I on %s', r.constraint_name, r.referencing_table);
            status := 'failed';
            detail := 'not read: a table of another owner, or a column not of type uuid';
            RETURN NEXT;
            CONTINUE;
        END IF;
        EXECUTE format('SELECT count(*) FROM ONLY %s c WHERE %s AND NOT EXISTS (SELECT FROM ONLY %s p WHERE %s)',
                       @extschema@.rekey_name(r.referencing_table),
                       (SELECT string_agg(format('c.%I IS NOT NULL', f), ' AND ') FROM unnest(r.referencing_columns) f),
                       @extschema@.rekey_name(r.referenced_table),
                       (SELECT string_agg(format('c.%I OPERATOR(pg_catalog.=) p.%I', f, t), ' AND ')
                          FROM unnest(r.referencing_columns, r.referenced_columns) u(f, t)))
           INTO n;
        check_name := format('foreign key %I on %s', r.constraint_name, r.referencing_table);
        status := CASE WHEN r.validated AND n = 0 THEN 'ok' ELSE 'failed' END;
        detail := format('%s, %s rows without their %s row', CASE WHEN r.validated THEN 'validated' ELSE 'NOT VALIDATED' END,
                         n, r.referenced_table);
        RETURN NEXT;
    END LOOP;

    FOR r IN SELECT e.key::oid AS relid, e.value::bigint AS before FROM jsonb_each_text(st.snapshot -> 'rows') e
              ORDER BY e.key::oid::regclass::text LOOP
        IF @extschema@.rekey_name(r.relid) IS NULL THEN
            check_name := format('rows of the table with OID %s', r.relid);
            status := 'changed';
            detail := 'the table is gone';
        ELSIF NOT @extschema@.rekey_readable(tbl, r.relid) THEN
            check_name := format('rows of %s', r.relid::regclass);
            status := 'failed';
            detail := 'not read: a table of another owner now, or a column not of type uuid';
        ELSE
            check_name := format('rows of %s', r.relid::regclass);
            EXECUTE format('SELECT count(*) FROM ONLY %s', @extschema@.rekey_name(r.relid)) INTO n;
            status := CASE WHEN n = r.before THEN 'ok' ELSE 'changed' END;
            detail := format('%s at the start, %s now', r.before, n);
        END IF;
        RETURN NEXT;
    END LOOP;
    FOR r IN SELECT f.*, (st.snapshot -> 'joins' ->> f.constraint_id::text)::bigint AS before
               FROM @extschema@.rekey_references(tbl) f
              WHERE @extschema@.rekey_readable(tbl, f.referencing_table) AND @extschema@.rekey_readable(tbl, f.referenced_table)
    LOOP
        EXECUTE @extschema@.rekey_join_count_query(r.referencing_table, r.referencing_columns,
                                                   r.referenced_table, r.referenced_columns) INTO n;
        check_name := format('join %s -> %s (%I)', r.referencing_table, r.referenced_table, r.constraint_name);
        status := CASE WHEN n = r.before THEN 'ok' ELSE 'changed' END;
        detail := format('%s rows at the start, %s now', coalesce(r.before::text, 'no count'), n);
        RETURN NEXT;
    END LOOP;

    EXECUTE format('SELECT count(*) AS mapped, count(*) FILTER (WHERE EXISTS (SELECT FROM ONLY %1$s t WHERE t.%2$I = m.old_key)) AS reused,'
                   ' count(*) FILTER (WHERE NOT EXISTS (SELECT FROM ONLY %1$s t WHERE t.%2$I = m.new_key)) AS deleted FROM %3$s m',
                   @extschema@.rekey_name(tbl), key, mapping)
       INTO r;
    check_name := format('mapping %s', st.mapping_table::regclass);
    status := CASE WHEN r.mapped <> st.keys_done OR r.reused > 0 THEN 'failed'
                   WHEN r.deleted > 0 THEN 'changed' ELSE 'ok' END;
    detail := format('%s old keys mapped (%s counted by the runs), %s old keys in use again, %s new keys deleted since',
                     r.mapped, st.keys_done, r.reused, r.deleted);
    RETURN NEXT;

    time_expr := @extschema@.rekey_time_expression(tbl, st.time_column, st.time_zone);
    IF time_expr IS NULL THEN
        check_name := 'key times';
        status := 'failed';
        detail := format('time column "%s" is gone or no longer of a time type', st.time_column);
    ELSE
        EXECUTE format('SELECT count(*), count(*) FILTER (WHERE %1$s.uuid_extract_timestamp(t.%2$I) IS DISTINCT FROM'
                       ' date_trunc(''milliseconds'', CASE WHEN %3$s >= ''1970-01-01 00:00:00+00'' AND %3$s < ''10000-01-01 00:00:00+00'''
                       ' THEN %3$s ELSE $1 END)) FROM ONLY %4$s t JOIN %5$s m ON m.new_key = t.%2$I',
                       '@extschema@', key, time_expr, @extschema@.rekey_name(tbl), mapping)
           INTO n, m USING st.fallback_time;
        check_name := format('key times from %I', st.time_column);
        status := CASE WHEN m = 0 THEN 'ok' ELSE 'changed' END;
        detail := format('%s of %s rekeyed keys carry a time other than their row''s %s (to the millisecond)%s',
                         m, n, quote_ident(st.time_column),
                         CASE WHEN m = 0 THEN '' ELSE ': changed after the rekey?' END);
    END IF;
    RETURN NEXT;
END
$body$;

-- Forgets the rekey of tbl (its rekey_state row), for starting over or once it is verified. The
-- mapping table stays, for rekey_translate's callers to query directly, until its owner drops it.
CREATE FUNCTION @extschema@.rekey_forget(tbl regclass)
    RETURNS text
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    mapping oid;
BEGIN
    IF @extschema@.rekey_runner(tbl, false) IS NOT NULL THEN
        RAISE EXCEPTION 'a session is rekeying % now', tbl USING ERRCODE = 'object_in_use';
    END IF;
    DELETE FROM @extschema@.rekey_state s WHERE s.relid = tbl RETURNING s.mapping_table INTO mapping;
    IF mapping IS NULL THEN
        RAISE EXCEPTION 'no rekey of % is recorded', tbl USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN format('forgot the rekey of %s; the mapping table %s stays until you drop it', tbl,
                  coalesce(mapping::regclass::text, '(gone)'));
END
$body$;
