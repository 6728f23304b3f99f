#!/usr/bin/env bash
# replication_test.sh OLD NEW (default 15 18): pg_objectid under PostgreSQL's two kinds of replication.
#  1. Logical: a publisher on OLD, a subscriber on NEW (OLD = NEW works too), two subscriber
#     databases, one subscribing in text and one in binary format (the type's send/receive on both
#     sides; OLD and NEW 14 or later). Tables keyed by objectid and by v7 uuid, one with
#     REPLICA IDENTITY USING INDEX on a unique objectid index, one with REPLICA IDENTITY FULL (rows
#     found by the type's equality operator). The initial sync, then inserts, updates of other
#     columns and of the key, deletes and TRUNCATE: every row must compare equal on both sides (a
#     checksum over every column and the key's bytes), and time conditions on the subscriber must use
#     the key's index and find the publisher's rows.
#  2. Streaming: a primary on NEW with shared_preload_libraries = 'pg_objectid' and a hot standby
#     made by pg_basebackup -R, while two sessions insert through DEFAULT gen_objectid() and
#     DEFAULT uuidv7(). On the standby: time conditions use the index and find the primary's rows at
#     the same LSN, the generators work in its read-only transactions. Then the standby is promoted
#     and takes inserts through the same defaults: no duplicate key. Whether its new keys sort after
#     the replicated ones is printed as a note: that holds only once the clock's second has moved on.
# Both servers must already have the extension installed (scripts/test.sh does that).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

old=${1:-15}
new=${2:-18}
old_cfg=$(pg_config_of "$old")
new_cfg=$(pg_config_of "$new")
new_bin=$("$new_cfg" --bindir)
base=${PG_OBJECTID_TEST_DIR:-/tmp/pg_objectid-test}/replication
# Timestamps are compared as text across servers.
export PGTZ=UTC

clusters=()
writers=()
stop_all() {
    local entry pid
    for pid in "${writers[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${writers[@]}"; do wait "$pid" 2>/dev/null || true; done
    # shellcheck disable=SC2086  # word splitting wanted: each entry is "PG_CONFIG DIR"
    for entry in "${clusters[@]}"; do cluster_stop ${entry}; done
}
trap stop_all EXIT

rm -rf "$base"
mkdir -p "$base"
[ "$(id -u)" = 0 ] && chown "$RUN_AS" "$base"

# own_libpq PG_CONFIG: the folder to put on a server's LD_LIBRARY_PATH, if any. The downloaded
# trees' libpqwalreceiver.so (subscriptions, standbys) has a RUNPATH of the folder it was built
# in, /opt/postgresql/lib, so without this it loads Debian's libpq 15, which rejects the
# sslnegotiation option that pg_basebackup -R of 17 and later writes into primary_conninfo.
own_libpq() {
    local libdir
    libdir=$("$1" --libdir)
    case $libdir in /usr/lib*) return 0 ;; esac
    [ ! -e "$libdir/libpq.so.5" ] || echo "$libdir"
}

# psql_db DIR PORT DB SQL: the result, unaligned. NEW's psql talks to every server here.
psql_db() {
    as_pg_user "$new_bin/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$1" -p "$2" -U postgres -d "$3" -c "$4"
}
expect_equal() {
    [ "$2" = "$3" ] || die "$1: expected '$3', got '$2'"
    echo "ok: $1"
}
# wait_until WHAT DIR PORT DB SQL: polls until SQL returns true; on a timeout shows the server logs.
wait_until() {
    local deadline=$((SECONDS + 90)) log
    until [ "$(psql_db "$2" "$3" "$4" "$5")" = t ]; do
        if [ $SECONDS -ge $deadline ]; then
            for log in "$base"/*/server.log; do
                echo "--- $log" >&2
                tail -n 20 "$log" >&2
            done
            die "timed out waiting for $1"
        fi
        sleep 0.2
    done
}
# expect_index_used WHAT DIR PORT DB INDEX QUERY: EXPLAIN shows an index or bitmap scan on INDEX
# with a condition (a whole-index scan for the ORDER BY would not do).
expect_index_used() {
    local plan
    plan=$(psql_db "$2" "$3" "$4" "EXPLAIN (COSTS OFF) $6")
    { grep -Eq "(using|on) $5( |\$)" <<<"$plan" && grep -q 'Index Cond: ' <<<"$plan"; } ||
        die "$1: expected a range scan of $5, got:
$plan"
    echo "ok: $1"
}
# checksum TABLE KEY KEY_BYTES: row count and an md5 over every column's text and the key's bytes.
checksum() {
    echo "SELECT count(*) || ' ' || coalesce(md5(string_agg(t::text || '|' || encode($3, 'hex'),
        ';' ORDER BY $2)), '-') FROM $1 t"
}
# Keys are objectid or uuid; oid_full has no key, but a objectid column unique by construction.
tables=(oid_items uuid_items oid_ident oid_full)
declare -A key=([oid_items]=id [uuid_items]=id [oid_ident]=key [oid_full]="a, b, c")
declare -A key_bytes=([oid_items]="id::bytea" [uuid_items]="uuid_send(id)" [oid_ident]="key::bytea"
    [oid_full]="a::bytea")

# Time conditions that the planner rewrites into key ranges, with the index each must use.
# $recent is filled in once the publisher's clock is known.
time_queries() {
    cat <<EOF
oid_items_pkey|SELECT count(*) || ' ' || coalesce(md5(string_agg(id::text, ',' ORDER BY id)), '-') FROM oid_items WHERE objectid_timestamp(id) >= '2024-01-10 12:00+00' AND objectid_timestamp(id) < '2024-01-10 14:00+00'
oid_items_pkey|SELECT count(*) || ' ' || coalesce(md5(string_agg(id::text, ',' ORDER BY id)), '-') FROM oid_items WHERE objectid_timestamp(id) >= '$recent'
uuid_items_pkey|SELECT count(*) || ' ' || coalesce(md5(string_agg(id::text, ',' ORDER BY id)), '-') FROM uuid_items WHERE public.uuid_extract_timestamp(id) BETWEEN '2024-01-10 12:00+00' AND '2024-01-10 16:00+00'
uuid_items_pkey|SELECT count(*) || ' ' || coalesce(md5(string_agg(id::text, ',' ORDER BY id)), '-') FROM uuid_items WHERE public.uuid_extract_timestamp(id) > '$recent'
oid_ident_key|SELECT count(*) || ' ' || coalesce(md5(string_agg(key::text, ',' ORDER BY key)), '-') FROM oid_ident WHERE objectid_timestamp(key) < '2024-01-01 02:00+00'
EOF
}

schema="
    CREATE EXTENSION pg_objectid;
    CREATE TABLE oid_items (
        id     objectid PRIMARY KEY DEFAULT gen_objectid(),
        parent objectid,
        ref    uuid DEFAULT public.uuidv7(),
        note   text,
        n      int NOT NULL,
        at     timestamptz
    );
    CREATE TABLE uuid_items (
        id    uuid PRIMARY KEY DEFAULT public.uuidv7() CHECK (public.uuid_extract_version(id) = 7),
        owner objectid,
        other uuid,
        note  text,
        n     int NOT NULL
    );
    CREATE TABLE oid_ident (n int NOT NULL, key objectid NOT NULL DEFAULT gen_objectid(), ref uuid, note text);
    CREATE UNIQUE INDEX oid_ident_key ON oid_ident (key);
    ALTER TABLE oid_ident REPLICA IDENTITY USING INDEX oid_ident_key;
    -- No index: the subscriber finds the old row by comparing every column with the types'
    -- default equality operators.
    CREATE TABLE oid_full (a objectid NOT NULL, b uuid, c text);
    ALTER TABLE oid_full REPLICA IDENTITY FULL;"

pub=$base/publisher
sub=$base/subscriber
sub_dbs=(sub_text)
binary=yes
if [ "$old" -lt 14 ] || [ "$new" -lt 14 ]; then
    binary=no
else
    sub_dbs+=(sub_bin)
fi

# compare_all WHAT: every table's checksum on the publisher equals each subscriber database's.
compare_all() {
    local table want db
    for table in "${tables[@]}"; do
        want=$(psql_db "$pub" 55620 app "$(checksum "$table" "${key[$table]}" "${key_bytes[$table]}")")
        for db in "${sub_dbs[@]}"; do
            expect_equal "$1: $table equal in $db (${want%% *} rows)" \
                "$(psql_db "$sub" 55621 "$db" "$(checksum "$table" "${key[$table]}" "${key_bytes[$table]}")")" \
                "$want"
        done
    done
}
# catch_up: every subscription has applied all of the publisher's WAL written so far.
catch_up() {
    local lsn db
    lsn=$(psql_db "$pub" 55620 app "SELECT pg_current_wal_lsn()")
    for db in "${sub_dbs[@]}"; do
        wait_until "$db to replay up to $lsn" "$pub" 55620 app "
            SELECT coalesce(bool_and(replay_lsn >= '$lsn' AND state = 'streaming'), false)
            FROM pg_stat_replication WHERE application_name = '$db'"
    done
}

started=$SECONDS
log "logical replication: publisher PostgreSQL $old, subscriber PostgreSQL $new (binary too: $binary)"
# The statements in the publisher's log show which format the initial sync copied in.
LD_LIBRARY_PATH=$(own_libpq "$old_cfg") cluster_start "$old_cfg" "$pub" 55620 "wal_level = logical" \
    "log_statement = 'all'"
clusters+=("$old_cfg $pub")
# Two subscriptions each with an apply worker and up to two table-sync workers at once. An idle
# apply worker reports its position every wal_receiver_status_interval (10 s by default), which
# is what each wait for catch-up ends on.
LD_LIBRARY_PATH=$(own_libpq "$new_cfg") cluster_start "$new_cfg" "$sub" 55621 \
    "max_logical_replication_workers = 8" "max_worker_processes = 16" "wal_receiver_status_interval = 1"
clusters+=("$new_cfg $sub")
as_pg_user "$new_bin/createdb" -h "$pub" -p 55620 -U postgres app
psql_db "$pub" 55620 app "$schema"
for db in "${sub_dbs[@]}"; do
    as_pg_user "$new_bin/createdb" -h "$sub" -p 55621 -U postgres "$db"
    psql_db "$sub" 55621 "$db" "$schema"
done

# Before any subscription exists: these rows reach the subscribers through the initial table sync.
# NULLs and empty strings in every nullable column; keys spread over days for the time conditions.
psql_db "$pub" 55620 app "
    INSERT INTO oid_items (id, parent, ref, note, n, at)
    SELECT gen_objectid_at(t),
           CASE WHEN i % 3 <> 0 THEN (lpad(to_hex(i * 7919), 8, '0') || substr(md5(i::text), 1, 16))::objectid END,
           CASE WHEN i % 5 <> 0 THEN public.uuidv7_at(t) END,
           CASE WHEN i % 7 = 0 THEN NULL WHEN i % 11 = 0 THEN '' ELSE 'row ' || i END,
           i, t
    FROM generate_series(1, 20000) AS i, LATERAL (SELECT timestamptz '2024-01-01 00:00+00' + i * interval '1 minute') AS s(t);
    INSERT INTO uuid_items (id, owner, other, note, n)
    SELECT public.uuidv7_at(t), CASE WHEN i % 4 <> 0 THEN gen_objectid_at(t) END,
           CASE WHEN i % 3 <> 0 THEN public.uuidv4() END, CASE WHEN i % 6 <> 0 THEN 'u ' || i END, i
    FROM generate_series(1, 10000) AS i, LATERAL (SELECT timestamptz '2024-01-01 00:00+00' + i * interval '2 minutes') AS s(t);
    INSERT INTO oid_ident (n, key, ref, note)
    SELECT i, gen_objectid_at(timestamptz '2024-01-01 00:00+00' + i * interval '1 minute'),
           CASE WHEN i % 2 = 0 THEN public.uuidv7() END, 'ident ' || i
    FROM generate_series(1, 2000) AS i;
    INSERT INTO oid_full SELECT gen_objectid(), CASE WHEN i % 2 = 0 THEN public.uuidv4() END, 'full ' || i
    FROM generate_series(1, 500) AS i;
    CREATE PUBLICATION pub FOR TABLE oid_items, uuid_items, oid_ident, oid_full;"
for db in "${sub_dbs[@]}"; do
    options=""
    [ "$db" = sub_bin ] && options="WITH (binary = true)"
    psql_db "$sub" 55621 "$db" "CREATE SUBSCRIPTION $db
        CONNECTION 'host=$pub port=55620 user=postgres dbname=app' PUBLICATION pub $options"
done
for db in "${sub_dbs[@]}"; do
    wait_until "the initial sync of $db" "$sub" 55621 "$db" \
        "SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')"
done
catch_up
compare_all "initial sync"
# A binary subscription copies its initial rows in binary too when both sides are 16 or later.
# Distinct statements, not log lines: a table-sync worker that retries logs its COPY again.
copies=$({ grep -o 'COPY .* TO STDOUT.*$' "$pub/server.log" || true; } | sort -u | wc -l)
binary_copies=$({ grep -o 'COPY .* TO STDOUT WITH (FORMAT binary).*$' "$pub/server.log" || true; } |
    sort -u | wc -l)
if [ "$binary" = yes ] && [ "$old" -ge 16 ] && [ "$new" -ge 16 ]; then
    expect_equal "initial sync: sub_bin copied every table in binary, sub_text in text" \
        "$binary_copies of $copies" "4 of 8"
else
    expect_equal "initial sync: every table copied in text" "$binary_copies of $copies" "0 of 4"
fi

recent=$(psql_db "$pub" 55620 app "SELECT now() - interval '1 minute'")
log "logical replication: inserts, updates of other columns and of keys, deletes"
psql_db "$pub" 55620 app "
    INSERT INTO oid_items (parent, note, n, at)
    SELECT CASE WHEN i % 2 = 0 THEN gen_objectid() END, 'new ' || i, 100000 + i, now()
    FROM generate_series(1, 2000) AS i;
    UPDATE oid_items SET note = coalesce(note, '') || ' updated', parent = NULL, ref = public.uuidv7()
    WHERE n % 10 = 1;
    UPDATE oid_items SET ref = NULL, note = NULL WHERE n % 10 = 4;
    UPDATE oid_items SET id = gen_objectid_at(objectid_timestamp(id) + interval '30 seconds') WHERE n % 10 = 2;
    DELETE FROM oid_items WHERE n % 10 = 3;

    INSERT INTO uuid_items (owner, note, n) SELECT gen_objectid(), 'new ' || i, 100000 + i
    FROM generate_series(1, 1000) AS i;
    UPDATE uuid_items SET owner = NULL, other = public.uuidv7(), note = 'updated' WHERE n % 10 = 1;
    UPDATE uuid_items SET id = public.uuidv7_at(public.uuid_extract_timestamp(id) + interval '1 second')
    WHERE n % 10 = 2;
    DELETE FROM uuid_items WHERE n % 10 = 3;

    UPDATE oid_ident SET note = 'updated', ref = NULL WHERE n % 10 = 1;
    UPDATE oid_ident SET key = gen_objectid() WHERE n % 10 = 2;
    DELETE FROM oid_ident WHERE n % 10 = 3;
    INSERT INTO oid_ident (n, note) SELECT 10000 + i, 'new' FROM generate_series(1, 200) AS i;

    UPDATE oid_full SET c = c || ' updated', b = NULL WHERE c LIKE '%1';
    UPDATE oid_full SET a = gen_objectid() WHERE c LIKE '%2';
    DELETE FROM oid_full WHERE c LIKE '%3';"
# One transaction touching several tables, rolled back in part.
psql_db "$pub" 55620 app "
    BEGIN;
    INSERT INTO oid_items (n) VALUES (200001);
    SAVEPOINT s;
    INSERT INTO oid_items (n) VALUES (200002);
    ROLLBACK TO s;
    UPDATE uuid_items SET note = 'in one transaction' WHERE n = 5;
    DELETE FROM oid_ident WHERE n = 7;
    COMMIT;"
catch_up
compare_all "streamed changes"

# VACUUM too: index-only scans need the visibility map, which nothing has set on the subscriber.
for db in "${sub_dbs[@]}"; do psql_db "$sub" 55621 "$db" "VACUUM ANALYZE" >/dev/null; done
while IFS='|' read -r index query; do
    # The publisher answers with the rewrite off: the plain test of every row.
    want=$(psql_db "$pub" 55620 app "SET pg_objectid.time_index_paths = off; $query")
    [ "${want%% *}" -gt 0 ] || die "a time condition found no rows on the publisher: $query"
    for db in "${sub_dbs[@]}"; do
        expect_index_used "time condition on $db uses $index (${want%% *} rows)" "$sub" 55621 "$db" "$index" "$query"
        expect_equal "time condition on $db finds the publisher's rows (${want%% *})" \
            "$(psql_db "$sub" 55621 "$db" "$query")" "$want"
    done
done < <(time_queries)

log "logical replication: TRUNCATE, then new rows"
psql_db "$pub" 55620 app "
    TRUNCATE oid_full;
    INSERT INTO oid_full SELECT gen_objectid(), public.uuidv7(), 'after truncate ' || i FROM generate_series(1, 300) AS i;
    TRUNCATE uuid_items;
    INSERT INTO uuid_items (owner, n) SELECT CASE WHEN i % 2 = 0 THEN gen_objectid() END, i FROM generate_series(1, 1000) AS i;"
catch_up
compare_all "after TRUNCATE"
expect_equal "the subscriptions applied the TRUNCATE" \
    "$(psql_db "$sub" 55621 sub_text "SELECT count(*) FROM oid_full WHERE c NOT LIKE 'after truncate %'")" "0"
if [ "$binary" = yes ]; then
    expect_equal "sub_bin subscribes in binary format" \
        "$(psql_db "$sub" 55621 sub_bin "SELECT subbinary FROM pg_subscription WHERE subname = 'sub_bin'")" "t"
fi
grep -E 'ERROR|FATAL|PANIC' "$sub/server.log" "$pub/server.log" && die "errors in the server logs (above)"
echo "ok: no errors in the publisher's and subscriber's logs"
# shellcheck disable=SC2086  # word splitting wanted: each entry is "PG_CONFIG DIR"
for entry in "${clusters[@]}"; do cluster_stop ${entry}; done
clusters=()
echo "logical replication: $((SECONDS - started)) s"

# --- streaming replication -------------------------------------------------------------------
started=$SECONDS
primary=$base/primary
standby=$base/standby
log "streaming replication on PostgreSQL $new: primary, hot standby from pg_basebackup -R"
LD_LIBRARY_PATH=$(own_libpq "$new_cfg") cluster_start "$new_cfg" "$primary" 55630 "shared_preload_libraries = 'pg_objectid'" \
    "wal_level = replica" "hot_standby = on"
clusters+=("$new_cfg $primary")
as_pg_user "$new_bin/createdb" -h "$primary" -p 55630 -U postgres app
# A history of 20,000 rows over two weeks, then what the writers add now. Statistics stay those of
# the history (no autovacuum on these tables), so recent rows are estimated few, as they are in a
# table with years of history.
psql_db "$primary" 55630 app "
    CREATE EXTENSION pg_objectid;
    CREATE TABLE events (
        id     objectid PRIMARY KEY DEFAULT gen_objectid(),
        ref    uuid NOT NULL DEFAULT public.uuidv7(),
        writer int NOT NULL,
        n      int NOT NULL
    ) WITH (autovacuum_enabled = false);
    CREATE TABLE uevents (
        id     uuid PRIMARY KEY DEFAULT public.uuidv7() CHECK (public.uuid_extract_version(id) = 7),
        oid    objectid NOT NULL DEFAULT gen_objectid(),
        writer int NOT NULL,
        n      int NOT NULL
    ) WITH (autovacuum_enabled = false);
    INSERT INTO events SELECT gen_objectid_at(t), public.uuidv7_at(t), 0, i
    FROM generate_series(1, 20000) AS i, LATERAL (SELECT timestamptz '2024-01-01 00:00+00' + i * interval '1 minute') AS s(t);
    INSERT INTO uevents SELECT public.uuidv7_at(t), gen_objectid_at(t), 0, i
    FROM generate_series(1, 20000) AS i, LATERAL (SELECT timestamptz '2024-01-01 00:00+00' + i * interval '1 minute') AS s(t);
    ANALYZE;"
mkdir -p "$standby"
[ "$(id -u)" = 0 ] && chown "$RUN_AS" "$standby"
as_pg_user "$new_bin/pg_basebackup" -h "$primary" -p 55630 -U postgres -D "$standby/data" -R -X stream -c fast
# The copied postgresql.conf carries the primary's port and socket folder; later lines win.
printf '%s\n' "port = 55631" "unix_socket_directories = '$standby'" |
    as_pg_user tee -a "$standby/data/postgresql.conf" >/dev/null
LD_LIBRARY_PATH=$(own_libpq "$new_cfg") cluster_run "$new_cfg" "$standby"
clusters+=("$new_cfg $standby")
expect_equal "the standby is in recovery" "$(psql_db "$standby" 55631 app "SELECT pg_is_in_recovery()")" "t"

# Writers: one psql per batch; a batch is one transaction. They stop between batches while the
# pause file exists, acknowledging its token, so that the primary can be compared at rest.
writer() {
    local i=$1 batch=0
    while [ ! -f "$base/stop" ]; do
        if [ -f "$base/pause" ]; then
            # The pause may end between the test and the copy.
            cp "$base/pause" "$base/paused.$i" 2>/dev/null || true
            sleep 0.05
            continue
        fi
        batch=$((batch + 1))
        psql_db "$primary" 55630 app "BEGIN;
            INSERT INTO events (writer, n) SELECT $i, $batch * 1000 + g FROM generate_series(1, 100) AS g;
            INSERT INTO uevents (writer, n) SELECT $i, $batch * 1000 + g FROM generate_series(1, 100) AS g;
            COMMIT;" >"$base/writer.$i.out" 2>&1 || {
            touch "$base/writer.$i.failed"
            return 1
        }
    done
}
pause_writers() {
    local i token=$((RANDOM + 1)) deadline=$((SECONDS + 60))
    echo "$token" >"$base/pause"
    for i in 1 2; do
        until cmp -s "$base/pause" "$base/paused.$i"; do
            [ $SECONDS -lt $deadline ] || die "writer $i did not pause"
            [ ! -f "$base/writer.$i.failed" ] || die "writer $i failed: $(cat "$base/writer.$i.out")"
            sleep 0.05
        done
    done
}
resume_writers() { rm -f "$base/pause"; }
wait_replay() {
    local lsn
    lsn=$(psql_db "$primary" 55630 app "SELECT pg_current_wal_lsn()")
    wait_until "the standby to replay up to $lsn" "$standby" 55631 app \
        "SELECT pg_last_wal_replay_lsn() >= '$lsn'"
}
rm -f "$base/stop" "$base/pause"
for i in 1 2; do
    writer "$i" &
    writers+=($!)
done

rows_before=$(psql_db "$primary" 55630 app "SELECT count(*) FROM events")
sleep 2
expect_equal "the standby is read-only" \
    "$(psql_db "$standby" 55631 app "SHOW transaction_read_only")" "on"
if psql_db "$standby" 55631 app "INSERT INTO events (writer, n) VALUES (-1, -1)" 2>"$base/insert.err"; then
    die "an insert on the standby succeeded"
fi
grep -q 'read-only transaction' "$base/insert.err" || die "unexpected error on the standby: $(cat "$base/insert.err")"
echo "ok: inserts on the standby are refused as read-only"
expect_equal "gen_objectid() and uuidv7() work in a read-only transaction on the standby" \
    "$(psql_db "$standby" 55631 app "BEGIN READ ONLY;
        SELECT objectid_generator_mode(), current_setting('transaction_read_only'),
               objectid_timestamp(gen_objectid()) > now() - interval '1 minute',
               public.uuid_extract_version(public.uuidv7()), gen_objectid_at(now()) IS NOT NULL,
               objectid_timestamp(gen_objectid_subsecond()) > now() - interval '1 minute';
        COMMIT;")" "server|on|t|7|t|t"
expect_equal "they work with default_transaction_read_only on the primary too" \
    "$(PGOPTIONS="-c default_transaction_read_only=on" psql_db "$primary" 55630 app "
        SELECT current_setting('transaction_read_only'), gen_objectid() IS NOT NULL,
               public.uuid_extract_version(public.uuidv7())")" "on|t|7"
wait_until "replicated rows from the writers" "$standby" 55631 app \
    "SELECT count(*) > $rows_before FROM events"
echo "ok: the standby receives the writers' rows while they write"

recent=$(psql_db "$primary" 55630 app "SELECT now() - interval '2 seconds'")
standby_queries() {
    cat <<EOF
events_pkey|SELECT count(*) || ' ' || coalesce(md5(string_agg(id::text || ref::text, ',' ORDER BY id)), '-') FROM events WHERE objectid_timestamp(id) >= '2024-01-10 12:00+00' AND objectid_timestamp(id) < '2024-01-10 14:00+00'
events_pkey|SELECT count(*) || ' ' || coalesce(md5(string_agg(id::text || ref::text, ',' ORDER BY id)), '-') FROM events WHERE objectid_timestamp(id) >= '$recent'
uevents_pkey|SELECT count(*) || ' ' || coalesce(md5(string_agg(id::text || oid::text, ',' ORDER BY id)), '-') FROM uevents WHERE public.uuid_extract_timestamp(id) >= '$recent'
EOF
}
for round in 1 2; do
    sleep 1
    pause_writers
    wait_replay
    while IFS='|' read -r index query; do
        expect_index_used "standby, round $round: time condition uses $index" "$standby" 55631 app "$index" "$query"
        want=$(psql_db "$primary" 55630 app "SET pg_objectid.time_index_paths = off; $query")
        expect_equal "standby, round $round: the primary's rows at the same LSN (${want%% *})" \
            "$(psql_db "$standby" 55631 app "$query")" "$want"
    done < <(standby_queries)
    for table in events uevents; do
        sum=$(checksum "$table" id "$([ $table = events ] && echo 'id::bytea' || echo 'uuid_send(id)')")
        want=$(psql_db "$primary" 55630 app "$sum")
        expect_equal "standby, round $round: $table equal (${want%% *} rows)" \
            "$(psql_db "$standby" 55631 app "$sum")" "$want"
    done
    resume_writers
done

sleep 1
touch "$base/stop"
for i in 1 2; do
    wait "${writers[$((i - 1))]}" || die "writer $i failed: $(cat "$base/writer.$i.out")"
done
writers=()
wait_replay
old_state=$(psql_db "$primary" 55630 app "SELECT count(*), count(*) FILTER (WHERE writer > 0),
    count(DISTINCT substr(id::text, 9, 10)) FILTER (WHERE writer > 0), max(id), objectid_timestamp(max(id))
    FROM events")
IFS='|' read -r old_rows old_written old_randoms old_max old_max_time <<<"$old_state"
echo "primary: $old_rows rows in events, $old_written from the writers, newest key $old_max ($old_max_time)"
expect_equal "the primary's writers' keys share one random value (server mode)" "$old_randoms" "1"
old_uuid_max=$(psql_db "$primary" 55630 app "SELECT id FROM uevents ORDER BY id DESC LIMIT 1")
cluster_stop "$new_cfg" "$primary"

log "promoting the standby"
as_pg_user "$new_bin/pg_ctl" -D "$standby/data" -w -t 60 promote >/dev/null
expect_equal "the promoted standby is out of recovery" \
    "$(psql_db "$standby" 55631 app "SELECT pg_is_in_recovery()")" "f"
inserters=()
for s in 1 2 3 4; do
    psql_db "$standby" 55631 app "
        INSERT INTO events (writer, n) SELECT 100 + $s, g FROM generate_series(1, 5000) AS g;
        INSERT INTO uevents (writer, n) SELECT 100 + $s, g FROM generate_series(1, 5000) AS g;
        INSERT INTO events (id, writer, n) SELECT gen_objectid_subsecond(), 200 + $s, g
        FROM generate_series(1, 5000) AS g;" \
        >"$base/promoted.$s.out" 2>&1 &
    inserters+=($!)
done
for s in 1 2 3 4; do
    wait "${inserters[$((s - 1))]}" || die "insert $s on the promoted standby failed: $(cat "$base/promoted.$s.out")"
done
echo "ok: 4 sessions inserted 20000 rows into each table on the promoted standby (and 20000 more" \
    "into events with gen_objectid_subsecond()), no error"
expect_equal "events: every key distinct" \
    "$(psql_db "$standby" 55631 app "SELECT count(*) - count(DISTINCT id) || ' ' || count(*) FROM events")" \
    "0 $((old_rows + 40000))"
expect_equal "the new primary's gen_objectid_subsecond() keys end in its gen_objectid() keys' random value" \
    "$(psql_db "$standby" 55631 app "SELECT count(DISTINCT substr(id::text, 15, 10)) || ' '
        || bool_and(substr(id::text, 15, 10) = (SELECT substr(min(id)::text, 9, 10) FROM events
                                               WHERE writer BETWEEN 101 AND 199))
        FROM events WHERE writer > 200")" "1 true"
expect_equal "uevents: every key distinct" \
    "$(psql_db "$standby" 55631 app "SELECT count(*) - count(DISTINCT id) || ' ' || count(*) FROM uevents")" \
    "0 $((old_rows + 20000))"
expect_equal "the new primary's keys share one random value, not the old primary's" \
    "$(psql_db "$standby" 55631 app "SELECT count(DISTINCT substr(id::text, 9, 10)) || ' '
        || bool_or(substr(id::text, 9, 10) = substr('$old_max', 9, 10)) FROM events WHERE writer BETWEEN 101 AND 199")" "1 false"
# Reported, not required: the new primary's generator is the standby's own (made at its first use,
# in recovery, with its own random value), and ids of two generators are ordered by their second
# only. New keys sort after the replicated ones once the clock has left the old primary's last
# second; within that second the two random values decide.
IFS='|' read -r below first_time <<<"$(psql_db "$standby" 55631 app "
    SELECT count(*) FILTER (WHERE id <= '$old_max'), objectid_timestamp(min(id)) FROM events WHERE writer BETWEEN 101 AND 199")"
IFS='|' read -r ubelow <<<"$(psql_db "$standby" 55631 app "
    SELECT count(*) FILTER (WHERE id <= '$old_uuid_max') FROM uevents WHERE writer BETWEEN 101 AND 199")"
IFS='|' read -r new_random <<<"$(psql_db "$standby" 55631 app "
    SELECT substr(min(id)::text, 9, 10) FROM events WHERE writer BETWEEN 101 AND 199")"
if [[ $new_random > ${old_max:8:10} ]]; then order=after; else order=before; fi
same_second=$(psql_db "$standby" 55631 app "SELECT count(*) FROM events
    WHERE writer BETWEEN 101 AND 199 AND objectid_timestamp(id) = '$old_max_time'")
echo "note: after promotion, $below of 20000 new objectid keys sort at or below the old primary's newest" \
    "($old_max_time); the first new key's second is $first_time; $ubelow of 20000 new uuid keys sort below" \
    "its newest. The new generator's random value $new_random sorts $order the old one's ${old_max:8:10}," \
    "so the $same_second new keys stamped with the old primary's last second sort $order its keys of that second."
# Expected: the refused insert, and the standby's WAL receiver losing the stopped primary.
grep -E 'ERROR|FATAL|PANIC' "$primary/server.log" "$standby/server.log" |
    grep -Ev 'cannot execute INSERT in a read-only transaction|could not connect to the primary server|could not receive data from WAL stream|could not send data to WAL stream|could not send end-of-streaming message|terminating walreceiver|the database system is shutting down' &&
    die "errors in the server logs (above)"
echo "ok: no unexpected errors in the primary's and standby's logs"
echo "streaming replication: $((SECONDS - started)) s"
log "replication checks passed"
