-- A column that holds values of the key (rekey_columns): its table, number, name and type, and
-- the number of foreign keys between it and the key. A batch reads them from the catalogs once,
-- as an array of these, and checks and builds everything else from that array.
CREATE TYPE objectid_internal.rekey_column AS (
    relid regclass,
    attnum smallint,
    attname name,
    atttype regtype,
    depth integer
);
