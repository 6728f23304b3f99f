#!/usr/bin/env bash
# The rekey benchmark (a command, not a test): the toolkit's CALL rekey_run against one naive
# UPDATE with ON UPDATE CASCADE, and against a bare PL/pgSQL loop of the same batches (what batching
# itself costs), on a parent of 2 million rows and the rows referencing it, in each schema shape
# asked for, from the same copy (bench/rekey.py says what is measured). Writes
# docs/bench-rekey.json (or --json) and prints the medians; docs/migration.md reports them.
#
#   scripts/bench_rekey.sh [--scale N] [--reps N] [--batch-size N[,N...]] [--shapes S[,S...]]
#                          [--methods M[,M...]] [--json FILE] [--pg VERSION]
#
#   --scale N       multiplies the row counts (default 1)
#   --reps N        runs of each method; medians are reported (default 1)
#   --batch-size N  the toolkit's batch sizes ("default": rekey_run's sizing by time), the first
#                   compared with the naive update (default: default)
#   --shapes S      one_column, self_reference, two_foreign_keys, composite_child, partitioned_child,
#                   application (issue 38's held-out schema: policies, triggers, a three-level chain),
#                   or all (default one_column)
#   --methods M     toolkit, toolkit_cascade, naive, bare (default: all four; the ratios to the
#                   naive update need the first three)
#   --json FILE     where the results go (default docs/bench-rekey.json; docs/bench-rekey-shapes.json
#                   or docs/bench-rekey-flatness.json also rewrites docs/benchmarks.md's section 8)
#   --pg VERSION    the server, 14-18 (default 17; pgstattuple is needed)
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

scale=1 reps=1 batch=default pg=17 shapes=one_column methods=toolkit,toolkit_cascade,naive,bare json="$ROOT/docs/bench-rekey.json"
while [ $# -gt 0 ]; do
    case $1 in
        --scale) scale=$2 ;;
        --reps) reps=$2 ;;
        --batch-size) batch=$2 ;;
        --shapes) shapes=$2 ;;
        --methods) methods=$2 ;;
        --json) json=$2 ;;
        --pg) pg=$2 ;;
        -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option: $1 (see --help)" ;;
    esac
    shift 2
done
[ "$shapes" = all ] && shapes=one_column,self_reference,two_foreign_keys,composite_child,partitioned_child,application
case $pg in 14 | 15 | 16 | 17 | 18) ;; *) die "--pg must be 14-18" ;; esac

started=$(date +%s)
"$ROOT/scripts/setup.sh" "$pg"
cfg=$(pg_config_of "$pg")
install_extension "$cfg" release

pydeps="$CACHE/python-bench"
pip_target "$ROOT/bench/requirements.txt" "$pydeps"

parents=$(python3 -c "print(int(2_000_000 * float('$scale')))")
dir=${PG_OBJECTID_BENCH_DIR:-/tmp/pg_objectid-bench}/rekey
port=55542
child=""
cleanup() {
    set +e
    if [ -n "$child" ]; then
        kill "$child" 2>/dev/null
        wait "$child" 2>/dev/null
    fi
    cluster_stop "$cfg" "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The settings of scripts/bench.sh, but shared buffers holding the key indexes, and autovacuum on
# as in production (the toolkit's batches leave dead rows behind them as they go).
log "starting PostgreSQL $pg in $dir"
cluster_start "$cfg" "$dir" "$port" "shared_buffers = '1GB'" "max_wal_size = '4GB'" \
    "checkpoint_timeout = '5min'" "synchronous_commit = off" "jit = off" "work_mem = '64MB'" \
    "maintenance_work_mem = '512MB'" "max_parallel_workers_per_gather = 0" \
    "max_parallel_maintenance_workers = 0"

PYTHONPATH="$pydeps" python3 "$ROOT/bench/rekey.py" --dsn "host=$dir port=$port user=postgres" \
    --parents "$parents" --batch-size "$batch" --shapes "$shapes" --methods "$methods" --reps "$reps" --json "$json" &
child=$!
wait "$child"
child=""
# Into the report's section 8 (bench/report.py reads both files).
case $json in "$ROOT"/docs/bench-rekey-shapes.json | "$ROOT"/docs/bench-rekey-flatness.json) report=1 ;; *) report="" ;; esac
if [ -n "$report" ] && [ -f "$ROOT/docs/benchmarks.json" ]; then
    PYTHONPATH="$pydeps" python3 "$ROOT/bench/report.py" "$ROOT/docs/benchmarks.json" "$ROOT/docs" >/dev/null
fi
log "rekey benchmark finished in $(($(date +%s) - started)) s: $json"
