#!/usr/bin/env bash
# Killed mid-write (issue 10): scripts/crash_test.sh VERSION DIR PORT
# On a throwaway cluster of PostgreSQL VERSION in DIR (emptied first) listening on PORT, 4 sessions
# insert with DEFAULT gen_objectid() while the server is stopped with pg_ctl -m immediate, then it
# is started again and more rows go in (tests/server/crash.rs, run with --ignored). Done once
# without and once with shared_preload_libraries = 'pg_objectid': both generator modes where
# both exist (backend and server mode on 13-16; the DSM registry and the main shared memory on
# 17+). The extension must be installed for that server already (scripts/test.sh does that).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[ $# -eq 3 ] || die "usage: $0 VERSION DIR PORT"
v=$1 dir=$2 port=$3
pg_config=$(pg_config_of "$v")
cd "$ROOT"
trap 'cluster_stop "$pg_config" "$dir"' EXIT

run_as=
# 19's pg_ctl is a wrapper that switches user itself (sid.sh).
[ "$(id -u)" = 0 ] && ! is_sid_program "$("$pg_config" --bindir)/pg_ctl" && run_as=$RUN_AS
status=0
for preload in no yes; do
    settings=()
    if [ "$preload" = yes ]; then
        settings=("shared_preload_libraries = 'pg_objectid'")
        mode=server
    elif [ "$v" -ge 17 ]; then
        mode=server
    else
        mode=backend
    fi
    log "killed mid-write on PostgreSQL $v: generator in $mode mode (preloaded: $preload)"
    cluster_start "$pg_config" "$dir" "$port" "${settings[@]}"
    PG_OBJECTID_TEST_DSN="host=$dir port=$port user=postgres" \
        PG_OBJECTID_TEST_LOG="$dir/server.log" \
        PG_OBJECTID_CRASH_PG_CTL="$("$pg_config" --bindir)/pg_ctl" \
        PG_OBJECTID_CRASH_PGDATA="$dir/data" \
        PG_OBJECTID_CRASH_RUN_AS="$run_as" \
        PG_OBJECTID_CRASH_MODE="$mode" \
        run_tests server crash:: --ignored --nocapture || status=1
    cluster_stop "$pg_config" "$dir"
done
exit $status
