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
