-- The size of the next batch when rekey_run sizes them (batch_size => NULL, the default): a batch
-- holds its rows' locks until it commits, so a concurrent writer that needs one of them waits up
-- to a batch's time. The first batch has first_size keys (NULL arguments); each next one is
-- sized from the last (a window of size keys, of which keys were rekeyed, in seconds) to take
-- about target_seconds, at most twice or half the last and within least_size .. most_size keys.
-- A window without version-4 keys to rekey says nothing about the time a key takes: it doubles.
-- One row.
CREATE FUNCTION objectid_internal.rekey_batch_size(size integer, keys bigint, seconds float8)
    RETURNS TABLE (next_size integer, first_size integer, target_seconds float8, least_size integer,
                   most_size integer)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT CASE WHEN size IS NULL THEN k.first_size
            ELSE least(k.most_size, greatest(k.least_size, least(size * 2, greatest(size / 2,
                     CASE WHEN coalesce(keys, 0) = 0 OR seconds IS NULL THEN size * 2
                          ELSE (size * k.target_seconds / greatest(seconds, 0.001))::bigint END))))::integer END,
       k.first_size, k.target_seconds, k.least_size, k.most_size
  FROM (VALUES (1000, 0.5::float8, 100, 50000)) k (first_size, target_seconds, least_size, most_size)
$body$;
