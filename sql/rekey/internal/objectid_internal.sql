-- The rekey toolkit: move a table's random UUIDv4 primary key, and every column that references
-- it, to UUIDv7 keys carrying each row's creation time, online. docs/migration.md walks it through:
--
--   rekey_assess(table) / rekey_assess_schema(schema)   what there is: versions, order, density, references
--   rekey_references(table)                            every foreign key that must follow the key
--   rekey_plan(table, time_column)                     the exact steps, locks, rows and problems; changes nothing
--   rekey_switch_default(table)                        new rows get uuidv7() at once
--   CALL rekey_run(table, time_column)                 rekey in batches, one transaction each, resumable
--   rekey_status                                       progress, from any session
--   rekey_translate(table, old_key)                    old key -> new key, from the mapping table
--   rekey_verify(table)                                what is left, constraints, counts against the start
--   rekey_forget(table)                                drop the recorded state (the mapping table stays)
--
-- How parent and children change together: each batch locks its parent rows (FOR UPDATE), records
-- old -> new in the mapping table, then rewrites the key and every referencing column in one
-- statement, one data-modifying WITH query. PostgreSQL runs the foreign keys' checks and actions
-- at the end of that statement (AfterTriggerEndQuery, after every sub-statement), when parent and
-- children agree again; so no constraint is altered or re-validated, whatever its ON UPDATE
-- action: a cascade or SET NULL finds no child left with the old key.
--
-- Privileges (docs/migration.md, "Privileges"): nothing here is SECURITY DEFINER; the caller must
-- have the privileges of the table's owner. Every statement that reads or writes a table of the
-- set (or plans such a read or write) runs as that table's owner inside a security-restricted
-- operation (src/rekey/as_owner.rs: rekey_read_as_owner, rekey_batch_as_owner), as PostgreSQL runs
-- a table's maintenance, so that the owner's code (constraints, index expressions, defaults,
-- triggers, policies) never runs with the caller's rights. Catalog reads and the toolkit's own
-- bookkeeping run as the caller.
--
-- Names: the documented functions live in @extschema@; everything they call lives in
-- objectid_internal, a schema this script makes, so that it belongs to whoever installs the
-- extension (the bootstrap superuser, for a trusted install) and no other role can create, rename
-- or replace anything in it. No body names @extschema@: its owner can rename it and put another
-- schema of that name in its place. Every function pins search_path = pg_catalog, pg_temp and
-- qualifies the rest; tables are recorded by OID and named through rekey_name, columns quoted
-- with %I, values with %L; no stored text is ever run as SQL.

CREATE SCHEMA objectid_internal;
COMMENT ON SCHEMA objectid_internal IS 'pg_objectid internals: not an API, may change with any release';
-- The tables' owners use the copies of the UUID functions below in the batch's statements.
GRANT USAGE ON SCHEMA objectid_internal TO PUBLIC;
