#!/usr/bin/env bash
# Every test of one PostgreSQL major version, as scripts/test.sh runs it for each version:
#   scripts/test_version.sh 17            all of the below
#   scripts/test_version.sh 17 --quick    the server suite only (the fast lane: make quick)
#   scripts/test_version.sh 17 --clients  all, and the client-library tests after step 3
# 1. the server suite (tests/server) against a throwaway cluster, with the debug build installed;
# 2. its generator tests again with the library in shared_preload_libraries;
# 3. the crash test (scripts/crash_test.sh): pg_ctl -m immediate under inserting sessions;
# 4. on 16-18, the Citus suite (scripts/citus_test.sh);
# 5. the in-process pgrx tests (pgrx-tests/), which install their own build over the one above.
# Setup (scripts/setup.sh) and the build of the client programs are the caller's. Its folders and
# ports are its version's own (docs/testing.md), so several versions may run side by side. The last
# line of its output is the summary line scripts/test.sh prints; it exits 1 if anything failed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

v=${1:?usage: scripts/test_version.sh VERSION [--quick]}
mode=${2:-}
started=$SECONDS
pg_config=$(pg_config_of "$v")
cd "$ROOT"
install_extension "$pg_config" debug

base=${PG_OBJECTID_TEST_DIR:-/tmp/pg_objectid-test}
dir="$base/pg$v"
port=$((55500 + v))
running=
# The suite's tests wait on the server far more than they compute, each in a database of its own:
# six at a time take about 3 minutes where two take 5 (PG_OBJECTID_TEST_THREADS to change it).
threads=--test-threads=${PG_OBJECTID_TEST_THREADS:-6}
trap '[ -z "$running" ] || cluster_stop "$pg_config" "$dir"' EXIT
if [ "$v" = 19 ]; then
    # The server is in the chroot (sid.sh): the files it names are under the chroot's root here,
    # and the docs test's psql is its own.
    export PG_OBJECTID_TEST_SERVER_ROOT=$SID PG_OBJECTID_TEST_PSQL="$SID_WRAPPERS/psql"
fi
# The fuzz and crash checks read this server's log for crashed processes (tests/server/common.rs).
export PG_OBJECTID_TEST_LOG="$dir/server.log"
log "server tests on PostgreSQL $v (cluster in $dir, port $port)"
# With RUST_BACKTRACE=1 in the server's environment, as an operator's may have it: no error a client
# reads may carry a Rust backtrace (extension::errors_carry_no_rust_backtrace).
RUST_BACKTRACE=1 cluster_start "$pg_config" "$dir" "$port"
running=1
server=passed
PG_OBJECTID_TEST_DSN="host=$dir port=$port user=postgres" run_tests server "$threads" || server=FAILED
cluster_stop "$pg_config" "$dir"
running=

if [ "$mode" = --quick ]; then
    line=$(printf 'PostgreSQL %-3s server tests %-7s %4ds' "$v" "$server" $((SECONDS - started)))
    echo "$line"
    [ "$server" = passed ]
    exit
fi

# The generator again, with the library preloaded: server mode from the main shared memory.
log "generator tests on PostgreSQL $v with shared_preload_libraries = 'pg_objectid'"
cluster_start "$pg_config" "$dir" "$port" "shared_preload_libraries = 'pg_objectid'"
running=1
PG_OBJECTID_TEST_DSN="host=$dir port=$port user=postgres" run_tests server generate:: "$threads" || server=FAILED
cluster_stop "$pg_config" "$dir"
running=

# Issue 10, killed mid-write: pg_ctl -m immediate under 4 inserting sessions, both generator modes.
"$ROOT/scripts/crash_test.sh" "$v" "$base/crash$v" "$port" || server=FAILED

# Issue 13: docs/clients.md's adapters for psycopg 3, node-postgres and the postgres crate, against
# this build (before the pgrx tests install theirs over it). They test drivers, not servers:
# scripts/test.sh asks for them on one version.
clients=
if [ "$mode" = --clients ]; then
    clients=passed
    "$ROOT/scripts/clients_test.sh" "$v" 55640 || clients=FAILED
fi

# Issue 12: a coordinator and two workers, on the versions Citus 14 supports. The script builds
# Citus into this server's tree the first time (cached afterwards). Before the pgrx tests, which
# install their own build (with the pg_test feature) over the one tested here.
# Citus 14.0.1 refuses 19 at configure: "Citus is not compatible with the detected PostgreSQL
# version 19." (docs/distributed.md).
citus=-
if [ "$v" -ge 16 ] && [ "$v" -le 18 ]; then
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
if [ "$v" = 19 ]; then
    # In the chroot, as install_extension builds 19 (common.sh); it reaches $base through /tmp.
    CARGO_TARGET_DIR="$ROOT/target/sid" in_sid cargo pgrx test "${pgrx_args[@]}" || pgrx=FAILED
else
    # It builds (with the pg_test feature) and installs its own build: under the build lock
    # (common.sh).
    build_lock "$ROOT/scripts/cargo.sh" pgrx test "${pgrx_args[@]}" || pgrx=FAILED
fi

printf 'PostgreSQL %-3s server tests %-7s pgrx tests %-7s citus tests %-7s %4ds%s\n' \
    "$v" "$server" "$pgrx" "$citus" $((SECONDS - started)) "${clients:+   client libraries $clients}"
[ "$server" = passed ] && [ "$pgrx" = passed ] && [ "$citus" != FAILED ] && [ "$clients" != FAILED ]
