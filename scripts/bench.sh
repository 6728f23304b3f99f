#!/usr/bin/env bash
# The benchmark suite (a command, not a test): builds pg_objectid in release mode, starts throwaway
# clusters, runs every workload of bench/suite.py over every candidate, and writes
# docs/benchmarks.md, docs/benchmarks.json and the charts docs/bench-*.png.
#
#   scripts/bench.sh [--scale N] [--reps N] [--seconds N] [--pg VERSION] [--out DIR] [--only LIST]
#
#   --scale N     multiplies the row counts (default 1: 2 million rows per bulk load)
#   --reps N      repetitions of each measurement; the report gives medians (default 3)
#   --seconds N   length of each pgbench run (default 10)
#   --pg VERSION  the server most candidates run on, 14-18 (default 18, whose built-in uuidv7()
#                 is then a candidate too)
#   --out DIR     where the report, charts and JSON go (default docs/ of this repository)
#   --only LIST   run only these workloads (comma-separated: generation, bulk, reads, concurrent,
#                 layout), write only the JSON and print its medians instead of the report
#
# Per-backend generator state only exists where there is neither shared_preload_libraries nor the
# DSM registry, that is below 17; so that candidate runs on a second, not preloaded cluster (the
# same version when it is 14-16, else 16). Every server started here is stopped on exit, also
# when interrupted.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

scale=1 reps=3 seconds=10 main=18 out="$ROOT/docs" only=""
while [ $# -gt 0 ]; do
    case $1 in
        --scale) scale=$2 ;;
        --reps) reps=$2 ;;
        --seconds) seconds=$2 ;;
        --pg) main=$2 ;;
        --out) out=$2 ;;
        --only) only=$2 ;;
        -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option: $1 (see --help)" ;;
    esac
    shift 2
done
case $main in 14 | 15 | 16 | 17 | 18) ;; *) die "--pg must be 14-18 (pg_stat_wal is needed)" ;; esac
if [ "$main" -le 16 ]; then backend=$main; else backend=16; fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

started=$(date +%s)
"$ROOT/scripts/setup.sh" "$main" "$backend"
main_cfg=$(pg_config_of "$main")
backend_cfg=$(pg_config_of "$backend")
install_extension "$main_cfg" release
[ "$backend" = "$main" ] || install_extension "$backend_cfg" release

pydeps="$CACHE/python-bench"
pip_target "$ROOT/bench/requirements.txt" "$pydeps"

base=${PG_OBJECTID_BENCH_DIR:-/tmp/pg_objectid-bench}
# Kept in step with bench/suite.py, which writes them into the report.
rows=$(python3 -c "print(int(2_000_000 * float('$scale')))")
# 16 bytes per bulk-loaded row: well under a random-key primary key's ~40, so that index cannot
# stay in shared buffers; the report gives the sizes.
shared_buffers_kb=$(python3 -c "print(max(16 * 1024, $rows * 16 // 1024))")
settings=(
    "shared_buffers = '${shared_buffers_kb}kB'"
    "max_wal_size = '1GB'"
    "checkpoint_timeout = '30s'"
    "synchronous_commit = off"
    "autovacuum = off"
    "jit = off"
    "work_mem = '256MB'"
    "maintenance_work_mem = '256MB'"
    "max_parallel_workers_per_gather = 0"
    "max_parallel_maintenance_workers = 0"
)

child=""
cleanup() {
    # Whatever failed or was interrupted, go on to stop the servers.
    set +e
    if [ -n "$child" ]; then
        kill "$child" 2>/dev/null
        wait "$child" 2>/dev/null
    fi
    log "stopping the benchmark's servers"
    cluster_stop "$main_cfg" "$base/main"
    cluster_stop "$backend_cfg" "$base/backend"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "starting PostgreSQL $main (pg_objectid preloaded) in $base/main and PostgreSQL $backend (not preloaded) in $base/backend"
cluster_start "$main_cfg" "$base/main" 55540 "${settings[@]}" "shared_preload_libraries = 'pg_objectid'"
cluster_start "$backend_cfg" "$base/backend" 55541 "${settings[@]}"
for cluster in main backend; do
    as_pg_user "$(dirname "$main_cfg")/createdb" -h "$base/$cluster" -p "$([ $cluster = main ] && echo 55540 || echo 55541)" \
        -U postgres bench
done

# In the background and waited for, so that an interrupt reaches the trap at once.
PYTHONPATH="$pydeps" python3 "$ROOT/bench/suite.py" \
    --main "$base/main:55540:$(dirname "$main_cfg")" \
    --backend "$base/backend:55541:$(dirname "$backend_cfg")" \
    --rows "$rows" --reps "$reps" --seconds "$seconds" \
    --settings "$(printf '%s\n' "${settings[@]}")" \
    --json "$out/benchmarks.json" --only "$only" &
child=$!
wait "$child"
child=""
if [ -n "$only" ]; then
    # A partial run: the medians, not a report whose other sections would be missing.
    python3 - "$out/benchmarks.json" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
for workload, data in r.items():
    if isinstance(data, dict) and "ns_per_call" in data:
        for key, values in data["ns_per_call"].items():
            print(f"{workload:12} {key:24} median {statistics.median(values):8.1f} ns of {[round(v, 1) for v in values]}")
PY
    log "partial benchmark ($only) finished in $(($(date +%s) - started)) s: $out/benchmarks.json"
    exit 0
fi
PYTHONPATH="$pydeps" python3 "$ROOT/bench/report.py" "$out/benchmarks.json" "$out" >/dev/null
log "benchmark finished in $(($(date +%s) - started)) s: $out/benchmarks.md"
