-- Whether the calling procedure may COMMIT (src/rekey/mod.rs).
CREATE FUNCTION objectid_internal.rekey_can_commit()
    RETURNS boolean
    LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED
    AS 'MODULE_PATHNAME', 'rekey_can_commit_wrapper';
