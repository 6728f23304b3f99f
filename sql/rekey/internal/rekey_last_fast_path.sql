-- Whether the rewrite of the last rekey batch this session ran took the fast path, and if not
-- (or not on every table) why (src/rekey/implied_checks.rs); NULL before any batch rewrote keys.
CREATE FUNCTION objectid_internal.rekey_last_fast_path()
    RETURNS text
    LANGUAGE C VOLATILE PARALLEL RESTRICTED
    AS 'MODULE_PATHNAME', 'rekey_last_fast_path_wrapper';
