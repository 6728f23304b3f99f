-- The statements of a batch, exactly as rekey_batch runs them (through rekey_batch_as_owner, as
-- the tables' owner in a security-restricted operation) and rekey_plan shows them:
--   window_query   the next keys after $1, the high-water key, at most $2, the batch size, in key
--                  order, whatever their version (so that the walk always goes through the key's
--                  index);
--   map_query      lock the window's version-4 keys not yet mapped and map each to its new key: $1
--                  the window, $2 the fallback time, $3 the batch number; returns the keys mapped,
--                  in order, and their new keys, in the same order;
--   other_queries  for each column of a table of another owner than the key's table's, the
--                  rewrite of that column, run as that table's owner (other_tables holds the
--                  table of each): $1 the keys, $2 their new keys;
--   rewrite_query  then the rewrite of the key and every referencing column of the key owner's
--                  tables, in one statement: $1 the keys, $2 their new keys; returns the rows
--                  changed per table, in the order of rekey_columns (for the key's table, the rows
--                  whose key became its new key).
-- Every operator and function in them is qualified: they run with search_path = pg_catalog,
-- pg_temp. mapping_table is a qualified name (rekey_name of the recorded mapping table, or the
-- one to be made).
CREATE TYPE objectid_internal.rekey_batch_statements AS (
    window_query text,
    map_query text,
    other_tables oid[],
    other_queries text[],
    rewrite_query text
);
