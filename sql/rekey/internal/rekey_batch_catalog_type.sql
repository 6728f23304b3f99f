-- What a batch of the rekey of a table derives from the system catalogs
-- (rekey_batch_catalog_read), before it changes anything:
--   lock_statement          the LOCK of every table the batch changes and of the mapping table,
--                           in ROW EXCLUSIVE mode, as the batch's own writes would take;
--   problems, code          what stops the rekey (rekey_problems), NULL when nothing does, and the
--                           SQLSTATE to refuse with (42501 first);
--   deferrable_constraints  the deferrable constraints of the tables that change, or that
--                           reference them, for SET CONSTRAINTS ... IMMEDIATE;
--   statements              the batch's statements (rekey_statements), NULL when there are problems.
CREATE TYPE objectid_internal.rekey_batch_catalog AS (
    lock_statement text,
    problems text[],
    code text,
    deferrable_constraints text,
    statements objectid_internal.rekey_batch_statements
);
