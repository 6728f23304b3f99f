#!/usr/bin/env bash
# README command 1: set up, build and install pg_objectid, start a throwaway PostgreSQL 15
# cluster, run demo/demo.sql in it, and stop the cluster again.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$ROOT/scripts/setup.sh" 15
PG15_CONFIG=$(pg_config_of 15)
install_extension "$PG15_CONFIG" release

dir=${PG_OBJECTID_DEMO_DIR:-/tmp/pg_objectid-demo}
port=${PG_OBJECTID_DEMO_PORT:-55415}
trap 'cluster_stop "$PG15_CONFIG" "$dir"' EXIT
log "starting a throwaway PostgreSQL 15 cluster in $dir (port $port)"
# Preloaded, so that gen_objectid() uses one generator for the whole server.
cluster_start "$PG15_CONFIG" "$dir" "$port" "shared_preload_libraries = 'pg_objectid'"

log "running demo/demo.sql"
"$("$PG15_CONFIG" --bindir)/psql" -X -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d postgres \
    -f "$ROOT/demo/demo.sql"
log "demo finished; stopping the cluster"
