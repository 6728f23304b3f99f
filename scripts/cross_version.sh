#!/usr/bin/env bash
# cross_version.sh OLD NEW (default 15 18): a database using pg_objectid, made on PostgreSQL OLD,
# must survive the two ways users move to NEW: pg_dump + pg_restore, and pg_upgrade. Rows must
# compare equal afterwards (a checksum over every column), indexes and views must work, new rows
# must insert through the column defaults gen_objectid() and uuidv7() (written by pg_dump as
# public.uuidv7(), which must still reach ours on 18), and NEW's own uuid_extract_timestamp, where
# it knows v7, must read the same times from our v7 values as ours does. Both servers must
# already have the extension installed (scripts/test.sh does that).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

old=${1:-15}
new=${2:-18}
# pg_upgrade fallback source when OLD's own column options stop any pg_upgrade (see below).
fallback=${3:-17}
# Further versions to pg_upgrade and to dump/restore from (into 18: 16, the last without any of
# the built-in UUID functions; into 19: 18, the version users move from).
more=("${@:4}")
new_cfg=$(pg_config_of "$new")
new_bin=$("$new_cfg" --bindir)
base=${PG_OBJECTID_TEST_DIR:-/tmp/pg_objectid-test}/cross-$new
# Ports from 55600 into 18, from 55700 into 19: both runs may go side by side (scripts/test.sh).
first=$((55600 + (new - 18) * 100))

clusters=()
stop_all() {
    local entry
    # shellcheck disable=SC2086  # word splitting wanted: each entry is "PG_CONFIG DIR"
    for entry in "${clusters[@]}"; do cluster_stop ${entry}; done
}
trap stop_all EXIT

rm -rf "$base"
mkdir -p "$base"
[ "$(id -u)" = 0 ] && chown "$RUN_AS" "$base"

# psql_at DIR PORT SQL: the result, unaligned, from database app.
psql_at() {
    as_pg_user "$new_bin/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$1" -p "$2" -U postgres -d app -c "$3"
}
expect_equal() {
    [ "$2" = "$3" ] || die "$1: expected '$3', got '$2'"
    echo "ok: $1"
}

checksum="SELECT count(*) || ' ' || md5(string_agg(id::text || ',' || coalesce(parent::text, '-') \
    || ',' || encode(id::bytea, 'hex') || ',' || ref::text || ',' || note, ';' ORDER BY id)) FROM items"

# make_source VERSION DIR PORT [plain]: a cluster with database app; with the extension and its
# objects unless "plain".
make_source() {
    local cfg
    cfg=$(pg_config_of "$1")
    cluster_start "$cfg" "$2" "$3"
    clusters+=("$cfg $2")
    as_pg_user "$new_bin/createdb" -h "$2" -p "$3" -U postgres app
    if [ "${4:-}" = plain ]; then
        psql_at "$2" "$3" "CREATE TABLE items (id int PRIMARY KEY, note text)"
        return
    fi
    psql_at "$2" "$3" "
        CREATE EXTENSION pg_objectid;
        CREATE TABLE items (
            id     objectid PRIMARY KEY DEFAULT gen_objectid(),
            parent objectid REFERENCES items,
            ref    uuid NOT NULL DEFAULT uuidv7(),
            note   text NOT NULL
        );
        INSERT INTO items (id, parent, note)
        SELECT (lpad(to_hex(i * 7919), 8, '0') || substr(md5(i::text), 1, 16))::objectid,
               NULL, 'row ' || i
        FROM generate_series(1, 20000) AS i;
        INSERT INTO items (note) SELECT 'default ' || i FROM generate_series(1, 1000) AS i;
        UPDATE items SET parent = (SELECT min(id) FROM items) WHERE note LIKE '%7';
        CREATE INDEX items_brin ON items USING brin (id);
        CREATE INDEX items_hash ON items USING hash (parent);
        CREATE VIEW recent AS SELECT id, note FROM items WHERE id > '000100000000000000000000';
    "
}

# check_moved DIR PORT WHAT EXPECTED_CHECKSUM EXPECTED_RECENT FROM: the moved database (made on
# FROM) is whole and works.
check_moved() {
    local dir=$1 port=$2 what=$3
    expect_equal "$what: rows compare equal" "$(psql_at "$dir" "$port" "$checksum")" "$4"
    expect_equal "$what: the view works" "$(psql_at "$dir" "$port" "SELECT count(*) FROM recent")" "$5"
    expect_equal "$what: the extension is at its current version" \
        "$(psql_at "$dir" "$port" "SELECT extversion FROM pg_extension WHERE extname = 'pg_objectid'")" \
        "$(psql_at "$dir" "$port" "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_objectid'")"
    expect_equal "$what: the primary key is used" \
        "$(psql_at "$dir" "$port" "SET enable_seqscan = off; EXPLAIN (COSTS OFF)
            SELECT note FROM items WHERE id = '000000000000000000000000'" | head -1)" \
        "Index Scan using items_pkey on items"
    expect_equal "$what: the hash index agrees with a scan" \
        "$(psql_at "$dir" "$port" "SET enable_seqscan = off;
            SELECT count(*) FROM items WHERE parent = (SELECT min(id) FROM items)")" \
        "$(psql_at "$dir" "$port" "SET enable_indexscan = off; SET enable_bitmapscan = off;
            SELECT count(*) FROM items WHERE parent = (SELECT min(id) FROM items)")"
    psql_at "$dir" "$port" "INSERT INTO items (id, note) VALUES ('ffffffffffffffffffffffff', 'new')" >/dev/null
    expect_equal "$what: new rows insert" \
        "$(psql_at "$dir" "$port" "SELECT note FROM items WHERE id = 'ffffffffffffffffffffffff'")" "new"
    # Deparsed in the default search path: 18's own uuidv7 would be found first, so ours shows
    # its schema; that is the function the default calls. A table made on 18 or later got the
    # server's own uuidv7() from its unqualified default, and keeps it.
    local uuidv7=public.uuidv7
    [ "$6" -ge 18 ] && uuidv7=uuidv7
    expect_equal "$what: the defaults are the functions they were on $6" \
        "$(psql_at "$dir" "$port" "SELECT string_agg(pg_get_expr(adbin, adrelid), ' ' ORDER BY adnum)
            FROM pg_attrdef WHERE adrelid = 'items'::regclass")" "gen_objectid() $uuidv7()"
    psql_at "$dir" "$port" "INSERT INTO items (note) SELECT 'after ' || i FROM generate_series(1, 100) i" >/dev/null
    expect_equal "$what: the defaults make new keys" \
        "$(psql_at "$dir" "$port" "SELECT count(*) FILTER (WHERE objectid_timestamp(id) > now() - interval '1 hour'
              AND public.uuid_extract_version(ref) = 7
              AND public.uuid_extract_timestamp(ref) > now() - interval '1 hour')
            FROM items WHERE note LIKE 'after %'")" "100"
    # Unqualified names reach the server's own UUID functions where it has them (17: the two
    # extract functions; 18: all four), qualified ones the extension's, as on a fresh install.
    expect_equal "$what: unqualified names reach $new's built-in UUID functions, qualified ones ours" \
        "$(psql_at "$dir" "$port" "SELECT count(*) FROM unnest(ARRAY['uuidv7()', 'uuidv4()',
                'uuid_extract_timestamp(uuid)', 'uuid_extract_version(uuid)']) f
            WHERE to_regprocedure(f) IS DISTINCT FROM
                  coalesce(to_regprocedure('pg_catalog.' || f), to_regprocedure('public.' || f))
               OR NOT EXISTS (SELECT FROM pg_depend d
                               WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
                                 AND d.objid = to_regprocedure('public.' || f)
                                 AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid'))")" "0"
    if [ "$(psql_at "$dir" "$port" "SHOW server_version_num")" -ge 190000 ]; then
        # 19's uuid::bytea and bytea::uuid casts are its own (the extension adds no cast of uuid
        # on any version, so the upgrade had none to collide with) and read the moved keys.
        expect_equal "$what: $new's uuid <-> bytea casts are the server's and read the moved keys" \
            "$(psql_at "$dir" "$port" "SELECT (SELECT count(*) FROM pg_cast k JOIN pg_proc p ON p.oid = k.castfunc
                      WHERE (k.castsource, k.casttarget) IN (('uuid'::regtype, 'bytea'::regtype),
                                                             ('bytea'::regtype, 'uuid'::regtype))
                        AND p.pronamespace = 'pg_catalog'::regnamespace)
                || ' ' || (SELECT count(*) FROM items WHERE ref::bytea::uuid = ref AND length(ref::bytea) = 16)")" \
            "2 $(psql_at "$dir" "$port" "SELECT count(*) FROM items")"
    fi
    if [ "$(psql_at "$dir" "$port" "SHOW server_version_num")" -ge 180000 ]; then
        expect_equal "$what: $new's uuid_extract_timestamp reads our v7 times as ours does" \
            "$(psql_at "$dir" "$port" "SELECT count(*) FROM items
                WHERE pg_catalog.uuid_extract_timestamp(ref) IS DISTINCT FROM public.uuid_extract_timestamp(ref)")" "0"
    fi
}

# upgrade FROM_VERSION FROM_DIR TO_DIR TO_PORT: pg_upgrade (the source cluster is stopped first);
# leaves its output in TO_DIR.log and starts the upgraded cluster on success.
upgrade() {
    local from_cfg
    from_cfg=$(pg_config_of "$1")
    cluster_stop "$from_cfg" "$2"
    # cluster_stop gives up quietly after pg_ctl's 60 s; pg_upgrade needs the source stopped, so
    # wait for it on a loaded machine rather than fail on a server still shutting down.
    local waited=0
    while [ -f "$2/data/postmaster.pid" ]; do
        [ $waited -lt 240 ] || die "the PostgreSQL $1 server in $2 did not stop within 120 s"
        sleep 0.5
        waited=$((waited + 1))
    done
    cluster_init "$new_cfg" "$3" "$4"
    # pg_upgrade writes its sockets into the working folder and its logs into the new cluster.
    if (cd "$base" && as_pg_user "$new_bin/pg_upgrade" -U postgres -b "$("$from_cfg" --bindir)" \
        -B "$new_bin" -d "$2/data" -D "$3/data" -p $((first + 3)) -P $((first + 4)) --socketdir="$base" \
        >"$3.log" 2>&1); then
        cluster_run "$new_cfg" "$3"
        clusters+=("$new_cfg $3")
        return 0
    fi
    cat "$3"/data/pg_upgrade_output.d/*/log/*.log >>"$3.log" 2>/dev/null || true
    return 1
}

log "making a database on PostgreSQL $old"
make_source "$old" "$base/source" "$first"
before=$(psql_at "$base/source" "$first" "$checksum")
recent=$(psql_at "$base/source" "$first" "SELECT count(*) FROM recent")
echo "rows on $old: $before"

log "pg_dump from $old, pg_restore into $new"
# The dump is taken with OLD's own pg_dump: Debian's 15.20 keeps a private per-column option
# (pg_attver) that only its own pg_dump knows to leave out; a newer upstream pg_dump copies it
# into the dump, and NEW then rejects it.
as_pg_user "$(pg_config_of "$old" | xargs dirname)/pg_dump" -h "$base/source" -p "$first" -U postgres \
    -Fc -f "$base/app.dump" app
cluster_start "$new_cfg" "$base/restored" $((first + 1))
clusters+=("$new_cfg $base/restored")
as_pg_user "$new_bin/createdb" -h "$base/restored" -p $((first + 1)) -U postgres app
as_pg_user "$new_bin/pg_restore" -h "$base/restored" -p $((first + 1)) -U postgres -d app --exit-on-error \
    "$base/app.dump"
check_moved "$base/restored" $((first + 1)) "restored into $new" "$before" "$recent" "$old"

# The whole pg_upgrade check from FALLBACK, where OLD's own cannot be run.
upgrade_from_fallback() {
    local before recent
    make_source "$fallback" "$base/source-$fallback" $((first + 6))
    before=$(psql_at "$base/source-$fallback" $((first + 6)) "$checksum")
    recent=$(psql_at "$base/source-$fallback" $((first + 6)) "SELECT count(*) FROM recent")
    upgrade "$fallback" "$base/source-$fallback" "$base/upgraded" $((first + 2)) || {
        cat "$base/upgraded.log" >&2
        die "pg_upgrade $fallback -> $new failed"
    }
    check_moved "$base/upgraded" $((first + 2)) "upgraded from $fallback" "$before" "$recent" "$fallback"
}

# 19's pg_upgrade runs in the sid chroot (sid.sh), where only the servers under $CACHE (bind-mounted
# there) can run: Debian 12's own 15 needs Debian 12's libraries. From it, upgrade from FALLBACK.
old_cfg=$(pg_config_of "$old")
if [ "$new" = 19 ] && [ "${old_cfg#"$CACHE"/}" = "$old_cfg" ]; then
    log "pg_upgrade from $old to $new: $old's programs cannot run in 19's chroot; from $fallback instead"
    upgrade_from_fallback
elif log "pg_upgrade from $old to $new" && upgrade "$old" "$base/source" "$base/upgraded" $((first + 2)); then
    check_moved "$base/upgraded" $((first + 2)) "upgraded from $old" "$before" "$recent" "$old"
elif grep -q 'unrecognized parameter "pg_attver"' "$base/upgraded.log"; then
    # NEW's pg_dump copies OLD's pg_attver column options into the upgrade script and NEW's
    # server rejects them. Show that this stops any pg_upgrade from OLD, with or without our
    # extension, then prove the upgrade path on the newest other version instead.
    log "pg_upgrade $old -> $new stopped on $old's pg_attver column options; trying without pg_objectid"
    make_source "$old" "$base/control" $((first + 5)) plain
    if upgrade "$old" "$base/control" "$base/control-upgraded" $((first + 7)); then
        die "pg_upgrade of a database without pg_objectid succeeded, so the failure above is ours"
    fi
    grep -q 'unrecognized parameter "pg_attver"' "$base/control-upgraded.log" ||
        die "pg_upgrade without pg_objectid failed for another reason; see $base/control-upgraded.log"
    echo "note: pg_upgrade $old -> $new fails the same way without pg_objectid (pg_attver): not ours"
    log "pg_upgrade from $fallback to $new instead"
    upgrade_from_fallback
else
    cat "$base/upgraded.log" >&2
    die "pg_upgrade $old -> $new failed"
fi
port=$((first + 10))
for from in "${more[@]}"; do
    make_source "$from" "$base/source-$from" "$port"
    before=$(psql_at "$base/source-$from" "$port" "$checksum")
    recent=$(psql_at "$base/source-$from" "$port" "SELECT count(*) FROM recent")
    log "pg_dump from $from, pg_restore into $new"
    as_pg_user "$(pg_config_of "$from" | xargs dirname)/pg_dump" -h "$base/source-$from" -p "$port" \
        -U postgres -Fc -f "$base/app-$from.dump" app
    cluster_start "$new_cfg" "$base/restored-$from" $((port + 1))
    clusters+=("$new_cfg $base/restored-$from")
    as_pg_user "$new_bin/createdb" -h "$base/restored-$from" -p $((port + 1)) -U postgres app
    as_pg_user "$new_bin/pg_restore" -h "$base/restored-$from" -p $((port + 1)) -U postgres -d app \
        --exit-on-error "$base/app-$from.dump"
    check_moved "$base/restored-$from" $((port + 1)) "restored from $from into $new" "$before" "$recent" "$from"
    cluster_stop "$new_cfg" "$base/restored-$from"
    log "pg_upgrade from $from to $new"
    upgrade "$from" "$base/source-$from" "$base/upgraded-$from" $((port + 1)) || {
        cat "$base/upgraded-$from.log" >&2
        die "pg_upgrade $from -> $new failed"
    }
    check_moved "$base/upgraded-$from" $((port + 1)) "upgraded from $from" "$before" "$recent" "$from"
    port=$((port + 2))
done
log "cross-version checks passed"
