#!/usr/bin/env bash
# Writes from several Citus nodes (a command, not a test): a coordinator and two workers on this
# machine, and for each generator a table distributed over 4 shards that 1, 2 and then 3 nodes
# insert into at once; bench/citus.py says what is measured. Writes docs/bench-citus.json, then
# renders docs/benchmarks.md again (bench/report.py adds the section from it).
#
#   scripts/bench_citus.sh [--seconds N] [--reps N] [--pg VERSION]
#
#   --seconds N   length of each insert run (default 30)
#   --reps N      runs of each configuration; the report gives every shard's range (default 1)
#   --pg VERSION  the server, 16-18 (default 17)
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

seconds=30 reps=1 pg=17
while [ $# -gt 0 ]; do
    case $1 in
        --seconds) seconds=$2 ;;
        --reps) reps=$2 ;;
        --pg) pg=$2 ;;
        -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option: $1 (see --help)" ;;
    esac
    shift 2
done
case $pg in 16 | 17 | 18) ;; *) die "--pg must be 16-18 (Citus $CITUS_VERSION)" ;; esac

started=$(date +%s)
"$ROOT/scripts/setup.sh" "$pg"
cfg=$(pg_config_of "$pg")
install_citus "$cfg"
install_extension "$cfg" release

pydeps="$CACHE/python-bench"
pip_target "$ROOT/bench/requirements.txt" "$pydeps"

dir=${PG_OBJECTID_BENCH_DIR:-/tmp/pg_objectid-bench}/citus
port=55545
child=""
cleanup() {
    set +e
    if [ -n "$child" ]; then
        kill "$child" 2>/dev/null
        wait "$child" 2>/dev/null
    fi
    citus_cluster_stop "$cfg" "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The settings of scripts/bench.sh's insert runs; autovacuum off so that nothing but the inserts
# shapes the indexes.
log "starting a Citus cluster on PostgreSQL $pg in $dir (ports $port-$((port + 2)))"
citus_cluster_start "$cfg" "$dir" "$port" "synchronous_commit = off" "autovacuum = off" \
    "jit = off" "max_wal_size = '1GB'"

PYTHONPATH="$pydeps" python3 "$ROOT/bench/citus.py" --port "$port" --bindir "$("$cfg" --bindir)" \
    --seconds "$seconds" --reps "$reps" --json "$ROOT/docs/bench-citus.json" &
child=$!
wait "$child"
child=""
PYTHONPATH="$pydeps" python3 "$ROOT/bench/report.py" "$ROOT/docs/benchmarks.json" "$ROOT/docs" >/dev/null
log "Citus benchmark finished in $(($(date +%s) - started)) s: docs/bench-citus.json, docs/benchmarks.md"
