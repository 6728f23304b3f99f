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
