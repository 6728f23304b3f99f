-- REFRESH MATERIALIZED VIEW, refused when the view's query left advisory locks, cursors or
-- temporary objects in the caller's session (src/rekey/as_owner.rs).
CREATE FUNCTION objectid_internal.rekey_refresh_materialized_view(matview oid)
    RETURNS void
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'rekey_refresh_materialized_view_wrapper';
