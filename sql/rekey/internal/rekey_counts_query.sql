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
