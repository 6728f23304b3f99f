-- rekey_batch_catalog_read's answer, as text (the composite's text form), kept in the backend and
-- read again only once a catalog may have changed: a relation-cache or catalog-cache
-- invalidation processed since, for the same arguments, user and security context
-- (src/rekey/rekey_batch_catalog.rs).
CREATE FUNCTION objectid_internal.rekey_batch_catalog(tbl oid, time_column text, time_zone text,
                                                      mapping_table oid, fire_triggers boolean)
    RETURNS text
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_batch_catalog_wrapper';
