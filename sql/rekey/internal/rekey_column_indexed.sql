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
