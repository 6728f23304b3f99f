#!/usr/bin/env bash
# README command 2: set up, then run every test.
#   1. the pure Rust core's unit tests (plain `cargo test`),
#   2. the server suite (tests/server) against a throwaway PostgreSQL 15 cluster,
#   3. the in-process pgrx tests (pgrx-tests/) under `cargo pgrx test`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$ROOT/scripts/setup.sh"
cd "$ROOT"

log "core unit tests"
cargo test

install_extension "$PG15_CONFIG" debug
dir=${PG_OBJECTID_TEST_DIR:-/tmp/pg_objectid-test}
port=${PG_OBJECTID_TEST_PORT:-55416}
trap 'cluster_stop "$PG15_CONFIG" "$dir"' EXIT
log "starting a throwaway PostgreSQL 15 cluster in $dir (port $port)"
cluster_start "$PG15_CONFIG" "$dir" "$port"
log "server tests (PostgreSQL 15)"
PG_OBJECTID_TEST_DSN="host=$dir port=$port user=postgres" cargo test --test server
cluster_stop "$PG15_CONFIG" "$dir"

log "in-process pgrx tests (PostgreSQL 15)"
pgrx_dir=${PG_OBJECTID_PGRX_DIR:-/tmp/pg_objectid-pgrx-test}
runas=()
if [ "$(id -u)" = 0 ]; then
    # cargo-pgrx starts the server through sudo as this user, in a folder the user can write.
    rm -rf "$pgrx_dir"
    mkdir -p "$pgrx_dir"
    chown "$RUN_AS" "$pgrx_dir"
    runas=(--runas "$RUN_AS" --pgdata "$pgrx_dir/data")
fi
cargo pgrx test pg15 "${runas[@]}"
