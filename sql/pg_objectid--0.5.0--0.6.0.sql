-- pg_objectid 0.5.0 -> 0.6.0: the rekey toolkit safe for a superuser to run on other roles'
-- tables (issue 18). The owner's code runs only as the owner, inside a security-restricted
-- operation (src/rekey/as_owner.rs); everything the documented functions call moves into
-- objectid_internal, a schema no other role can create in or rename. The documented functions
-- keep their signatures; the record of each rekey (rekey_state) keeps its rows.
\echo Use "ALTER EXTENSION pg_objectid UPDATE TO '0.6.0'" to load this file. \quit

-- Everything of 0.5.0's toolkit but its record and the record's guard, which move below.
DROP VIEW @extschema@.rekey_status;
DROP PROCEDURE @extschema@.rekey_run(regclass, name, integer, interval, interval, integer, timestamptz, boolean, text,
                                     boolean, bigint);
DROP FUNCTION @extschema@.rekey_status_rows();
DROP FUNCTION @extschema@.rekey_translate(regclass, uuid);
DROP FUNCTION @extschema@.rekey_verify(regclass);
DROP FUNCTION @extschema@.rekey_forget(regclass);
DROP FUNCTION @extschema@.rekey_batch(regclass, integer, boolean, text);
DROP FUNCTION @extschema@.rekey_join_count_query(regclass, name[], regclass, name[]);
DROP FUNCTION @extschema@.rekey_start(regclass, name, timestamptz, boolean, text);
DROP FUNCTION @extschema@.rekey_switch_default(regclass, interval, integer);
DROP FUNCTION @extschema@.rekey_plan(regclass, name, integer, text, boolean);
DROP FUNCTION @extschema@.rekey_assess_schema(regnamespace);
DROP FUNCTION @extschema@.rekey_assess(regclass);
DROP FUNCTION @extschema@.rekey_time_columns(regclass);
DROP FUNCTION @extschema@.rekey_problems(regclass, name, text, boolean);
DROP FUNCTION @extschema@.rekey_default_is_v7(regclass);
DROP FUNCTION @extschema@.rekey_statements(regclass, name, text, text);
DROP FUNCTION @extschema@.rekey_state_of(regclass);
DROP FUNCTION @extschema@.rekey_mapping_problem(regclass, oid);
DROP FUNCTION @extschema@.rekey_mapping_comment(regclass);
DROP FUNCTION @extschema@.rekey_mapping_name(regclass, text);
DROP FUNCTION @extschema@.rekey_time_expression(regclass, name, text);
DROP FUNCTION @extschema@.rekey_references(regclass);
DROP FUNCTION @extschema@.rekey_column_indexed(regclass, smallint);
DROP FUNCTION @extschema@.rekey_readable(regclass, oid);
DROP FUNCTION @extschema@.rekey_columns(regclass);
DROP FUNCTION @extschema@.rekey_key_column(regclass);
DROP FUNCTION @extschema@.rekey_runner(oid, boolean);
DROP FUNCTION @extschema@.rekey_name(oid);
DROP FUNCTION @extschema@.rekey_can_commit();

CREATE SCHEMA objectid_internal;
COMMENT ON SCHEMA objectid_internal IS 'pg_objectid internals: not an API, may change with any release';
-- The tables' owners use the copies of the UUID functions below in the batch's statements.
GRANT USAGE ON SCHEMA objectid_internal TO PUBLIC;

-- The UUID functions the batch's statements call, the same C functions as @extschema@'s, here so
-- that no one can put another function in their place.
CREATE FUNCTION objectid_internal.uuid_extract_version(uuid)
    RETURNS int2
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'uuid_extract_version_wrapper';

CREATE FUNCTION objectid_internal.uuid_extract_timestamp(uuid)
    RETURNS timestamptz
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    AS 'MODULE_PATHNAME', 'uuid_extract_timestamp_wrapper';

CREATE FUNCTION objectid_internal.uuidv7_at(timestamptz)
    RETURNS uuid
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'uuidv7_at_wrapper';

-- Whether the calling procedure may COMMIT (src/rekey/mod.rs).
CREATE FUNCTION objectid_internal.rekey_can_commit()
    RETURNS boolean
    LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED
    AS 'MODULE_PATHNAME', 'rekey_can_commit_wrapper';

-- A query returning one row, run as the owner of relid in a security-restricted operation; the
-- row as jsonb (src/rekey/as_owner.rs).
CREATE FUNCTION objectid_internal.rekey_read_as_owner(relid oid, query text)
    RETURNS jsonb
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_read_as_owner_wrapper';

-- One batch's statements (rekey_batch_statements), each run as the owner of the tables it
-- changes (relid's, or for other_queries the table's at the same place in other_tables) in a
-- security-restricted operation (src/rekey/rekey_batch_as_owner.rs, on as_owner.rs).
CREATE FUNCTION objectid_internal.rekey_batch_as_owner(relid oid, window_query text, map_query text,
                                                      rewrite_query text, other_tables oid[],
                                                      other_queries text[], after uuid,
                                                      batch_size integer, fallback_time timestamptz,
                                                      batch bigint)
    RETURNS TABLE (window_end uuid, keys uuid[], changed bigint[])
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_batch_as_owner_wrapper';

-- The new key a batch's rewrite gives a column: the element of new_keys at the place of key in
-- keys, or key itself when it is not among them (src/rekey/rekey_new_key.rs: the mapping is
-- built once per statement, then each row's lookup is a binary search). Refuses (22023) keys and
-- new keys of two lengths or a key given twice, (22004) a NULL element, and (53200) arrays too
-- large for the memory left. Arrays of several dimensions are read in storage order, as unnest()
-- reads them.
CREATE FUNCTION objectid_internal.rekey_new_key(key uuid, keys uuid[], new_keys uuid[])
    RETURNS uuid
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'rekey_new_key_wrapper';

-- The new key of old_key in a mapping table, read as the mapping table's owner in a
-- security-restricted operation once the caller's SELECT on its columns is checked
-- (src/rekey/as_owner.rs); NULL when it holds no such old key.
CREATE FUNCTION objectid_internal.rekey_translate_read(mapping oid, old_key uuid)
    RETURNS uuid
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_translate_read_wrapper';

-- REFRESH MATERIALIZED VIEW, refused when the view's query left advisory locks, cursors or
-- temporary objects in the caller's session (src/rekey/as_owner.rs).
CREATE FUNCTION objectid_internal.rekey_refresh_materialized_view(matview oid)
    RETURNS void
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_refresh_materialized_view_wrapper';

-- pgstattuple's leaf density of an index, called by OID (src/rekey/leaf_density.rs).
CREATE FUNCTION objectid_internal.rekey_leaf_density(index oid)
    RETURNS float8
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_leaf_density_wrapper';

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

-- This extension's uuidv7() and uuidv7(interval), by OID (members of the extension), and
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
                      AND e.extname OPERATOR(pg_catalog.=) 'pg_objectid'::name))
$body$;

-- The record of every rekey moves, with its rows, policies, grants and guard trigger, into the
-- internal schema.
ALTER TABLE @extschema@.rekey_state SET SCHEMA objectid_internal;
ALTER FUNCTION @extschema@.rekey_state_guard() SET SCHEMA objectid_internal;

-- A relation's name, schema-qualified and quoted whatever the search_path: how every statement
-- here names a table it runs against. NULL when there is no such relation.
CREATE FUNCTION objectid_internal.rekey_name(relid oid)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT format('%I.%I', n.nspname, c.relname)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.oid = relid
$body$;

-- How the statements here name a table they read or write: `ONLY schema.table` for a plain table,
-- so that no inheritance child is touched, and `schema.table` for a partitioned table, whose rows
-- are all in its partitions (an UPDATE routes each row to the partition that holds it). NULL when
-- there is no such relation.
CREATE FUNCTION objectid_internal.rekey_relation(relid oid)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'p'::"char" THEN '' ELSE 'ONLY ' END
       OPERATOR(pg_catalog.||) format('%I.%I', n.nspname, c.relname)
  FROM pg_class c JOIN pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
 WHERE c.oid OPERATOR(pg_catalog.=) relid
$body$;

-- The session that runs the rekey of a table in this database, or NULL: the one its record names,
-- or one that holds its rekey lock and may rekey it (a member of the owner's role: anyone can take
-- an advisory lock, so a holder without that right neither counts as a runner nor stops one);
-- with busy_only, only while it runs a statement.
CREATE FUNCTION objectid_internal.rekey_runner(relid oid, busy_only boolean)
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
      FROM objectid_internal.rekey_state s
      JOIN pg_stat_activity a ON a.pid = s.runner_pid AND a.backend_start = s.runner_started
     WHERE s.relid = rekey_runner.relid) x
 WHERE NOT busy_only OR x.state IS NULL OR x.state <> 'idle'
 LIMIT 1
$body$;

-- The key: a primary key of exactly one uuid column, or a clear error.
CREATE FUNCTION objectid_internal.rekey_key_column(tbl regclass)
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
    ELSIF cardinality(key_columns) > 1 AND EXISTS (SELECT FROM pg_partitioned_table pt WHERE pt.partrelid = tbl) THEN
        -- A partitioned table's primary key includes its partition key: partitioned by time, the
        -- key is (id, time), and every foreign key references both.
        RAISE EXCEPTION 'the primary key of % has % columns (%), not one: it includes the partition key',
                tbl, cardinality(key_columns), array_to_string(key_columns, ', ')
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'The rekey toolkit moves a primary key of one uuid column, so a table partitioned by another column is'
                         ' not rekeyed by it. Partition it by the key instead (UUIDv7 keys are in time order, so ranges of the'
                         ' key are ranges of time), or rewrite its keys in a maintenance window with UPDATE ... SET id ='
                         ' uuidv7_at(created_at) over each partition, its foreign keys ON UPDATE CASCADE.';
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

-- A column that holds values of the key (rekey_columns): its table, number, name and type, and
-- the number of foreign keys between it and the key. A batch reads them from the catalogs once,
-- as an array of these, and checks and builds everything else from that array.
CREATE TYPE objectid_internal.rekey_column AS (
    relid regclass,
    attnum smallint,
    attname name,
    atttype regtype,
    depth integer
);

-- Every column that holds values of the key: the key, every column that references it, and every
-- column that references one of those (a child's key used by a grandchild), with the number of
-- foreign keys between it and the key. These change together in each batch.
CREATE FUNCTION objectid_internal.rekey_columns(tbl regclass)
    RETURNS SETOF objectid_internal.rekey_column
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
WITH RECURSIVE reach (relid, attnum, depth, path) AS (
    SELECT tbl::oid, a.attnum, 0, ARRAY[tbl::oid::text || ':' || a.attnum]
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = objectid_internal.rekey_key_column(tbl)
    UNION ALL
    SELECT c.conrelid, c.conkey[i], r.depth + 1, r.path || (c.conrelid::text || ':' || c.conkey[i])
      FROM reach r
      -- A partitioned table's foreign key only, not its partitions' clones of it: the rewrite
      -- updates the partitioned table, which routes each row to its partition.
      JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = r.relid AND c.conparentid = 0
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

-- Every table a rewrite of the columns (rekey_columns of the key's table) touches: each table
-- that changes and, for a partitioned one, every partition below it, where its rows are and whose
-- own triggers, rules, constraints and owner matter as much as the root's. root is the table of
-- the column.
CREATE FUNCTION objectid_internal.rekey_tables(columns objectid_internal.rekey_column[])
    RETURNS TABLE (relid regclass, root regclass)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT DISTINCT x.relid, x.root
  FROM (SELECT DISTINCT c.relid FROM unnest(columns) c) r
  CROSS JOIN LATERAL (SELECT r.relid AS relid, r.relid AS root
                      UNION
                      SELECT p.relid, r.relid FROM pg_partition_tree(r.relid) p) x
 ORDER BY 2, 1
$body$;

-- Whether the toolkit may read a table that changes with tbl's key, as that table's own owner: the
-- caller may act as that owner, every partition below it is that owner's too (another role's
-- policies, casts, index and statistics expressions would run as the reader), and its columns
-- that change are all uuid.
CREATE FUNCTION objectid_internal.rekey_readable(tbl regclass, relid oid)
    RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT pg_has_role(o.relowner, 'USAGE')
   AND NOT EXISTS (SELECT FROM pg_partition_tree(relid) t JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid
                    WHERE c.relowner OPERATOR(pg_catalog.<>) o.relowner)
   AND NOT EXISTS (SELECT FROM objectid_internal.rekey_columns(tbl) x
                    WHERE x.relid OPERATOR(pg_catalog.=) rekey_readable.relid AND x.atttype <> 'uuid'::regtype)
  FROM pg_class o
 WHERE o.oid OPERATOR(pg_catalog.=) relid
$body$;

-- Whether a btree index, valid and not partial, starts with the column: what each batch needs to
-- find the rows holding a batch's keys without reading the whole table.
CREATE FUNCTION objectid_internal.rekey_column_indexed(relid regclass, attnum smallint)
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
CREATE FUNCTION objectid_internal.rekey_references(tbl regclass)
    RETURNS TABLE (depth integer, constraint_name name, referencing_table regclass,
                   referencing_columns name[], referenced_table regclass, referenced_columns name[],
                   rekeyed_columns name[], column_types regtype[], on_update text, on_delete text,
                   is_deferrable boolean, initially_deferred boolean, validated boolean, indexed boolean,
                   constraint_id oid)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
WITH cols AS (SELECT * FROM objectid_internal.rekey_columns(tbl))
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
             bool_and(objectid_internal.rekey_column_indexed(x.relid, x.attnum)) AS indexed
        FROM cols x WHERE x.relid = c.conrelid AND x.attnum = ANY (c.conkey)) rk
 WHERE c.contype = 'f' AND c.conparentid = 0
   AND EXISTS (SELECT FROM cols p WHERE p.relid = c.confrelid AND p.attnum = ANY (c.confkey))
 ORDER BY 1, c.conrelid::regclass::text, c.conname
$body$;

-- A SQL expression, over the table aliased t, for the creation time in a time column as a
-- timestamptz; NULL when the column does not exist or is of no time type.
CREATE FUNCTION objectid_internal.rekey_time_expression(tbl regclass, time_column name, time_zone text)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT CASE a.atttypid
         WHEN 'timestamptz'::regtype THEN format('t.%I', a.attname)
         WHEN 'timestamp'::regtype THEN format('pg_catalog.timezone(%L::pg_catalog.text, t.%I)', time_zone, a.attname)
         WHEN 'date'::regtype
         THEN format('pg_catalog.timezone(%L::pg_catalog.text, t.%I::pg_catalog.timestamp)', time_zone, a.attname)
       END
  FROM pg_attribute a
 WHERE a.attrelid = tbl AND a.attname = time_column AND a.attnum > 0 AND NOT a.attisdropped
$body$;

-- The mapping table's name, quoted and schema-qualified: the given one (parsed as an identifier,
-- so that it can only ever name a table; without a schema, in the table's), or <table>_rekey_map
-- beside the table, the table's name cut to whole characters of at most 53 bytes so that the
-- name fits in 63 (as pg_mbcliplen cuts the names PostgreSQL makes up; cut by characters, a
-- name of multibyte characters came out longer, and PostgreSQL's own cut of it could give the
-- table's own name). Never resolved through the search_path.
CREATE FUNCTION objectid_internal.rekey_mapping_name(tbl regclass, mapping_table text)
    RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT CASE WHEN mapping_table IS NULL
            THEN (SELECT format('%I.%I', n.nspname,
                                (SELECT left(c.relname::text, k) FROM generate_series(0, 53) k
                                  WHERE octet_length(left(c.relname::text, k)) <= 53
                                  ORDER BY k DESC LIMIT 1) || '_rekey_map')
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
CREATE FUNCTION objectid_internal.rekey_mapping_comment(tbl regclass)
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
                        AND (a.atthasdef OR a.attgenerated <> ''))
          -- Extended statistics: the planner folds their expressions (14 and later) whenever it
          -- plans a read of the table, which rekey_translate does as its caller.
          OR EXISTS (SELECT FROM pg_statistic_ext x WHERE x.stxrelid = mapping)
          OR m.relrowsecurity THEN
        -- Code of its own (a trigger, rule, CHECK, index expression, default or policy) would run
        -- as whoever inserts into or reads the mapping table.
        RETURN format('%s has a trigger, rule, constraint, index expression, statistics object, default or row-level security of its own',
                      objectid_internal.rekey_name(mapping));
    END IF;
    RETURN NULL;
END
$body$;

-- The recorded rekey of tbl, or NULL when there is none; an error when the record cannot be
-- trusted any more: its table was dropped and another made with the same OID, or its mapping
-- table no longer qualifies (rekey_mapping_problem).
CREATE FUNCTION objectid_internal.rekey_state_of(tbl regclass)
    RETURNS objectid_internal.rekey_state
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    st objectid_internal.rekey_state;
    problem text;
BEGIN
    SELECT * INTO st FROM objectid_internal.rekey_state s WHERE s.relid = tbl;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF st.key_constraint IS DISTINCT FROM (SELECT c.oid FROM pg_constraint c WHERE c.conrelid = tbl AND c.contype = 'p') THEN
        RAISE EXCEPTION 'the recorded rekey of % was of another table with the same OID, or of another primary key', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('SELECT %s.rekey_forget(%L) drops the record.', objectid_internal.rekey_api_schema(),
                                tbl::oid::text);
    END IF;
    problem := objectid_internal.rekey_mapping_problem(tbl, st.mapping_table);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'the mapping table of the rekey of % cannot be used: %', tbl, problem
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN st;
END
$body$;

-- The SQL for the time a key will carry, given the SQL of a row's time (time_expr) and of the
-- fallback time: the row's time when a UUIDv7 can carry it (1970-01-01 to 9999-12-31), else the
-- fallback (a NULL time, or one out of that range). The batch, the plan and verify all use it.
CREATE FUNCTION objectid_internal.rekey_usable_time(time_expr text, fallback text)
    RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT format('CASE WHEN %1$s OPERATOR(pg_catalog.>=) ''1970-01-01 00:00:00+00''::pg_catalog.timestamptz'
              ' AND %1$s OPERATOR(pg_catalog.<) ''10000-01-01 00:00:00+00''::pg_catalog.timestamptz'
              ' THEN %1$s ELSE %2$s END', time_expr, fallback)
$body$;

-- The statements of a batch, exactly as rekey_batch runs them (through rekey_batch_as_owner, as
-- the tables' owner in a security-restricted operation) and rekey_plan shows them:
--   window_query   the next keys after $1, the high-water key, at most $2, the batch size, in key
--                  order, whatever their version (so that the walk always goes through the key's
--                  index);
--   map_query      lock the window's version-4 keys not yet mapped and map each to its new key: $1
--                  the window, $2 the fallback time, $3 the batch number; returns the keys mapped,
--                  in order, and their new keys, in the same order;
--   other_queries  for each column of a table of another owner than the key's table's, the
--                  rewrite of that column, run as that table's owner (other_tables holds the
--                  table of each): $1 the keys, $2 their new keys;
--   rewrite_query  then the rewrite of the key and every referencing column of the key owner's
--                  tables, in one statement: $1 the keys, $2 their new keys; returns the rows
--                  changed per table, in the order of rekey_columns (for the key's table, the rows
--                  whose key became its new key).
-- Every operator and function in them is qualified: they run with search_path = pg_catalog,
-- pg_temp. mapping_table is a qualified name (rekey_name of the recorded mapping table, or the
-- one to be made).
CREATE TYPE objectid_internal.rekey_batch_statements AS (
    window_query text,
    map_query text,
    other_tables oid[],
    other_queries text[],
    rewrite_query text
);

-- The size of the next batch when rekey_run sizes them (batch_size => NULL, the default): a batch
-- holds its rows' locks until it commits, so a concurrent writer that needs one of them waits up
-- to a batch's time. The first batch has first_size keys (NULL arguments); each next one is
-- sized from the last (a window of size keys, of which keys were rekeyed, in seconds) to take
-- about target_seconds, at most twice or half the last and within least_size .. most_size keys.
-- A window without version-4 keys to rekey says nothing about the time a key takes: it doubles.
-- One row.
CREATE FUNCTION objectid_internal.rekey_batch_size(size integer, keys bigint, seconds float8)
    RETURNS TABLE (next_size integer, first_size integer, target_seconds float8, least_size integer,
                   most_size integer)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT CASE WHEN size IS NULL THEN k.first_size
            ELSE least(k.most_size, greatest(k.least_size, least(size * 2, greatest(size / 2,
                     CASE WHEN coalesce(keys, 0) = 0 OR seconds IS NULL THEN size * 2
                          ELSE (size * k.target_seconds / greatest(seconds, 0.001))::bigint END))))::integer END,
       k.first_size, k.target_seconds, k.least_size, k.most_size
  FROM (VALUES (1000, 0.5::float8, 100, 50000)) k (first_size, target_seconds, least_size, most_size)
$body$;

CREATE FUNCTION objectid_internal.rekey_statements(tbl regclass, time_column name, time_zone text,
                                                   mapping_table text,
                                                   columns objectid_internal.rekey_column[] DEFAULT NULL)
    RETURNS objectid_internal.rekey_batch_statements
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name;
    time_expr text;
    updates text[] := '{}';
    counts text[] := '{}';
    r record;
    i integer := 0;
    col name;
    key_owner oid := (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl);
    result objectid_internal.rekey_batch_statements;
BEGIN
    -- Strict in all but columns (NULL: read here).
    IF tbl IS NULL OR time_column IS NULL OR time_zone IS NULL OR mapping_table IS NULL THEN
        RETURN NULL;
    END IF;
    key := objectid_internal.rekey_key_column(tbl);
    time_expr := objectid_internal.rekey_time_expression(tbl, time_column, time_zone);
    IF time_expr IS NULL THEN
        RAISE EXCEPTION 'column "%" of % is not a timestamptz, timestamp or date column', time_column, tbl
            USING ERRCODE = 'undefined_column';
    END IF;
    result.other_tables := '{}';
    result.other_queries := '{}';
    FOR r IN SELECT c.relid, array_agg(c.attname ORDER BY c.attnum) AS names, min(c.depth) AS depth,
                    (SELECT k.relowner FROM pg_class k WHERE k.oid = c.relid) AS owner
               FROM unnest(coalesce(columns, ARRAY(SELECT c FROM objectid_internal.rekey_columns(tbl) c))) c
              GROUP BY c.relid
              ORDER BY min(c.depth), c.relid::text
    LOOP
        IF r.owner <> key_owner THEN
            -- Another owner's table: its code runs as its owner, in statements of its own, which
            -- read no other table (the keys and their new keys come as arrays, in step). A column
            -- a statement: a row with two columns referencing the key is changed once for each.
            FOREACH col IN ARRAY r.names LOOP
                result.other_tables := result.other_tables || r.relid::oid;
                result.other_queries := result.other_queries || format(
                    'UPDATE %s t SET %I = objectid_internal.rekey_new_key(t.%I, $1, $2)'
                    ' WHERE t.%I OPERATOR(pg_catalog.=) ANY ($1)',
                    objectid_internal.rekey_relation(r.relid::oid), col, col, col);
            END LOOP;
            CONTINUE;
        END IF;
        i := i + 1;
        -- One UPDATE per table, so that no row is changed twice by the statement (a
        -- self-reference, or two columns referencing the key). Each column's new value is looked
        -- up in the batch's keys and new keys ($1, $2) from the row's own value, so that a row
        -- changed meanwhile (read again by EvalPlanQual) gets the new key of what it holds then.
        updates := updates || format(
            'u%s AS (UPDATE %s t SET %s WHERE %s RETURNING %s)', i, objectid_internal.rekey_relation(r.relid::oid),
            (SELECT string_agg(format('%1$I = objectid_internal.rekey_new_key(t.%1$I, $1, $2)', n), ', ')
               FROM unnest(r.names) n),
            (SELECT string_agg(format('t.%I OPERATOR(pg_catalog.=) ANY ($1)', n), ' OR ') FROM unnest(r.names) n),
            CASE WHEN i = 1 THEN format('t.%I AS k', key) ELSE '1' END);
        -- For the key's table, the rows whose key really became one of the new keys: a BEFORE
        -- trigger could have kept the old one.
        counts := counts || CASE WHEN i = 1
            THEN '(SELECT pg_catalog.count(*) FROM u1 JOIN pg_catalog.unnest($2) n(k) ON n.k OPERATOR(pg_catalog.=) u1.k)'
            ELSE format('(SELECT pg_catalog.count(*) FROM u%s)', i) END;
    END LOOP;
    -- The next keys in key order but version-7 ones (rekeyed, the application's new ones, every
    -- key in the second pass), which the one index scan passes over instead of filling windows
    -- with nothing to rekey, each at a batch's fixed cost. "<> 7", not "= 4": the planner takes
    -- a condition on a function's result to keep 0.5 % of the rows (= 4) or 99.5 % (<> 7), and
    -- with 0.5 % it reads every key above the window's start and sorts them, for every window.
    result.window_query := format(
        'SELECT pg_catalog.array_agg(k ORDER BY k) FROM (SELECT t.%1$I AS k FROM %2$s t'
        ' WHERE t.%1$I OPERATOR(pg_catalog.>) $1 AND objectid_internal.uuid_extract_version(t.%1$I) OPERATOR(pg_catalog.<>) 7'
        ' ORDER BY t.%1$I LIMIT $2) s',
        key, objectid_internal.rekey_relation(tbl::oid));
    -- The lock and the mapping in one statement: each row is read once, its time with it, under
    -- its lock (FOR UPDATE reads the latest version of a row changed since the statement began).
    result.map_query := format(
        'WITH l AS (SELECT t.%1$I AS k, %2$s AS at FROM %3$s t'
        ' WHERE t.%1$I OPERATOR(pg_catalog.=) ANY ($1) AND objectid_internal.uuid_extract_version(t.%1$I) OPERATOR(pg_catalog.=) 4'
        ' AND NOT EXISTS (SELECT FROM %4$s m WHERE m.old_key OPERATOR(pg_catalog.=) t.%1$I) FOR UPDATE OF t),'
        ' m AS (INSERT INTO %4$s (old_key, new_key, batch) SELECT l.k, objectid_internal.uuidv7_at(l.at), $3 FROM l'
        ' RETURNING old_key, new_key)'
        ' SELECT pg_catalog.array_agg(m.old_key ORDER BY m.old_key), pg_catalog.array_agg(m.new_key ORDER BY m.old_key) FROM m',
        key, objectid_internal.rekey_usable_time(time_expr, '$2'), objectid_internal.rekey_relation(tbl::oid),
        mapping_table);
    result.rewrite_query := format('WITH %s SELECT ARRAY[%s]', array_to_string(updates, ', '),
                                   array_to_string(counts, ', '));
    RETURN result;
END
$body$;

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

    -- A foreign key the rekey does not follow (it references another column of a table that
    -- changes) with an ON UPDATE action: should that column change with the key (a generated
    -- column, a trigger's doing), PostgreSQL's action would change the referencing table's rows,
    -- and fire its AFTER triggers as whoever changed the referenced one. Foreign keys from
    -- partitions to partitions are made by PostgreSQL for those of their partitioned tables.
    FOR r IN SELECT k.conname, k.conrelid::regclass AS referencing, k.confrelid::regclass AS referenced,
                    CASE k.confupdtype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' ELSE 'SET DEFAULT' END AS action
               FROM pg_constraint k
              WHERE k.contype = 'f' AND k.conparentid = 0 AND k.confupdtype IN ('c', 'n', 'd')
                AND k.confrelid IN (SELECT x.relid FROM objectid_internal.rekey_tables(cols) x)
                AND NOT EXISTS (SELECT FROM unnest(cols) c WHERE c.relid = k.confrelid AND c.attnum = ANY (k.confkey))
              ORDER BY 2, 1
    LOOP
        RETURN QUERY SELECT '55000'::text, format('foreign key %I of %s references columns of %s other than the key, ON UPDATE %s:'
                           ' if they changed during the rekey, its action would change %s with triggers run as another role;'
                           ' make it ON UPDATE NO ACTION for the rekey', r.conname, r.referencing, r.referenced, r.action,
                           r.referencing);
    END LOOP;

    -- User triggers that the rewrite fires, on every table it touches (partitions too): UPDATE
    -- triggers on a rewritten column (matched by name: a partition's columns may be numbered
    -- otherwise), and where rows can move between partitions, their DELETE and INSERT triggers.
    FOR r IN SELECT DISTINCT x.relid, t.tgname
               FROM objectid_internal.rekey_tables(cols) x
               JOIN pg_trigger t ON t.tgrelid = x.relid
              WHERE NOT t.tgisinternal AND t.tgenabled <> 'D'
                AND (((t.tgtype & 16) <> 0
                      AND (cardinality(t.tgattr::int2[]) = 0
                           OR EXISTS (SELECT FROM unnest(cols) c2
                                        JOIN pg_attribute ta ON ta.attrelid = x.relid AND ta.attname = c2.attname
                                       WHERE c2.relid = x.root AND ta.attnum = ANY (t.tgattr::int2[]))
                           -- UPDATE OF a generated column fires when what it is made from changes.
                           OR EXISTS (SELECT FROM pg_attribute ga
                                       WHERE ga.attrelid = x.relid AND ga.attnum = ANY (t.tgattr::int2[])
                                         AND ga.attgenerated <> '')))
                     OR ((t.tgtype & 12) <> 0 AND x.relid <> x.root
                         AND EXISTS (SELECT FROM pg_partitioned_table pt WHERE pt.partrelid IN
                                       (SELECT p.relid FROM pg_partition_tree(x.root) p))))
                AND NOT fire_triggers
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

-- Columns that could supply creation times: time columns, the usual names first, then NOT NULL.
CREATE FUNCTION objectid_internal.rekey_time_columns(tbl regclass)
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

-- The materialized views whose data a rekey makes stale: those that read a column that changes
-- (rekey_columns), directly or through views or other materialized views, with how many views
-- lie between (depth 1 reads the column itself), so that refreshing them in depth order refreshes
-- each after what it reads. Found through the dependencies of their rules on the columns.
CREATE FUNCTION objectid_internal.rekey_materialized_views(tbl regclass)
    RETURNS TABLE (matview regclass, depth integer)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
WITH RECURSIVE readers (relid, depth, path) AS (
    SELECT DISTINCT w.ev_class, 1, ARRAY[w.ev_class]
      FROM objectid_internal.rekey_columns(tbl) c
      JOIN pg_depend d ON d.refclassid OPERATOR(pg_catalog.=) 'pg_class'::regclass::oid
                      AND d.refobjid OPERATOR(pg_catalog.=) c.relid::oid
                      AND d.refobjsubid OPERATOR(pg_catalog.=) c.attnum::integer
                      AND d.classid OPERATOR(pg_catalog.=) 'pg_rewrite'::regclass::oid
      JOIN pg_rewrite w ON w.oid OPERATOR(pg_catalog.=) d.objid
     WHERE w.ev_class OPERATOR(pg_catalog.<>) c.relid::oid
    UNION ALL
    -- Whatever reads a view or materialized view that reads the columns, through any of its
    -- columns: which of them carry the key is not recorded.
    SELECT w.ev_class, r.depth OPERATOR(pg_catalog.+) 1, r.path OPERATOR(pg_catalog.||) w.ev_class
      FROM readers r
      JOIN pg_depend d ON d.refclassid OPERATOR(pg_catalog.=) 'pg_class'::regclass::oid
                      AND d.refobjid OPERATOR(pg_catalog.=) r.relid
                      AND d.classid OPERATOR(pg_catalog.=) 'pg_rewrite'::regclass::oid
      JOIN pg_rewrite w ON w.oid OPERATOR(pg_catalog.=) d.objid
     WHERE w.ev_class OPERATOR(pg_catalog.<>) r.relid AND NOT w.ev_class OPERATOR(pg_catalog.=) ANY (r.path)
)
SELECT r.relid::regclass, max(r.depth)
  FROM readers r JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid
 WHERE c.relkind OPERATOR(pg_catalog.=) 'm'::"char"
 GROUP BY r.relid
 ORDER BY max(r.depth), r.relid::regclass::text
$body$;

-- What there is, for one table: key versions, the v7 keys' time span, the key's physical order,
-- the key index's size and leaf density, the foreign keys that follow it, candidate time columns.
CREATE FUNCTION objectid_internal.rekey_assess(tbl regclass)
    RETURNS TABLE (table_name regclass, key_column name, total_rows bigint, v4_keys bigint,
                   v7_keys bigint, v1_keys bigint, other_keys bigint, null_keys bigint,
                   v7_first timestamptz, v7_last timestamptz, key_correlation real,
                   key_index regclass, key_index_size bigint, key_index_leaf_density float8,
                   foreign_keys text[], time_columns name[], untimed_rows bigint[],
                   materialized_views regclass[], notes text[])
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    counts jsonb;
BEGIN
    table_name := tbl;
    key_column := objectid_internal.rekey_key_column(tbl);
    notes := '{}';
    IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl), 'USAGE') THEN
        -- The table is read only as its owner (its policies and index expressions are the owner's
        -- code), which the caller may not act as.
        RAISE EXCEPTION 'permission denied: only the owner of % or a member of its role may assess it', tbl
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    counts := objectid_internal.rekey_read_as_owner(tbl::oid, format(
        'SELECT pg_catalog.count(*) AS total, pg_catalog.count(*) FILTER (WHERE v OPERATOR(pg_catalog.=) 4) AS v4,'
        ' pg_catalog.count(*) FILTER (WHERE v OPERATOR(pg_catalog.=) 7) AS v7,'
        ' pg_catalog.count(*) FILTER (WHERE v OPERATOR(pg_catalog.=) 1) AS v1,'
        ' pg_catalog.count(*) FILTER (WHERE k IS NOT NULL AND v IS DISTINCT FROM 1'
        ' AND v IS DISTINCT FROM 4 AND v IS DISTINCT FROM 7) AS other, pg_catalog.count(*) FILTER (WHERE k IS NULL) AS nulls,'
        ' pg_catalog.min(objectid_internal.uuid_extract_timestamp(k)) FILTER (WHERE v OPERATOR(pg_catalog.=) 7) AS first,'
        ' pg_catalog.max(objectid_internal.uuid_extract_timestamp(k)) FILTER (WHERE v OPERATOR(pg_catalog.=) 7) AS last'
        ' FROM (SELECT t.%1$I AS k, objectid_internal.uuid_extract_version(t.%1$I) AS v FROM %2$s t) s',
        key_column, objectid_internal.rekey_relation(tbl::oid)));
    total_rows := (counts ->> 'total')::bigint;
    v4_keys := (counts ->> 'v4')::bigint;
    v7_keys := (counts ->> 'v7')::bigint;
    v1_keys := (counts ->> 'v1')::bigint;
    other_keys := (counts ->> 'other')::bigint;
    null_keys := (counts ->> 'nulls')::bigint;
    v7_first := (counts ->> 'first')::timestamptz;
    v7_last := (counts ->> 'last')::timestamptz;

    SELECT s.correlation INTO key_correlation
      FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename
      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname
     WHERE c.oid = tbl AND s.attname = key_column AND NOT s.inherited;
    IF key_correlation IS NULL THEN
        notes := notes || 'key correlation not available: ANALYZE the table first'::text;
    END IF;

    SELECT c.conindid::regclass INTO key_index FROM pg_constraint c WHERE c.conrelid = tbl AND c.contype = 'p';
    key_index_size := pg_relation_size(key_index);
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) key_index::oid) OPERATOR(pg_catalog.=) 'I'::"char" THEN
        -- pgstatindex reads one btree; a partitioned index is one per partition.
        notes := notes || 'leaf density not available for a partitioned index: see its partitions'' indexes'::text;
    ELSE
    BEGIN
        key_index_leaf_density := objectid_internal.rekey_leaf_density(key_index::oid);
        IF key_index_leaf_density IS NULL THEN
            notes := notes || 'leaf density not available: the pgstattuple extension is not installed'::text;
        END IF;
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
      INTO foreign_keys FROM objectid_internal.rekey_references(tbl) r;
    foreign_keys := coalesce(foreign_keys, '{}');

    time_columns := objectid_internal.rekey_time_columns(tbl);
    -- For each candidate, the rows a UUIDv7 could not carry the time of: they would get the
    -- fallback time.
    IF cardinality(time_columns) > 0 THEN
        counts := objectid_internal.rekey_read_as_owner(tbl::oid, format(
            'SELECT ARRAY[%s]::pg_catalog.int8[] AS untimed FROM %s t',
            (SELECT string_agg(format('pg_catalog.count(*) FILTER (WHERE %s IS NULL)',
                                      objectid_internal.rekey_usable_time(
                                          objectid_internal.rekey_time_expression(tbl, n, current_setting('TimeZone')),
                                          'NULL')), ', ' ORDER BY o)
               FROM unnest(time_columns) WITH ORDINALITY u(n, o)),
            objectid_internal.rekey_relation(tbl::oid)));
        untimed_rows := ARRAY(SELECT e::bigint FROM jsonb_array_elements_text(counts -> 'untimed') WITH ORDINALITY x(e, o)
                               ORDER BY o);
    ELSE
        untimed_rows := '{}';
    END IF;
    materialized_views := ARRAY(SELECT v.matview FROM objectid_internal.rekey_materialized_views(tbl) v);
    IF cardinality(materialized_views) > 0 THEN
        notes := notes || format('materialized views read the key: REFRESH them after the rekey (rekey_run''s'
                                 ' refresh_materialized_views does): %s', array_to_string(materialized_views, ', '));
    END IF;
    RETURN NEXT;
END
$body$;

-- The documented rekey_assess and rekey_references: the internal ones, which the toolkit's
-- other functions call (never a function of @extschema@, whose owner may rename it).
CREATE FUNCTION @extschema@.rekey_assess(tbl regclass)
    RETURNS TABLE (table_name regclass, key_column name, total_rows bigint, v4_keys bigint,
                   v7_keys bigint, v1_keys bigint, other_keys bigint, null_keys bigint,
                   v7_first timestamptz, v7_last timestamptz, key_correlation real,
                   key_index regclass, key_index_size bigint, key_index_leaf_density float8,
                   foreign_keys text[], time_columns name[], untimed_rows bigint[],
                   materialized_views regclass[], notes text[])
    LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT * FROM objectid_internal.rekey_assess(tbl)
$body$;

CREATE FUNCTION @extschema@.rekey_references(tbl regclass)
    RETURNS TABLE (depth integer, constraint_name name, referencing_table regclass,
                   referencing_columns name[], referenced_table regclass, referenced_columns name[],
                   rekeyed_columns name[], column_types regtype[], on_update text, on_delete text,
                   is_deferrable boolean, initially_deferred boolean, validated boolean, indexed boolean,
                   constraint_id oid)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT * FROM objectid_internal.rekey_references(tbl)
$body$;

-- rekey_assess for every table of a schema (partitioned ones as one, not their partitions) whose
-- primary key is one uuid column and whose owner's privileges the caller has.
CREATE FUNCTION @extschema@.rekey_assess_schema(schema_name regnamespace)
    RETURNS TABLE (table_name regclass, key_column name, total_rows bigint, v4_keys bigint,
                   v7_keys bigint, v1_keys bigint, other_keys bigint, null_keys bigint,
                   v7_first timestamptz, v7_last timestamptz, key_correlation real,
                   key_index regclass, key_index_size bigint, key_index_leaf_density float8,
                   foreign_keys text[], time_columns name[], untimed_rows bigint[],
                   materialized_views regclass[], notes text[])
    LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT a.*
  FROM pg_class c
  JOIN pg_constraint k ON k.conrelid = c.oid AND k.contype = 'p' AND cardinality(k.conkey) = 1
  JOIN pg_attribute ka ON ka.attrelid = c.oid AND ka.attnum = k.conkey[1] AND ka.atttypid = 'uuid'::regtype
  CROSS JOIN LATERAL objectid_internal.rekey_assess(c.oid::regclass) a
 WHERE c.relnamespace OPERATOR(pg_catalog.=) schema_name::oid AND c.relkind IN ('r', 'p') AND NOT c.relispartition
   AND pg_has_role(c.relowner, 'USAGE')
 ORDER BY c.relname
$body$;

-- The exact steps a rekey of tbl takes, the locks each takes and the rows each touches, what it
-- costs in WAL and bloat, and the problems that stop it, as lines of text. Changes nothing. For a
-- rekey already started, its recorded time column and mapping table are used, and the counts are
-- of what is left.
CREATE FUNCTION @extschema@.rekey_plan(tbl regclass, time_column name DEFAULT NULL,
                                       batch_size integer DEFAULT NULL, mapping_table text DEFAULT NULL,
                                       fire_triggers boolean DEFAULT false)
    RETURNS SETOF text
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := objectid_internal.rekey_key_column(tbl);
    st objectid_internal.rekey_state;
    mapping text;
    zone text := current_setting('TimeZone');
    problems text[];
    statements objectid_internal.rekey_batch_statements;
    -- Whether the caller may read tbl as its owner: the owner, a member of its role, and every
    -- partition below it that owner's too (otherwise the problems say so, and nothing is counted).
    as_owner boolean := objectid_internal.rekey_readable(tbl, tbl::oid);
    counts jsonb;
    time_expr text;
    untimed bigint;
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
    j integer;
    r record;
    line text;
BEGIN
    IF batch_size < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1, not %', batch_size USING ERRCODE = 'invalid_parameter_value';
    END IF;
    st := objectid_internal.rekey_state_of(tbl);
    IF st.relid IS NOT NULL THEN
        time_column := coalesce(time_column, st.time_column);
        mapping_table := objectid_internal.rekey_name(st.mapping_table);
        zone := st.time_zone;
    END IF;
    mapping := objectid_internal.rekey_mapping_name(tbl, mapping_table);
    problems := ARRAY(SELECT p.problem FROM objectid_internal.rekey_problems(tbl, time_column, mapping, fire_triggers) p);
    IF time_column IS NOT NULL THEN
        time_expr := objectid_internal.rekey_time_expression(tbl, time_column, zone);
    END IF;

    -- The tables are read as their owner only (their policies and index expressions are the
    -- owner's code): a caller who may not act as the owner sees the problems, not the counts.
    IF as_owner THEN
        counts := objectid_internal.rekey_read_as_owner(tbl::oid, format(
            'SELECT pg_catalog.count(*) AS total,'
            ' pg_catalog.count(*) FILTER (WHERE objectid_internal.uuid_extract_version(t.%1$I) OPERATOR(pg_catalog.=) 4) AS v4,'
            ' pg_catalog.count(*) FILTER (WHERE objectid_internal.uuid_extract_version(t.%1$I) OPERATOR(pg_catalog.=) 7) AS v7,'
            ' %3$s AS untimed FROM %2$s t',
            key, objectid_internal.rekey_relation(tbl::oid),
            CASE WHEN time_expr IS NULL THEN 'NULL::pg_catalog.int8'
                 ELSE format('pg_catalog.count(*) FILTER (WHERE objectid_internal.uuid_extract_version(t.%I) OPERATOR(pg_catalog.=) 4'
                             ' AND %s IS NULL)', key, objectid_internal.rekey_usable_time(time_expr, 'NULL')) END));
        total := (counts ->> 'total')::bigint;
        todo := (counts ->> 'v4')::bigint;
        v7 := (counts ->> 'v7')::bigint;
        untimed := (counts ->> 'untimed')::bigint;
    END IF;

    RETURN NEXT format('Rekey plan for %s: primary key %I to UUIDv7, creation times from %s',
                       tbl, key, coalesce(quote_ident(time_column), '(no time column given)'));
    IF as_owner THEN
        RETURN NEXT format('  keys: %s rows, %s version 4 to rekey, %s version 7 already, %s other', total, todo, v7,
                           total - todo - v7);
    ELSE
        RETURN NEXT format('  keys: not counted: only the owner of %s or a member of its role may read it for a rekey,'
                           ' and only when every partition below it has that owner', tbl);
    END IF;
    IF untimed > 0 THEN
        RETURN NEXT format('  times: %s version-4 keys have no time a UUIDv7 can carry in %I (NULL, or outside 1970-01-01 to'
                           ' 9999-12-31): they get the fallback time %s', untimed, time_column,
                           to_char(coalesce(st.fallback_time, '1970-01-01 00:00:00+00') AT TIME ZONE 'UTC',
                                   'YYYY-MM-DD HH24:MI:SS "UTC"')
                           || CASE WHEN st.relid IS NULL THEN ' (rekey_run''s fallback_time, if given)' ELSE '' END);
    END IF;
    IF st.relid IS NOT NULL THEN
        RETURN NEXT format('  started %s: %s keys rekeyed in %s batches, pass %s%s',
                           to_char(st.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'),
                           st.keys_done, st.batches, st.pass,
                           CASE WHEN st.finished_at IS NOT NULL THEN ', finished (a new run sweeps again)' ELSE '' END);
    END IF;
    RETURN NEXT format('  mapping table: %s (%s)', mapping,
                       CASE WHEN to_regclass(mapping) IS NULL THEN 'to be created' ELSE 'exists' END);

    RETURN NEXT '  columns that change together, with the rows each batch run will rewrite:';
    -- Over an array, not a cursor: no cursor is open while the owner's code runs (as_owner.rs).
    FOREACH r IN ARRAY ARRAY(SELECT x FROM (SELECT c.relid, array_agg(c.attname ORDER BY c.attnum) AS names,
                    objectid_internal.rekey_readable(tbl, c.relid) AS all_uuid
               FROM objectid_internal.rekey_columns(tbl) c
              GROUP BY c.relid ORDER BY min(c.depth), c.relid::text) x)
    LOOP
        rows_touched := NULL;
        IF r.all_uuid AND as_owner THEN
            counts := objectid_internal.rekey_read_as_owner(r.relid::oid, format(
                'SELECT pg_catalog.count(*) AS n, coalesce(pg_catalog.avg(pg_catalog.pg_column_size(t.*)), 0) AS bytes'
                ' FROM %s t WHERE %s',
                objectid_internal.rekey_relation(r.relid::oid),
                (SELECT string_agg(format('objectid_internal.uuid_extract_version(t.%I) OPERATOR(pg_catalog.=) 4', n), ' OR ')
                   FROM unnest(r.names) n)));
            rows_touched := (counts ->> 'n')::bigint;
            row_bytes := (counts ->> 'bytes')::numeric;
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

    FOR r IN SELECT * FROM objectid_internal.rekey_references(tbl) LOOP
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
    IF objectid_internal.rekey_default_is_v7(tbl) THEN
        RETURN NEXT format('  %s. new rows already get version-7 keys: the default of %I calls uuidv7()', step, key);
    ELSE
        RETURN NEXT format('  %s. SELECT %s.rekey_switch_default(%L): new rows get version-7 keys from now on',
                           step, objectid_internal.rekey_api_schema(), tbl::text);
        RETURN NEXT format('       ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s.uuidv7()', objectid_internal.rekey_name(tbl::oid), key,
                           objectid_internal.rekey_api_schema());
        RETURN NEXT format('       lock: ACCESS EXCLUSIVE on %s for a catalog change, each attempt waiting at most its lock_timeout', tbl);
    END IF;

    step := step + 1;
    RETURN NEXT format('  %s. CALL %s.rekey_run(%L, time_column => %L): records the starting counts%s', step,
                       objectid_internal.rekey_api_schema(), tbl::text, time_column,
                       CASE WHEN to_regclass(mapping) IS NULL THEN ' and creates the mapping table' ELSE '' END);
    IF to_regclass(mapping) IS NULL THEN
        RETURN NEXT format('       CREATE TABLE %s (old_key uuid PRIMARY KEY, new_key uuid NOT NULL UNIQUE, batch bigint NOT NULL)', mapping);
    END IF;
    RETURN NEXT format('     then %s, in key order, each a batch in its own'
                       ' transaction (with enable_seqscan off), as %s in a security-restricted operation:',
                       CASE WHEN batch_size IS NULL
                            THEN (SELECT format('windows of keys but version-7 ones sized to take about %s s each (%s to %s keys, %s first)',
                                                k.target_seconds, k.least_size, k.most_size, k.first_size)
                                    FROM objectid_internal.rekey_batch_size(NULL, NULL, NULL) k)
                            ELSE format('%s windows of up to %s keys but version-7 ones',
                                        coalesce(((todo + batch_size - 1) / batch_size)::text, 'the'), batch_size) END,
                       (SELECT c.relowner::regrole FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl));
    IF time_column IS NOT NULL AND objectid_internal.rekey_time_expression(tbl, time_column, zone) IS NOT NULL
       AND NOT EXISTS (SELECT FROM objectid_internal.rekey_columns(tbl) c WHERE c.atttype <> 'uuid'::regtype) THEN
        statements := objectid_internal.rekey_statements(tbl, time_column, zone, mapping);
        RETURN NEXT '     a. ' || statements.window_query;
        RETURN NEXT format('        lock: ACCESS SHARE on %s', tbl);
        RETURN NEXT '     b. ' || statements.map_query;
        RETURN NEXT format('        lock: ROW SHARE on %s, ROW EXCLUSIVE on %s; the batch''s rows FOR UPDATE, so that updates'
                           ' and deletes of them, and inserts that reference them, wait for the COMMIT', tbl, mapping);
        FOR j IN 1 .. cardinality(statements.other_queries) LOOP
            RETURN NEXT format('     c%s. as %s, the owner of %s: %s', j,
                               (SELECT c.relowner::regrole FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) statements.other_tables[j]),
                               statements.other_tables[j]::regclass, statements.other_queries[j]);
            RETURN NEXT format('        lock: ROW EXCLUSIVE on %s; every rewritten row; its foreign keys checked at the end of c.',
                               statements.other_tables[j]::regclass);
        END LOOP;
        RETURN NEXT '     c. ' || statements.rewrite_query;
        RETURN NEXT format('        lock: ROW EXCLUSIVE on %s; every rewritten row',
                           (SELECT string_agg(DISTINCT c.relid::text, ', ') FROM objectid_internal.rekey_columns(tbl) c));
        RETURN NEXT '     d. UPDATE objectid_internal.rekey_state (progress), COMMIT, then the pause; a lock not granted'
                    ' within lock_timeout rolls the batch back and retries it';
    ELSE
        RETURN NEXT '     (the statements depend on the time column)';
    END IF;
    RETURN NEXT '     then a second pass over the key from the start, for version-4 keys inserted behind the first';

    step := step + 1;
    RETURN NEXT format('  %s. SELECT * FROM %s.rekey_verify(%L): keys left, foreign keys, counts against the start',
                       step, objectid_internal.rekey_api_schema(), tbl::text);
    IF EXISTS (SELECT FROM objectid_internal.rekey_materialized_views(tbl)) THEN
        step := step + 1;
        RETURN NEXT format('  %s. refresh the materialized views that read the key, which still hold the old keys'
                           ' (rekey_run does it at the end with refresh_materialized_views => true); lock: EXCLUSIVE on each',
                           step);
        FOR r IN SELECT v.matview FROM objectid_internal.rekey_materialized_views(tbl) v LOOP
            RETURN NEXT format('       REFRESH MATERIALIZED VIEW %s', objectid_internal.rekey_name(r.matview::oid));
        END LOOP;
    END IF;
    step := step + 1;
    RETURN NEXT format('  %s. compact the indexes, which every rewritten row added an entry to; lock: SHARE UPDATE EXCLUSIVE,'
                       ' reads and writes go on', step);
    FOR r IN SELECT DISTINCT c.relid::text AS name FROM objectid_internal.rekey_columns(tbl) c ORDER BY 1 LOOP
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
    key name := objectid_internal.rekey_key_column(tbl);
    -- The extension's schema by its name now: a name written into this script would reach
    -- whatever schema its owner gave that name since.
    statement text := format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s.uuidv7()', objectid_internal.rekey_name(tbl::oid),
                             key, objectid_internal.rekey_api_schema());
    saved text := current_setting('lock_timeout');
    attempt integer := 0;
BEGIN
    IF objectid_internal.rekey_default_is_v7(tbl) THEN
        RETURN format('unchanged: the default of %s.%I already makes version-7 keys', tbl, key);
    END IF;
    IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table % to change its default', tbl
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    LOOP
        attempt := attempt + 1;
        BEGIN
            PERFORM set_config('lock_timeout', (extract(epoch FROM lock_timeout) * 1000)::bigint::text || 'ms', true);
            EXECUTE statement;
            -- What the name resolved to, by OID: never a default that calls another function.
            IF NOT objectid_internal.rekey_default_is_v7(tbl) THEN
                RAISE EXCEPTION 'the default set on %.% does not call this extension''s uuidv7()', tbl, key
                    USING ERRCODE = 'object_not_in_prerequisite_state';
            END IF;
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
CREATE FUNCTION objectid_internal.rekey_start(tbl regclass, time_column name, fallback_time timestamptz,
                                        fire_triggers boolean, mapping_table text)
    RETURNS objectid_internal.rekey_state
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := objectid_internal.rekey_key_column(tbl);
    owner oid := (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl);
    st objectid_internal.rekey_state;
    mapping text;
    mapping_oid oid;
    problems text[];
    code text;
    counts jsonb;
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
    PERFORM FROM objectid_internal.rekey_state s WHERE s.relid = tbl FOR UPDATE;
    st := objectid_internal.rekey_state_of(tbl);
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
        mapping := objectid_internal.rekey_name(st.mapping_table);
    ELSE
        mapping := objectid_internal.rekey_mapping_name(tbl, mapping_table);
    END IF;

    SELECT array_agg(p.problem), (array_agg(p.code ORDER BY p.code = '42501' DESC))[1]
      INTO problems, code
      FROM objectid_internal.rekey_problems(tbl, time_column, mapping, fire_triggers) p;
    problems := coalesce(problems, '{}');
    IF NOT objectid_internal.rekey_default_is_v7(tbl) THEN
        problems := problems || format('the default of %s.%I does not make version-7 keys: run rekey_switch_default(%L) first,'
                                       ' so that rows inserted during the rekey get them', tbl, key, tbl::text);
        code := coalesce(code, '55000');
    END IF;
    IF cardinality(problems) > 0 THEN
        RAISE EXCEPTION 'cannot rekey %: %', tbl, problems[1]
            USING ERRCODE = code,
                  DETAIL = 'Every problem found: ' || array_to_string(problems, '; '),
                  HINT = format('SELECT * FROM %s.rekey_plan(%L, %L) shows the plan and its problems.',
                                objectid_internal.rekey_api_schema(), tbl::text, time_column);
    END IF;
    IF st.relid IS NOT NULL THEN
        remaining := (objectid_internal.rekey_read_as_owner(tbl::oid, format(
            'SELECT pg_catalog.count(*) AS n FROM %s t'
            ' WHERE objectid_internal.uuid_extract_version(t.%I) OPERATOR(pg_catalog.=) 4',
            objectid_internal.rekey_relation(tbl::oid), key)) OPERATOR(pg_catalog.->>) 'n'::text)::bigint;
        UPDATE objectid_internal.rekey_state s
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
        EXECUTE format('COMMENT ON TABLE %s IS %L', objectid_internal.rekey_name(mapping_oid), objectid_internal.rekey_mapping_comment(tbl));
        IF (SELECT c.relowner FROM pg_class c WHERE c.oid = mapping_oid) <> owner THEN
            EXECUTE format('ALTER TABLE %s OWNER TO %I', objectid_internal.rekey_name(mapping_oid),
                           (SELECT rl.rolname FROM pg_roles rl WHERE rl.oid = owner));
        END IF;
    END IF;
    -- Every count in one statement, so in one snapshot (each owner's read is made under the
    -- snapshot of the statement that calls it): what rekey_verify compares with must be one state
    -- of the tables, not one per table while others write. An adopted mapping table
    -- (rekey_problems checked it was made for this table) counts as done.
    counts := (SELECT jsonb_object_agg(e.key, e.value)
                 FROM objectid_internal.rekey_counts_query(tbl, objectid_internal.rekey_name(mapping_oid)) q
                 CROSS JOIN LATERAL jsonb_each(objectid_internal.rekey_read_as_owner(q.relid, q.query)) e);
    remaining := (counts ->> 'keys to do')::bigint;
    done := (counts ->> 'mapped')::bigint;
    snapshot := jsonb_build_object(
        'rows', coalesce((SELECT jsonb_object_agg(substr(e.key, 6), e.value) FROM jsonb_each(counts) e
                           WHERE e.key LIKE 'rows %'), '{}'::jsonb),
        'joins', coalesce((SELECT jsonb_object_agg(substr(e.key, 6), e.value) FROM jsonb_each(counts) e
                            WHERE e.key LIKE 'join %'), '{}'::jsonb));

    INSERT INTO objectid_internal.rekey_state (relid, key_constraint, key_column, time_column, time_zone, fallback_time,
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

-- The queries for every count rekey_start records and rekey_verify compares with, one for each
-- owner of the tables that change, each to be read as that owner (rekey_read_as_owner, with
-- relid's owner), all in one statement so that they are taken in one snapshot. Their columns are
-- "keys to do" (the table's version-4 keys) and "mapped" (the mapping table's rows), in tbl's
-- owner's query; "rows <oid>" per table that changes, and "join <oid>" per foreign key that follows
-- the key between two tables of one owner (child rows that find their parent row), of the tables
-- the toolkit may read (rekey_readable). A join between two owners' tables is not counted: each
-- table is read only as its own owner.
CREATE FUNCTION objectid_internal.rekey_counts_query(tbl regclass, mapping_table text)
    RETURNS TABLE (relid oid, query text)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
WITH t AS (SELECT DISTINCT c.relid::oid AS relid, k.relowner
             FROM objectid_internal.rekey_columns(tbl) c JOIN pg_class k ON k.oid OPERATOR(pg_catalog.=) c.relid
            WHERE objectid_internal.rekey_readable(tbl, c.relid)),
     owners AS (SELECT k.relowner, true AS is_key_owner FROM pg_class k WHERE k.oid OPERATOR(pg_catalog.=) tbl
                UNION
                SELECT t.relowner, false FROM t
                 WHERE t.relowner OPERATOR(pg_catalog.<>) (SELECT k.relowner FROM pg_class k WHERE k.oid OPERATOR(pg_catalog.=) tbl))
SELECT CASE WHEN o.is_key_owner THEN tbl::oid ELSE (SELECT min(t.relid) FROM t WHERE t.relowner OPERATOR(pg_catalog.=) o.relowner) END,
       'SELECT ' || array_to_string(
           CASE WHEN o.is_key_owner THEN ARRAY[
               format('(SELECT pg_catalog.count(*) FROM %s t WHERE objectid_internal.uuid_extract_version(t.%I) OPERATOR(pg_catalog.=) 4) AS "keys to do"',
                      objectid_internal.rekey_relation(tbl::oid), objectid_internal.rekey_key_column(tbl)),
               format('(SELECT pg_catalog.count(*) FROM %s) AS mapped', mapping_table)] ELSE '{}' END
           || ARRAY(SELECT format('(SELECT pg_catalog.count(*) FROM %s) AS %I', objectid_internal.rekey_relation(t.relid), 'rows ' || t.relid)
                      FROM t WHERE t.relowner OPERATOR(pg_catalog.=) o.relowner ORDER BY t.relid)
           || ARRAY(SELECT format('(SELECT pg_catalog.count(*) FROM %s c JOIN %s p ON %s) AS %I',
                                  objectid_internal.rekey_relation(r.referencing_table::oid),
                                  objectid_internal.rekey_relation(r.referenced_table::oid),
                                  (SELECT string_agg(format('c.%I OPERATOR(pg_catalog.=) p.%I', f, x), ' AND ')
                                     FROM unnest(r.referencing_columns, r.referenced_columns) u(f, x)),
                                  'join ' || r.constraint_id)
                      FROM objectid_internal.rekey_references(tbl) r
                      JOIN t tc ON tc.relid OPERATOR(pg_catalog.=) r.referencing_table::oid
                      JOIN t tp ON tp.relid OPERATOR(pg_catalog.=) r.referenced_table::oid
                     WHERE tc.relowner OPERATOR(pg_catalog.=) o.relowner AND tp.relowner OPERATOR(pg_catalog.=) o.relowner
                     ORDER BY r.constraint_id), ', ')
  FROM owners o
 ORDER BY NOT o.is_key_owner, o.relowner
$body$;

-- What a batch of the rekey of a table derives from the system catalogs
-- (rekey_batch_catalog_read), before it changes anything:
--   lock_statement          the LOCK of every table the batch changes and of the mapping table,
--                           in ROW EXCLUSIVE mode, as the batch's own writes would take;
--   problems, code          what stops the rekey (rekey_problems), NULL when nothing does, and the
--                           SQLSTATE to refuse with (42501 first);
--   deferrable_constraints  the deferrable constraints of the tables that change, or that
--                           reference them, for SET CONSTRAINTS ... IMMEDIATE;
--   statements              the batch's statements (rekey_statements), NULL when there are problems.
CREATE TYPE objectid_internal.rekey_batch_catalog AS (
    lock_statement text,
    problems text[],
    code text,
    deferrable_constraints text,
    statements objectid_internal.rekey_batch_statements
);

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

-- rekey_batch_catalog_read's answer, as text (the composite's text form), kept in the backend and
-- read again only once a catalog may have changed: a relation-cache or catalog-cache
-- invalidation processed since, for the same arguments, user and security context
-- (src/rekey/rekey_batch_catalog.rs).
CREATE FUNCTION objectid_internal.rekey_batch_catalog(tbl oid, time_column text, time_zone text,
                                                      mapping_table oid, fire_triggers boolean)
    RETURNS text
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_batch_catalog_wrapper';

-- One batch of the rekey of tbl, in the caller's transaction: locks the next batch_size
-- version-4 keys in key order, maps each to a version-7 key carrying its row's creation time,
-- rewrites the key and every column referencing it in one statement, and records the progress.
-- Returns the number of keys rekeyed; at the end of a pass it moves to the next or finishes.
-- rekey_run calls it once per transaction. The batch's statements run as the tables' owner in a
-- security-restricted operation (rekey_batch_as_owner), with search_path = pg_catalog, pg_temp:
-- the tables' triggers (run with fire_triggers) must not depend on the caller's search_path, as
-- for PostgreSQL's own maintenance commands.
CREATE FUNCTION objectid_internal.rekey_batch(tbl regclass, batch_size integer, fire_triggers boolean)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    st objectid_internal.rekey_state;
    statements objectid_internal.rekey_batch_statements;
    derived objectid_internal.rekey_batch_catalog;
    again objectid_internal.rekey_batch_catalog;
    done record;
    updated bigint;
BEGIN
    IF batch_size < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1, not %', batch_size USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl), 'USAGE') THEN
        RAISE EXCEPTION 'permission denied: only the owner of % or a member of its role may rekey it', tbl
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM FROM objectid_internal.rekey_state s WHERE s.relid OPERATOR(pg_catalog.=) tbl::oid FOR UPDATE;
    -- Read for every batch: the record is a table's rows, and the mapping table's comment (which
    -- rekey_state_of checks) changes without the invalidation that rekey_batch_catalog waits for.
    st := objectid_internal.rekey_state_of(tbl);
    IF st.relid IS NULL THEN
        RAISE EXCEPTION 'no rekey of % has been started', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Start it with CALL rekey_run.';
    END IF;
    IF st.finished_at IS NOT NULL THEN
        RETURN 0;
    END IF;
    -- Again for every batch: a table, trigger, rule or privilege may have changed since the start.
    -- The tables are locked first (ROW EXCLUSIVE, as the batch's own writes would), so that no
    -- trigger, rule, constraint or column can be added between this check and the rewrite. What
    -- the catalogs say is read again only when a catalog may have changed since it was last read
    -- (rekey_batch_catalog); taking the locks processes every change committed before them.
    derived := objectid_internal.rekey_batch_catalog(tbl::oid, st.time_column::text, st.time_zone, st.mapping_table,
                                                     fire_triggers)::objectid_internal.rekey_batch_catalog;
    EXECUTE derived.lock_statement;
    -- Again now that they are locked: a foreign key added in between is followed too, its table
    -- locked as well.
    again := objectid_internal.rekey_batch_catalog(tbl::oid, st.time_column::text, st.time_zone, st.mapping_table,
                                                   fire_triggers)::objectid_internal.rekey_batch_catalog;
    IF again.lock_statement IS DISTINCT FROM derived.lock_statement THEN
        EXECUTE again.lock_statement;
    END IF;
    derived := again;
    IF cardinality(derived.problems) > 0 THEN
        RAISE EXCEPTION 'cannot go on with the rekey of %: %', tbl, derived.problems[1]
            USING ERRCODE = derived.code, DETAIL = 'Every problem found: ' || array_to_string(derived.problems, '; ');
    END IF;
    -- A deferred trigger cannot be queued inside a security-restricted operation (it would run
    -- at COMMIT, as the caller: afterTriggerMarkEvents refuses it). The foreign keys' checks are
    -- right at the end of the rewrite, when parent and children agree again, so every deferrable
    -- constraint of the tables that change is made immediate for this transaction first, as the
    -- caller, which also runs any of their checks the transaction had queued.
    IF derived.deferrable_constraints IS NOT NULL THEN
        EXECUTE 'SET CONSTRAINTS ' || derived.deferrable_constraints || ' IMMEDIATE';
    END IF;
    statements := derived.statements;
    SELECT * INTO done
      FROM objectid_internal.rekey_batch_as_owner(tbl::oid, statements.window_query, statements.map_query,
                                                  statements.rewrite_query, statements.other_tables,
                                                  statements.other_queries, st.high_water,
                                                  batch_size, st.fallback_time, st.batches + 1);
    IF done.window_end IS NULL THEN
        UPDATE objectid_internal.rekey_state s
           SET pass = 2, high_water = '00000000-0000-0000-0000-000000000000',
               finished_at = CASE WHEN s.pass >= 2 THEN clock_timestamp() END
         WHERE s.relid OPERATOR(pg_catalog.=) tbl::oid;
        RETURN 0;
    END IF;
    IF done.keys IS NULL THEN
        -- A window without a version-4 key to rekey: walk on.
        UPDATE objectid_internal.rekey_state s SET high_water = done.window_end
         WHERE s.relid OPERATOR(pg_catalog.=) tbl::oid;
        RETURN 0;
    END IF;
    IF done.changed[1] <> cardinality(done.keys) THEN
        -- The keys are locked, so only a BEFORE UPDATE trigger that keeps or changes the key can do
        -- this: never commit such a batch, whose mapping would name keys that exist nowhere.
        RAISE EXCEPTION 'rekey of %: % keys locked but % of them changed to their new key', tbl,
                cardinality(done.keys), done.changed[1]
            USING ERRCODE = 'triggered_action_exception',
                  HINT = 'A trigger on the table changes the key on UPDATE; disable it for the rekey.';
    END IF;
    UPDATE objectid_internal.rekey_state s
       SET keys_done = s.keys_done + cardinality(done.keys), run_keys_done = s.run_keys_done + cardinality(done.keys),
           keys_total = greatest(s.keys_total, s.keys_done + cardinality(done.keys)),
           batches = s.batches + 1, high_water = done.window_end, last_batch_at = clock_timestamp()
     WHERE s.relid OPERATOR(pg_catalog.=) tbl::oid;
    GET DIAGNOSTICS updated = ROW_COUNT;
    IF updated <> 1 THEN
        -- Never keys rewritten without their progress recorded.
        RAISE EXCEPTION 'the record of the rekey of % could not be updated', tbl USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN cardinality(done.keys);
END
$body$;

-- Every way out of rekey_run, whether it finished, paused or failed: the session's rekey lock
-- released when the run holds it (a session lock, which neither a COMMIT nor an error releases).
-- rekey_run cannot have a single exit in PL/pgSQL (it commits, and a block with an exception
-- handler cannot): each of its exception handlers calls this, then raises the error again, which
-- keeps its own message, detail, hint and context. What else rekey_run changes needs no such
-- care on an error: its settings and its record of the session are the transaction's, and the
-- error's rollback restores them.
CREATE FUNCTION objectid_internal.rekey_run_end(lock_key bigint, unlock boolean)
    RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
BEGIN
    IF unlock THEN
        PERFORM pg_advisory_unlock(lock_key);
    END IF;
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
-- asks for the whole work in the current transaction. With refresh_materialized_views, the
-- materialized views that read the key (rekey_materialized_views) are refreshed once it finishes.
-- Without a batch_size, each batch is sized from the time the last one took
-- (rekey_batch_size), so that none holds its locks for much more than half a second.
CREATE PROCEDURE @extschema@.rekey_run(tbl regclass, time_column name DEFAULT NULL,
                                       batch_size integer DEFAULT NULL, pause interval DEFAULT '0',
                                       lock_timeout interval DEFAULT '1s', max_retries integer DEFAULT 10,
                                       fallback_time timestamptz DEFAULT NULL,
                                       fire_triggers boolean DEFAULT false, mapping_table text DEFAULT NULL,
                                       in_one_transaction boolean DEFAULT false, max_batches bigint DEFAULT NULL,
                                       refresh_materialized_views boolean DEFAULT false)
    LANGUAGE plpgsql
    AS $body$
DECLARE
    -- Nothing here but qualified names: a procedure cannot pin its search_path (it commits), so
    -- these are compiled, and their initial values computed, under the caller's path. The types
    -- too: text and float8 are names a schema on that path could give a domain of its own
    -- (bigint, integer and boolean are keywords, always pg_catalog's).
    committing boolean := objectid_internal.rekey_can_commit();
    lock_key bigint;
    lock_ms pg_catalog.text;
    saved_timeout pg_catalog.text := pg_catalog.current_setting('lock_timeout');
    -- The caller's search_path: every transaction of the run uses only pg_catalog (below), so that
    -- no function or operator of a schema on the caller's path can stand in for a built-in.
    saved_path pg_catalog.text := pg_catalog.current_setting('search_path');
    holder integer;
    holding boolean;
    st objectid_internal.rekey_state;
    n bigint;
    attempt integer;
    batches_run bigint := 0;
    rate pg_catalog.float8;
    failure pg_catalog.text;
    failure_state pg_catalog.text;
    r record;
    size integer := batch_size;
    sizing pg_catalog.text;
    batch_started pg_catalog.timestamptz;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    committing := committing AND NOT in_one_transaction;
    -- 'reky' in the high half, the table in the low half; rekey_runner looks for it.
    lock_key := (1919249273::bigint << 32) | tbl::oid::bigint;
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'rekey_run needs a table' USING ERRCODE = 'null_value_not_allowed';
    ELSIF batch_size < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1, not %', batch_size USING ERRCODE = 'invalid_parameter_value';
    ELSIF max_retries IS NULL OR max_retries < 0 OR pause IS NULL OR pause < interval '0'
          OR lock_timeout IS NULL OR lock_timeout < interval '0' OR lock_timeout >= interval '24 days'
          OR max_batches < 0 OR in_one_transaction IS NULL OR fire_triggers IS NULL
          OR refresh_materialized_views IS NULL THEN
        RAISE EXCEPTION 'max_retries, pause, lock_timeout (under 24 days) and max_batches must not be negative, nor NULL but max_batches'
            USING ERRCODE = 'invalid_parameter_value';
    ELSIF fallback_time < '1970-01-01 00:00:00+00' OR fallback_time >= '10000-01-01 00:00:00+00' THEN
        RAISE EXCEPTION 'fallback_time % is not a time a UUIDv7 can carry', fallback_time
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Give a time from 1970-01-01 to 9999-12-31.';
    END IF;
    IF NOT objectid_internal.rekey_can_commit() AND NOT in_one_transaction THEN
        RAISE EXCEPTION 'rekey_run must be called by a CALL of its own, outside a transaction block'
            USING ERRCODE = 'active_sql_transaction',
                  DETAIL = 'It commits after each batch, so that no lock is held longer than one batch; inside a transaction block, a function or a block with an exception handler it cannot.',
                  HINT = 'Run the CALL on its own, or pass in_one_transaction => true to rekey every key in the current transaction, which then holds every batch''s locks until it ends.';
    END IF;
    -- REFRESH needs the materialized view's owner's privileges (PostgreSQL then runs its query as
    -- that owner, in a security-restricted operation): known before anything changes.
    IF refresh_materialized_views THEN
        SELECT string_agg(format('%s (owned by %s)', v.matview, c.relowner::regrole), ', ') INTO failure
          FROM objectid_internal.rekey_materialized_views(tbl) v
          JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) v.matview::oid
         WHERE NOT pg_has_role(c.relowner, 'USAGE');
        IF failure IS NOT NULL THEN
            RAISE EXCEPTION 'refresh_materialized_views: you may not refresh %', failure
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'Leave refresh_materialized_views out and have their owners refresh them after the rekey.';
        END IF;
        -- rekey_refresh_materialized_view (in Rust) reads a view's name as UTF-8 text, which a name
        -- outside ASCII in a database of another encoding is not (server_text in as_owner.rs).
        IF getdatabaseencoding() <> 'UTF8' THEN
            SELECT string_agg(v.matview::text, ', ') INTO failure
              FROM objectid_internal.rekey_materialized_views(tbl) v
             WHERE objectid_internal.rekey_name(v.matview::oid) !~ '^[[:ascii:]]*$';
            IF failure IS NOT NULL THEN
                RAISE EXCEPTION 'the rekey toolkit does not yet support names with characters outside ASCII in a database of encoding %: materialized views %',
                        getdatabaseencoding(), failure
                    USING ERRCODE = 'feature_not_supported',
                          HINT = 'Leave refresh_materialized_views out and refresh them after the rekey.';
            END IF;
        END IF;
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

    -- One session at a time: a session lock kept across the batches' commits (released by
    -- rekey_run_end on every way out), or in one transaction a transaction lock. Each batch also locks the table's
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
    -- Only a session running a statement stops the run: one left idle with the lock (a cancel
    -- between two of a run's statements outside its exception handlers, after a COMMIT, leaves
    -- a session lock behind, which PL/pgSQL cannot prevent) runs nothing, and the batches take
    -- turns on the table's rekey_state row anyway.
    holder := objectid_internal.rekey_runner(tbl, true);
    IF holder IS NOT NULL AND holder <> pg_backend_pid() THEN
        PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
        RAISE EXCEPTION 'another session (process %) is rekeying % now', holder, tbl
            USING ERRCODE = 'object_in_use';
    END IF;
    IF NOT holding THEN
        RAISE NOTICE 'rekey of %: a session that is not running it, or may not rekey it, holds its rekey lock; going on without it', tbl;
    END IF;

    BEGIN
        st := objectid_internal.rekey_start(tbl, time_column, fallback_time, fire_triggers, mapping_table);
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
        RAISE;
    END;
    IF batch_size IS NULL THEN
        SELECT k.first_size, format('batches sized to take about %s s each (%s to %s keys, %s first)', k.target_seconds,
                                    k.least_size, k.most_size, k.first_size)
          INTO size, sizing
          FROM objectid_internal.rekey_batch_size(NULL, NULL, NULL) k;
    ELSE
        sizing := format('batches of up to %s keys', batch_size);
    END IF;
    RAISE NOTICE 'rekey of %: % of % version-4 keys done, pass %, %', tbl, st.keys_done, st.keys_total, st.pass, sizing;
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
                batch_started := clock_timestamp();
                n := objectid_internal.rekey_batch(tbl, size, fire_triggers);
                PERFORM set_config('lock_timeout', saved_timeout, true);
                IF batch_size IS NULL THEN
                    size := (SELECT k.next_size
                               FROM objectid_internal.rekey_batch_size(size, n,
                                        extract(epoch FROM clock_timestamp() - batch_started)::pg_catalog.float8) k);
                END IF;
                EXIT;
            EXCEPTION
                WHEN lock_not_available OR deadlock_detected OR serialization_failure
                     OR unique_violation OR foreign_key_violation THEN
                    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, failure_state = RETURNED_SQLSTATE;
                    attempt := attempt + 1;
                    IF attempt > max_retries THEN
                        PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
                        RAISE EXCEPTION 'rekey of % stopped: a batch failed % times, last with: %', tbl, attempt, failure
                            USING ERRCODE = failure_state,
                                  HINT = 'Nothing of that batch was kept. CALL rekey_run again to resume, perhaps with a longer lock_timeout or more retries.';
                    END IF;
                    RAISE NOTICE 'rekey of %: batch rolled back (%), retry % of %', tbl, failure, attempt, max_retries;
                WHEN OTHERS OR query_canceled THEN
                    PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
                    RAISE;
            END;
            BEGIN
                PERFORM pg_sleep(least(0.1 * attempt, 2));
            EXCEPTION WHEN query_canceled THEN
                PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
                RAISE;
            END;
        END LOOP;
        batches_run := batches_run + 1;

        SELECT * INTO st FROM objectid_internal.rekey_state s WHERE s.relid = tbl;
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
                PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
                RAISE;
            END;
        END IF;
    END LOOP;

    IF st.finished_at IS NOT NULL THEN
        RAISE NOTICE 'rekey of % finished: % keys rekeyed in % batches; check it with SELECT * FROM %.rekey_verify(%)',
            tbl, st.keys_done, st.batches, objectid_internal.rekey_api_schema(), quote_literal(tbl::text);
        IF refresh_materialized_views THEN
            BEGIN
                -- Over an array, not a cursor: no cursor is open while the owner's code runs (as_owner.rs).
                FOREACH r IN ARRAY ARRAY(SELECT x FROM (SELECT v.matview FROM objectid_internal.rekey_materialized_views(tbl) v) x)
                LOOP
                    PERFORM objectid_internal.rekey_refresh_materialized_view(r.matview::oid);
                    RAISE NOTICE 'rekey of %: refreshed materialized view %', tbl, r.matview;
                END LOOP;
            EXCEPTION WHEN OTHERS OR query_canceled THEN
                PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
                RAISE;
            END;
        END IF;
    ELSE
        RAISE NOTICE 'rekey of % paused after % batches: % of % keys done; CALL rekey_run(%) again to go on',
            tbl, batches_run, st.keys_done, st.keys_total, quote_literal(tbl::text);
    END IF;
    UPDATE objectid_internal.rekey_state s SET runner_pid = NULL, runner_started = NULL
     WHERE s.relid = tbl AND s.runner_pid = pg_backend_pid();
    PERFORM objectid_internal.rekey_run_end(lock_key, committing AND holding);
    IF NOT committing THEN
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
CREATE FUNCTION objectid_internal.rekey_status_rows()
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
       -- In numeric, and only for a time an interval can hold: a table's owner writes its row,
       -- and no value there may break the view for everyone else.
       CASE WHEN l.pid IS NOT NULL AND r.rate > 0
                 AND (s.keys_total::numeric - s.keys_done) / r.rate::numeric BETWEEN 0 AND 1e10
            THEN make_interval(secs => round((s.keys_total::numeric - s.keys_done) / r.rate::numeric)) END,
       s.batches, s.runs, s.started_at, s.last_batch_at, s.finished_at, l.pid, s.mapping_table::regclass
  FROM objectid_internal.rekey_state s
  CROSS JOIN LATERAL (
      SELECT CASE WHEN s.last_batch_at > s.run_started_at
                  THEN s.run_keys_done / extract(epoch FROM s.last_batch_at - s.run_started_at) END AS rate) r
  LEFT JOIN LATERAL (SELECT objectid_internal.rekey_runner(s.relid, true) AS pid) l ON true
 ORDER BY s.relid::regclass::text
$body$;

CREATE VIEW @extschema@.rekey_status AS SELECT * FROM objectid_internal.rekey_status_rows();
GRANT SELECT ON @extschema@.rekey_status TO PUBLIC;

-- The new key of an old key of tbl, from its mapping table; a key that was never rekeyed (or is
-- already new) comes back unchanged, so that callers holding keys of either kind can always call
-- it, for the whole migration: WHERE id = rekey_translate('orders', $1). Before a rekey starts
-- every key maps to itself; after rekey_forget the mapping table made for tbl (found by its
-- comment) still answers while it exists. The caller needs SELECT on the mapping table's old_key
-- and new_key (checked); the table must pass the checks rekey_batch makes of it
-- (rekey_mapping_problem: the table's owner's, made for tbl, with no trigger, rule, policy, index
-- or statistics expression or default of its own), and is read as its owner
-- (rekey_translate_read). Parallel unsafe: that read switches user and settings.
CREATE FUNCTION @extschema@.rekey_translate(tbl regclass, old_key uuid)
    RETURNS uuid
    LANGUAGE plpgsql STABLE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '100ms'
    AS $body$
DECLARE
    mapping oid;
    problem text;
    translated uuid;
BEGIN
    -- The recorded rekey's mapping table, after rekey_state_of's checks (the record is of this
    -- table, its mapping table qualifies). A lock another role takes on rekey_state (which everyone
    -- may read and write, through its policies) must not stop the application's translations:
    -- waiting at most lock_timeout (this function's setting), it goes by the comment instead.
    BEGIN
        SELECT s.mapping_table INTO mapping FROM objectid_internal.rekey_state s
         WHERE s.relid OPERATOR(pg_catalog.=) tbl::oid;
        IF FOUND THEN
            PERFORM objectid_internal.rekey_state_of(tbl);
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        mapping := NULL;
    END;
    IF mapping IS NULL THEN
        -- The mapping table made for this table, by the comment that binds it (after rekey_forget,
        -- or while the record cannot be read): the default name first, then any table of the
        -- table's owner with that comment; another role's table with it is not even looked at.
        mapping := to_regclass(objectid_internal.rekey_mapping_name(tbl, NULL));
        IF mapping IS NULL OR obj_description(mapping, 'pg_class') IS DISTINCT FROM objectid_internal.rekey_mapping_comment(tbl) THEN
            SELECT d.objoid INTO mapping
              FROM pg_description d JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objoid
             WHERE d.classoid OPERATOR(pg_catalog.=) 'pg_class'::regclass::oid AND d.objsubid OPERATOR(pg_catalog.=) 0
               AND d.description OPERATOR(pg_catalog.=) objectid_internal.rekey_mapping_comment(tbl)
               AND c.relowner OPERATOR(pg_catalog.=) (SELECT t.relowner FROM pg_class t WHERE t.oid OPERATOR(pg_catalog.=) tbl)
             ORDER BY d.objoid LIMIT 1;
        END IF;
    END IF;
    IF mapping IS NULL THEN
        -- No rekey started, nor a mapping table left by one: every key is its own.
        RETURN old_key;
    END IF;
    problem := objectid_internal.rekey_mapping_problem(tbl, mapping);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'the mapping table of the rekey of % cannot be used: %', tbl, problem
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    -- Read as the mapping table's owner, in a security-restricted operation: whatever its owner
    -- attached to it since the checks above (an index or statistics expression the planner
    -- folds) runs as the owner, never as the caller.
    translated := objectid_internal.rekey_translate_read(mapping, old_key);
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
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    key name := objectid_internal.rekey_key_column(tbl);
    st objectid_internal.rekey_state;
    r record;
    k record;
    got jsonb;
    counts jsonb;
    n bigint;
    reasons text[];
    time_expr text;
    mapping text;
BEGIN
    IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl), 'USAGE') THEN
        -- The tables are read as their owner only (their policies and index expressions are the
        -- owner's code).
        RAISE EXCEPTION 'permission denied: only the owner of % or a member of its role may verify its rekey', tbl
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    st := objectid_internal.rekey_state_of(tbl);
    mapping := objectid_internal.rekey_name(st.mapping_table);
    IF st.relid IS NULL THEN
        RAISE EXCEPTION 'no rekey of % is recorded', tbl USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;

    check_name := 'run';
    status := CASE WHEN st.finished_at IS NOT NULL THEN 'ok' ELSE 'not finished' END;
    detail := format('%s keys rekeyed in %s batches and %s runs', st.keys_done, st.batches, st.runs);
    RETURN NEXT;

    got := objectid_internal.rekey_read_as_owner(tbl::oid, format(
        'SELECT pg_catalog.count(*) AS n, (SELECT pg_catalog.jsonb_agg(f ORDER BY f.key) FROM ('
        '     SELECT t2.%1$I AS key, EXISTS (SELECT FROM %2$s m WHERE m.old_key OPERATOR(pg_catalog.=) t2.%1$I) AS mapped'
        '       FROM %3$s t2 WHERE objectid_internal.uuid_extract_version(t2.%1$I) OPERATOR(pg_catalog.=) 4'
        '      ORDER BY 1 LIMIT 10) f) AS first'
        ' FROM %3$s t WHERE objectid_internal.uuid_extract_version(t.%1$I) OPERATOR(pg_catalog.=) 4',
        key, mapping, objectid_internal.rekey_relation(tbl::oid)));
    n := (got ->> 'n')::bigint;
    check_name := format('version-4 keys in %s.%I', tbl, key);
    IF n = 0 THEN
        status := 'ok';
        detail := 'none left';
    ELSE
        status := CASE WHEN st.finished_at IS NULL THEN 'not finished' ELSE 'failed' END;
        reasons := '{}';
        FOR k IN SELECT (e ->> 'key')::uuid AS key, (e ->> 'mapped')::boolean AS mapped
                   FROM jsonb_array_elements(got -> 'first') e
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

    -- Over an array, not a cursor: no cursor is open while the owner's code runs (as_owner.rs).
    FOREACH r IN ARRAY ARRAY(SELECT x FROM (SELECT * FROM objectid_internal.rekey_columns(tbl) c WHERE c.depth > 0) x)
    LOOP
        check_name := format('version-4 values in %s.%I', r.relid, r.attname);
        IF NOT objectid_internal.rekey_readable(tbl, r.relid::oid) THEN
            status := 'failed';
            detail := format('not read: of type %s, or of an owner you may not act as', r.atttype);
        ELSE
            n := (objectid_internal.rekey_read_as_owner(r.relid::oid, format(
                      'SELECT pg_catalog.count(*) AS n FROM %s t'
                      ' WHERE objectid_internal.uuid_extract_version(t.%I) OPERATOR(pg_catalog.=) 4',
                      objectid_internal.rekey_relation(r.relid::oid), r.attname)) OPERATOR(pg_catalog.->>) 'n'::text)::bigint;
            status := CASE WHEN n = 0 THEN 'ok' WHEN st.finished_at IS NULL THEN 'not finished' ELSE 'failed' END;
            detail := CASE WHEN n = 0 THEN 'none left' ELSE n || ' left, referencing version-4 keys' END;
        END IF;
        RETURN NEXT;
    END LOOP;

    -- Over an array, not a cursor: no cursor is open while the owner's code runs (as_owner.rs).
    FOREACH r IN ARRAY ARRAY(SELECT x FROM (SELECT * FROM objectid_internal.rekey_references(tbl)) x)
    LOOP
        check_name := format('foreign key %I on %s', r.constraint_name, r.referencing_table);
        IF NOT (objectid_internal.rekey_readable(tbl, r.referencing_table::oid)
                AND objectid_internal.rekey_readable(tbl, r.referenced_table::oid)) THEN
            status := 'failed';
            detail := 'not read: a table of an owner you may not act as, or a column not of type uuid';
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF (SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) r.referencing_table)
           <> (SELECT c.relowner FROM pg_class c WHERE c.oid OPERATOR(pg_catalog.=) r.referenced_table) THEN
            -- Each table is read only as its own owner, so rows of two owners are never joined:
            -- a validated foreign key has no orphan, PostgreSQL checked each row the rekey wrote.
            status := CASE WHEN r.validated THEN 'ok' ELSE 'failed' END;
            detail := format('%s; rows without their %s row not counted: the tables have different owners',
                             CASE WHEN r.validated THEN 'validated' ELSE 'NOT VALIDATED' END, r.referenced_table);
            RETURN NEXT;
            CONTINUE;
        END IF;
        n := (objectid_internal.rekey_read_as_owner(r.referencing_table::oid, format(
                  'SELECT pg_catalog.count(*) AS n FROM %s c WHERE %s AND NOT EXISTS (SELECT FROM %s p WHERE %s)',
                  objectid_internal.rekey_relation(r.referencing_table::oid),
                  (SELECT string_agg(format('c.%I IS NOT NULL', f), ' AND ') FROM unnest(r.referencing_columns) f),
                  objectid_internal.rekey_relation(r.referenced_table::oid),
                  (SELECT string_agg(format('c.%I OPERATOR(pg_catalog.=) p.%I', f, t), ' AND ')
                     FROM unnest(r.referencing_columns, r.referenced_columns) u(f, t))))
              OPERATOR(pg_catalog.->>) 'n'::text)::bigint;
        status := CASE WHEN r.validated AND n = 0 THEN 'ok' ELSE 'failed' END;
        detail := format('%s, %s rows without their %s row', CASE WHEN r.validated THEN 'validated' ELSE 'NOT VALIDATED' END,
                         n, r.referenced_table);
        RETURN NEXT;
    END LOOP;

    -- The counts now, in one snapshot as at the start.
    counts := (SELECT jsonb_object_agg(e.key, e.value)
                 FROM objectid_internal.rekey_counts_query(tbl, mapping) q
                 CROSS JOIN LATERAL jsonb_each(objectid_internal.rekey_read_as_owner(q.relid, q.query)) e);
    FOR r IN SELECT e.key::oid AS relid, e.value::bigint AS before FROM jsonb_each_text(st.snapshot -> 'rows') e
              ORDER BY e.key::oid::regclass::text LOOP
        IF objectid_internal.rekey_name(r.relid) IS NULL THEN
            check_name := format('rows of the table with OID %s', r.relid);
            status := 'changed';
            detail := 'the table is gone';
        ELSIF NOT counts ? ('rows ' || r.relid) THEN
            check_name := format('rows of %s', r.relid::regclass);
            status := 'failed';
            detail := 'not read: a table of an owner you may not act as now, or a column not of type uuid';
        ELSE
            check_name := format('rows of %s', r.relid::regclass);
            n := (counts ->> ('rows ' || r.relid))::bigint;
            status := CASE WHEN n = r.before THEN 'ok' ELSE 'changed' END;
            detail := format('%s at the start, %s now', r.before, n);
        END IF;
        RETURN NEXT;
    END LOOP;
    FOR r IN SELECT f.*, (st.snapshot -> 'joins' ->> f.constraint_id::text)::bigint AS before
               FROM objectid_internal.rekey_references(tbl) f
              WHERE counts ? ('join ' || f.constraint_id)
    LOOP
        n := (counts ->> ('join ' || r.constraint_id))::bigint;
        check_name := format('join %s -> %s (%I)', r.referencing_table, r.referenced_table, r.constraint_name);
        status := CASE WHEN n = r.before THEN 'ok' ELSE 'changed' END;
        detail := format('%s rows at the start, %s now', coalesce(r.before::text, 'no count'), n);
        RETURN NEXT;
    END LOOP;

    got := objectid_internal.rekey_read_as_owner(tbl::oid, format(
        'SELECT pg_catalog.count(*) AS mapped,'
        ' pg_catalog.count(*) FILTER (WHERE EXISTS (SELECT FROM %1$s t WHERE t.%2$I OPERATOR(pg_catalog.=) m.old_key)) AS reused,'
        ' pg_catalog.count(*) FILTER (WHERE NOT EXISTS (SELECT FROM %1$s t WHERE t.%2$I OPERATOR(pg_catalog.=) m.new_key))'
        ' AS deleted FROM %3$s m',
        objectid_internal.rekey_relation(tbl::oid), key, mapping));
    check_name := format('mapping %s', st.mapping_table::regclass);
    status := CASE WHEN (got ->> 'mapped')::bigint <> st.keys_done OR (got ->> 'reused')::bigint > 0 THEN 'failed'
                   WHEN (got ->> 'deleted')::bigint > 0 THEN 'changed' ELSE 'ok' END;
    detail := format('%s old keys mapped (%s counted by the runs), %s old keys in use again, %s new keys deleted since',
                     got ->> 'mapped', st.keys_done, got ->> 'reused', got ->> 'deleted');
    RETURN NEXT;

    time_expr := objectid_internal.rekey_time_expression(tbl, st.time_column, st.time_zone);
    IF time_expr IS NULL THEN
        check_name := 'key times';
        status := 'failed';
        detail := format('time column "%s" is gone or no longer of a time type', st.time_column);
    ELSE
        got := objectid_internal.rekey_read_as_owner(tbl::oid, format(
            'SELECT pg_catalog.count(*) AS n, pg_catalog.count(*) FILTER (WHERE objectid_internal.uuid_extract_timestamp(t.%1$I)'
            ' IS DISTINCT FROM pg_catalog.date_trunc(''milliseconds''::pg_catalog.text, %2$s)) AS m'
            ' FROM %3$s t JOIN %4$s m ON m.new_key OPERATOR(pg_catalog.=) t.%1$I',
            key, objectid_internal.rekey_usable_time(time_expr, format('%L::pg_catalog.timestamptz', st.fallback_time)),
            objectid_internal.rekey_relation(tbl::oid), mapping));
        check_name := format('key times from %I', st.time_column);
        status := CASE WHEN (got ->> 'm')::bigint = 0 THEN 'ok' ELSE 'changed' END;
        detail := format('%s of %s rekeyed keys carry a time other than their row''s %s (to the millisecond)%s',
                         got ->> 'm', got ->> 'n', quote_ident(st.time_column),
                         CASE WHEN (got ->> 'm')::bigint = 0 THEN '' ELSE ': changed after the rekey?' END);
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
    IF objectid_internal.rekey_runner(tbl, false) IS NOT NULL THEN
        RAISE EXCEPTION 'a session is rekeying % now', tbl USING ERRCODE = 'object_in_use';
    END IF;
    DELETE FROM objectid_internal.rekey_state s WHERE s.relid = tbl RETURNING s.mapping_table INTO mapping;
    IF mapping IS NULL THEN
        RAISE EXCEPTION 'no rekey of % is recorded', tbl USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN format('forgot the rekey of %s; the mapping table %s stays until you drop it', tbl,
                  coalesce(mapping::regclass::text, '(gone)'));
END
$body$;
