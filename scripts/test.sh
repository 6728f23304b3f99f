#!/usr/bin/env bash
# README command 2: set up, then run every test on each selected PostgreSQL major version.
#   scripts/test.sh           all of 13 14 15 16 17 18
#   scripts/test.sh 15        a subset (or PG_OBJECTID_VERSIONS="15 18")
# Per version: the server suite (tests/server) against a throwaway cluster, its generator tests
# again with the library preloaded, then the in-process pgrx tests (pgrx-tests/), and on 16-18
# the Citus suite (tests/citus, scripts/citus_test.sh). Before them the core's unit tests; after
# them, when 15, 17 and 18 are selected, the dump/restore and pg_upgrade checks
# (scripts/cross_version.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

mapfile -t versions < <(selected_versions "$@")
"$ROOT/scripts/setup.sh" "${versions[@]}"
cd "$ROOT"

log "core unit tests"
cargo test
# The 0.5.0 -> 0.6.0 update script is generated from sql/rekey/: refuse a stale one.
python3 "$ROOT/scripts/rekey_update_sql.py" --check

# The server suite is an ordinary client program, the same for every server version; so is the
# Citus suite.
cargo test --test server --no-run
cargo test --test citus --no-run

base=${PG_OBJECTID_TEST_DIR:-/tmp/pg_objectid-test}
running=()
stop_all() {
    local entry
    for entry in "${running[@]}"; do cluster_stop ${entry}; done
}
trap stop_all EXIT

summary=()
failed=0
# The client-library tests (docs/clients.md) test drivers, not servers: once per run, on 17 when
# it is selected, else on the last version selected.
clients_version=${versions[-1]}
printf '%s\n' "${versions[@]}" | grep -qx 17 && clients_version=17
for v in "${versions[@]}"; do
    started=$SECONDS
    pg_config=$(pg_config_of "$v")
    install_extension "$pg_config" debug

    dir="$base/pg$v"
    port=$((55500 + v))
    # Issue 10: the fuzz suite (tests/server/fuzz.rs) reads this server's log for crashed processes.
    export PG_OBJECTID_TEST_LOG="$dir/server.log"
    log "server tests on PostgreSQL $v (cluster in $dir, port $port)"
    cluster_start "$pg_config" "$dir" "$port"
    running=("$pg_config $dir")
    server=passed
    PG_OBJECTID_TEST_DSN="host=$dir port=$port user=postgres" cargo test --test server || server=FAILED
    cluster_stop "$pg_config" "$dir"

    # The generator again, with the library preloaded: server mode from the main shared memory.
    log "generator tests on PostgreSQL $v with shared_preload_libraries = 'pg_objectid'"
    cluster_start "$pg_config" "$dir" "$port" "shared_preload_libraries = 'pg_objectid'"
    PG_OBJECTID_TEST_DSN="host=$dir port=$port user=postgres" cargo test --test server generate:: || server=FAILED
    cluster_stop "$pg_config" "$dir"
    running=()

    # Issue 10, killed mid-write: pg_ctl -m immediate under 4 inserting sessions, both generator modes.
    "$ROOT/scripts/crash_test.sh" "$v" "$base/crash$v" "$port" || server=FAILED

    # Issue 13: docs/clients.md's adapters for psycopg 3, node-postgres and the postgres crate,
    # against this build (before cargo pgrx test installs its own over it).
    if [ "$v" = "$clients_version" ]; then
        clients=passed
        "$ROOT/scripts/clients_test.sh" "$v" 55640 || clients=FAILED
        [ "$clients" = passed ] || failed=1
    fi

    # Issue 12: a coordinator and two workers, on the versions Citus 14 supports. The script
    # builds Citus into this server's tree the first time (cached afterwards). Before the pgrx
    # tests, which install their own build (with the pg_test feature) over the one tested here.
    citus=-
    if [ "$v" -ge 16 ]; then
        citus=passed
        "$ROOT/scripts/citus_test.sh" "$v" || citus=FAILED
    fi

    log "in-process pgrx tests on PostgreSQL $v"
    pgrx_args=("pg$v")
    if [ "$(id -u)" = 0 ]; then
        # cargo-pgrx starts its server through sudo as this user, in a folder it can write.
        rm -rf "$base/pgrx$v"
        mkdir -p "$base/pgrx$v"
        chown "$RUN_AS" "$base" "$base/pgrx$v"
        pgrx_args+=(--runas "$RUN_AS" --pgdata "$base/pgrx$v/data")
    fi
    pgrx=passed
    cargo pgrx test "${pgrx_args[@]}" || pgrx=FAILED

    [ "$server" = passed ] && [ "$pgrx" = passed ] && [ "$citus" != FAILED ] || failed=1
    summary+=("$(printf 'PostgreSQL %-3s server tests %-7s pgrx tests %-7s citus tests %-7s %4ds' "$v" "$server" "$pgrx" "$citus" $((SECONDS - started)))")
done

selected() { printf '%s\n' "${versions[@]}" | grep -qx "$1"; }
# 17 is where the pg_upgrade check falls back to when 15 cannot be upgraded (see the script).
if selected 15 && selected 17 && selected 18; then
    cross=passed
    also=()
    selected 16 && also+=(16)
    "$ROOT/scripts/cross_version.sh" 15 18 17 "${also[@]}" || cross=FAILED
    [ "$cross" = passed ] || failed=1
    summary+=("dump/restore and pg_upgrade to 18: $cross")
fi
if selected 15 && selected 18; then
    replication=passed
    "$ROOT/scripts/replication_test.sh" 15 18 || replication=FAILED
    [ "$replication" = passed ] || failed=1
    summary+=("logical replication 15 -> 18, streaming replication on 18: $replication")
fi

# Issue 13: the Debian package of 15, installed into Debian's own server with apt-get, used and
# purged again (scripts/package_test.sh). It moves the development build of 15 aside meanwhile (and
# back), so it runs after every other test of that server.
if selected 15; then
    debian=passed
    PG_OBJECTID_PACKAGE_TEST_DIR="$base/package" "$ROOT/scripts/package_test.sh" 55650 || debian=FAILED
    [ "$debian" = passed ] || failed=1
    summary+=("Debian package on PostgreSQL 15: $debian")
fi
# The PGXN release: META.json against the spec (PGXN's validator and scripts/check_meta.py) and
# against the control files built above, and the zip's contents.
pgxn=passed
"$ROOT/scripts/pgxn_test.sh" "${versions[@]}" || pgxn=FAILED
[ "$pgxn" = passed ] || failed=1
summary+=("PGXN META.json and zip: $pgxn")
[ -n "${clients:-}" ] && summary+=("client libraries (Python, Node.js, Rust) on PostgreSQL $clients_version: $clients")
# Issue 13: the mongoexport recipe of docs/mongodb.md, once, on the newest selected version (its
# SQL function uses the RETURN form of PostgreSQL 14). Every version's build is still installed.
newest=${versions[${#versions[@]}-1]}
if [ "$newest" -ge 14 ]; then
    mongodb=passed
    "$ROOT/scripts/mongodb_test.sh" "$newest" 55652 || mongodb=FAILED
    [ "$mongodb" = passed ] || failed=1
    summary+=("mongoexport recipe (docs/mongodb.md) on $newest: $mongodb")
fi

log "summary"
printf '  %s\n' "${summary[@]}"
exit $failed
