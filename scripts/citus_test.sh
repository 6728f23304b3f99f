#!/usr/bin/env bash
# citus_test.sh VERSION: pg_objectid on a distributed PostgreSQL. Builds Citus for PostgreSQL
# VERSION (16 or later) unless that server has it already, starts a coordinator and two workers
# with both libraries preloaded, and runs the Rust suite in tests/citus/ against them. The
# extension must already be installed in that server (scripts/test.sh does that).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[ $# -eq 1 ] || die "usage: $0 VERSION (16, 17 or 18)"
v=$1
pg_config=$(pg_config_of "$v")
[ -f "$("$pg_config" --pkglibdir)/pg_objectid.so" ] ||
    die "pg_objectid is not installed in PostgreSQL $v; scripts/test.sh installs it first"
install_citus "$pg_config"

dir=${PG_OBJECTID_TEST_DIR:-/tmp/pg_objectid-test}/citus$v
# Three ports per version (coordinator, worker 1, worker 2): 55760-55762 for 16, 55770… for 17.
port=$((55700 + 10 * (v - 10)))

trap 'citus_cluster_stop "$pg_config" "$dir"' EXIT
log "Citus tests on PostgreSQL $v (coordinator on port $port, workers on $((port + 1)) and $((port + 2)), in $dir)"
citus_cluster_start "$pg_config" "$dir" "$port"

cd "$ROOT"
export PG_OBJECTID_CITUS_COORDINATOR="host=127.0.0.1 port=$port user=postgres"
export PG_OBJECTID_CITUS_WORKER1="host=127.0.0.1 port=$((port + 1)) user=postgres"
export PG_OBJECTID_CITUS_WORKER2="host=127.0.0.1 port=$((port + 2)) user=postgres"
status=0
run_tests citus || status=$?
# A crashed backend shows in a node's log even when every query of the suite succeeded.
for node in "${CITUS_NODES[@]}"; do
    if grep -E "terminated by signal|server process .* was terminated" "$dir/$node/server.log" >&2; then
        echo "a process of the $node crashed; see $dir/$node/server.log" >&2
        status=1
    fi
done
exit $status
