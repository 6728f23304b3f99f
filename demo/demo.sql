-- A short tour of the objectid type. Run by scripts/demo.sh in a throwaway cluster.
\pset footer off
\set VERBOSITY default
\echo
\echo '== Install the extension (trusted: a database owner may do this too)'
CREATE EXTENSION pg_objectid;

\echo
\echo '== A table keyed by objectid, filled with MongoDB-style ids'
CREATE TABLE events (
    id   objectid PRIMARY KEY,
    kind text NOT NULL
);
INSERT INTO events VALUES
    ('507f1f77bcf86cd799439011', 'signup'),
    ('507F1F77BCF86CD799439012', 'login'),      -- either case is accepted
    ('65a1f2c3d4e5f60718293a4b', 'purchase'),
    ('000000000000000000000000', 'epoch'),
    ('ffffffffffffffffffffffff', 'end of time');
SELECT id, kind FROM events ORDER BY id;

\echo
\echo '== Fixed length: 12 bytes on disk, against 16 for a uuid'
SELECT pg_column_size(id) AS objectid_bytes,
       pg_column_size(gen_random_uuid()) AS uuid_bytes
FROM events LIMIT 1;

\echo
\echo '== The raw BSON bytes, and back'
SELECT id, id::bytea AS bson_payload, (id::bytea)::objectid = id AS round_trip
FROM events WHERE kind = 'signup';

\echo
\echo '== min/max, and ordering that follows the creation time in the first 4 bytes'
SELECT min(id), max(id) FROM events;
SELECT id FROM events WHERE id > '507f1f77bcf86cd799439011' ORDER BY id;

\echo
\echo '== The btree index serves lookups'
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT kind FROM events WHERE id = '65a1f2c3d4e5f60718293a4b';
RESET enable_seqscan;

\echo
\echo '== Generated keys: current second, one random value for the server, an ascending counter'
SELECT objectid_generator_mode();
CREATE TABLE orders (id objectid PRIMARY KEY DEFAULT gen_objectid(), total numeric);
INSERT INTO orders (total) SELECT round((random() * 100)::numeric, 2) FROM generate_series(1, 5);
SELECT id, objectid_timestamp(id) AS created FROM orders ORDER BY id;

\echo
\echo '== Backfilled keys carry the time given, fractions dropped'
SELECT gen_objectid_at('2012-10-17 21:13:27.9+00') AS backfilled,
       objectid_from_time('2012-10-17 21:13:27+00') AS first_of_that_second;

\echo
\echo '== A time condition is answered from the primary key'
INSERT INTO orders (id, total)
SELECT gen_objectid_at(now() - i * interval '1 minute'), 1 FROM generate_series(1, 20000) i;
ANALYZE orders;
EXPLAIN (COSTS OFF) SELECT count(*) FROM orders WHERE objectid_timestamp(id) >= now() - interval '10 minutes';
SELECT count(*) AS last_10_minutes FROM orders WHERE objectid_timestamp(id) >= now() - interval '10 minutes';

\echo
\echo '== Bad input is an error that quotes it (SQLSTATE 22P02)'
\set ON_ERROR_STOP 0
SELECT 'not-an-objectid'::objectid;
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT '507f1f77bcf86cd79943901'::objectid;
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT objectid_from_time('1969-12-31 23:59:59+00');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
\set ON_ERROR_STOP 1

DROP TABLE events, orders;
DROP EXTENSION pg_objectid;
