-- One query for every count rekey_start records and rekey_verify compares with, so that they are
-- taken in one snapshot: its columns are "keys to do" (the table's version-4 keys), "mapped" (the
-- mapping table's rows), "rows <oid>" per table that changes and "join <oid>" per foreign key that
-- follows the key (child rows that find their parent row), of the tables the toolkit may read as
-- tbl's owner (rekey_readable). Read with rekey_read_as_owner.
CREATE FUNCTION objectid_internal.rekey_counts_query(tbl regclass, mapping_table text)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT format('SELECT (SELECT pg_catalog.count(*) FROM %s t'
              ' WHERE objectid_internal.uuid_extract_version(t.%I) OPERATOR(pg_catalog.=) 4) AS "keys to do",'
              ' (SELECT pg_catalog.count(*) FROM %s) AS mapped%s%s',
              objectid_internal.rekey_relation(tbl::oid), objectid_internal.rekey_key_column(tbl), mapping_table,
              (SELECT string_agg(format(', (SELECT pg_catalog.count(*) FROM %s) AS %I',
                                        objectid_internal.rekey_relation(x.relid), 'rows ' || x.relid), '' ORDER BY x.relid)
                 FROM (SELECT DISTINCT c.relid::oid AS relid FROM objectid_internal.rekey_columns(tbl) c) x
                WHERE objectid_internal.rekey_readable(tbl, x.relid)),
              coalesce((SELECT string_agg(format(', (SELECT pg_catalog.count(*) FROM %s c JOIN %s p ON %s) AS %I',
                                                 objectid_internal.rekey_relation(r.referencing_table::oid),
                                                 objectid_internal.rekey_relation(r.referenced_table::oid),
                                                 (SELECT string_agg(format('c.%I OPERATOR(pg_catalog.=) p.%I', f, t), ' AND ')
                                                    FROM unnest(r.referencing_columns, r.referenced_columns) u(f, t)),
                                                 'join ' || r.constraint_id), '' ORDER BY r.constraint_id)
                          FROM objectid_internal.rekey_references(tbl) r
                         WHERE objectid_internal.rekey_readable(tbl, r.referencing_table::oid)
                           AND objectid_internal.rekey_readable(tbl, r.referenced_table::oid)), ''))
$body$;
