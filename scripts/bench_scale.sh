#!/usr/bin/env bash
# The larger-than-memory benchmark (issue 21; a command, not a test): what ordered keys buy once the
# key's index outgrows memory, and how costs grow with the table. Builds pg_objectid in release
# mode, starts two clusters of PostgreSQL 18, runs bench/scale.py, writes docs/bench-scale.json and
# regenerates docs/benchmarks.md (sections 9 and 10) and its charts from the JSON files there.
#
#   scripts/bench_scale.sh [--shared-buffers SIZE] [--index-multiple N] [--sizes LIST] [--reps N]
#                          [--rekey-reps N] [--cap SECONDS] [--only LIST] [--json FILE] [--pg VERSION]
#
#   --shared-buffers SIZE  the direct-I/O cluster's (default 4MB)
#   --index-multiple N     grow each table until its key index is N x shared_buffers (default 20)
#   --cap SECONDS          ... or for this long per candidate at most (default 900)
#   --sizes LIST           row counts of the size-dependent costs (default 200000,632000,2000000)
#   --reps N               repetitions of CREATE INDEX (half, at least 3; default 5)
#   --rekey-reps N         rekeys of each size by rekey_run and by the bare loop (default 2)
#   --only LIST            growth, sizes, generators (comma-separated): runs those and keeps the
#                          others' results from the JSON file (each section says which run it is)
#   --json FILE            where the results go (default docs/bench-scale.json)
#   --pg VERSION           16-18 (debug_io_direct exists from 16 on; default 18, whose uuidv7()
#                          is a candidate)
#
# The direct-I/O cluster (debug_io_direct = data, a developer option) reads every page that is not
# in its shared buffers from the disk, so a random key's inserts pay for the leaf pages they miss
# as they would on a server whose index is larger than its memory. Its data folder must be on a
# file system that supports O_DIRECT (not tmpfs): PG_OBJECTID_BENCH_DIR, default /var/tmp.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

shared=4MB multiple=20 cap=900 sizes=200000,632000,2000000 reps=5 rekey_reps=2 only="" pg=18
json="$ROOT/docs/bench-scale.json"
while [ $# -gt 0 ]; do
    case $1 in
        --shared-buffers) shared=$2 ;;
        --index-multiple) multiple=$2 ;;
        --cap) cap=$2 ;;
        --sizes) sizes=$2 ;;
        --reps) reps=$2 ;;
        --rekey-reps) rekey_reps=$2 ;;
        --only) only=$2 ;;
        --json) json=$2 ;;
        --pg) pg=$2 ;;
        -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option: $1 (see --help)" ;;
    esac
    shift 2
done
case $pg in 16 | 17 | 18) ;; *) die "--pg must be 16-18 (debug_io_direct; 18's own uuidv7() is a candidate only on 18)" ;; esac

started=$(date +%s)
"$ROOT/scripts/setup.sh" "$pg"
cfg=$(pg_config_of "$pg")
install_extension "$cfg" release
pydeps="$CACHE/python-bench"
pip_target "$ROOT/bench/requirements.txt" "$pydeps"

base=${PG_OBJECTID_BENCH_DIR:-/var/tmp/pg_objectid-bench}/scale
mkdir -p "$base/work"
chmod 0755 "$base" "$base/work"
[ "$(id -u)" = 0 ] && chown "$RUN_AS" "$base/work"
common=("max_wal_size = '4GB'" "synchronous_commit = off" "jit = off" "autovacuum = off"
    "max_parallel_workers_per_gather = 0" "max_parallel_maintenance_workers = 0"
    "shared_preload_libraries = 'pg_objectid'")
disk=("shared_buffers = '$shared'" "debug_io_direct = data" "wal_buffers = '4MB'"
    "checkpoint_timeout = '60s'" "${common[@]}")
# The memory cluster vacuums as servers do: the rekey's batches leave dead row versions behind.
memory=("shared_buffers = '512MB'" "checkpoint_timeout = '5min'" "work_mem = '64MB'"
    "maintenance_work_mem = '512MB'" "${common[@]/autovacuum = off/autovacuum = on}")

child=""
cleanup() {
    set +e
    if [ -n "$child" ]; then
        kill "$child" 2>/dev/null
        wait "$child" 2>/dev/null
    fi
    log "stopping the benchmark's servers"
    cluster_stop "$cfg" "$base/disk"
    cluster_stop "$cfg" "$base/memory"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "starting PostgreSQL $pg with direct I/O and shared_buffers = $shared in $base/disk, and an ordinary one in $base/memory"
cluster_start "$cfg" "$base/disk" 55548 "${disk[@]}"
cluster_start "$cfg" "$base/memory" 55549 "${memory[@]}"
for port in 55548 55549; do
    dir=$base/disk
    [ $port = 55549 ] && dir=$base/memory
    as_pg_user "$(dirname "$cfg")/createdb" -h "$dir" -p "$port" -U postgres bench
    as_pg_user "$(dirname "$cfg")/psql" -h "$dir" -p "$port" -U postgres -d bench -qc "CREATE EXTENSION pg_objectid"
done

PYTHONPATH="$pydeps" python3 "$ROOT/bench/scale.py" \
    --disk "$base/disk:55548:$(dirname "$cfg")" --memory "$base/memory:55549:$(dirname "$cfg")" \
    --shared-buffers "$shared" --index-multiple "$multiple" --cap "$cap" --sizes "$sizes" \
    --reps "$reps" --rekey-reps "$rekey_reps" --only "$only" --merge --workdir "$base/work" \
    --settings "$(printf 'direct-I/O cluster: %s\n' "${disk[@]}"; printf 'ordinary cluster: %s\n' "${memory[@]}")" \
    --json "$json" &
child=$!
wait "$child"
child=""
if [ "$json" = "$ROOT/docs/bench-scale.json" ]; then
    PYTHONPATH="$pydeps" python3 "$ROOT/bench/report.py" "$ROOT/docs/benchmarks.json" "$ROOT/docs" >/dev/null
fi
log "scale benchmark finished in $(($(date +%s) - started)) s: $json"
