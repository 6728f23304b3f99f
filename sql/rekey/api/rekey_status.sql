CREATE VIEW @extschema@.rekey_status AS SELECT * FROM objectid_internal.rekey_status_rows();
GRANT SELECT ON @extschema@.rekey_status TO PUBLIC;
