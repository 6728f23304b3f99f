-- The SQL for the time a key will carry, given the SQL of a row's time (time_expr) and of the
-- fallback time: the row's time when a UUIDv7 can carry it (1970-01-01 to 9999-12-31), else the
-- fallback (a NULL time, or one out of that range). The batch, the plan and verify all use it.
CREATE FUNCTION objectid_internal.rekey_usable_time(time_expr text, fallback text)
    RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT format('CASE WHEN %1$s OPERATOR(pg_catalog.>=) ''1970-01-01 00:00:00+00''::pg_catalog.timestamptz'
              ' AND %1$s OPERATOR(pg_catalog.<) ''10000-01-01 00:00:00+00''::pg_catalog.timestamptz'
              ' THEN %1$s ELSE %2$s END', time_expr, fallback)
$body$;
