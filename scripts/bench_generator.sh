#!/usr/bin/env bash
# Benchmark of gen_objectid() (and the per-call cost of uuidv7()) on PostgreSQL 15 (a command, not a test): writes
# docs/generator-benchmark.md and prints it.
#   1. Single-row INSERT ... DEFAULT VALUES with pgbench at 1, 2, 4 and 8 clients into
#      (id <key> PRIMARY KEY DEFAULT <generator>, n int), for gen_objectid() in server mode (library
#      preloaded) and in backend mode, gen_random_uuid() and bigserial: tps, and the primary key's
#      pgstatindex avg_leaf_density after the run.
#   2. Server-side cost per call: SELECT count(f()) FROM generate_series(1, N) minus the same loop
#      without the call, best of 3.
# Options (environment): BENCH_SECONDS (default 15) per pgbench run, BENCH_CALLS (default 2000000).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

seconds=${BENCH_SECONDS:-15}
calls=${BENCH_CALLS:-2000000}
"$ROOT/scripts/setup.sh" 15
cfg=$(pg_config_of 15)
bin=$("$cfg" --bindir)
install_extension "$cfg" release

dir=${PG_OBJECTID_BENCH_DIR:-/tmp/pg_objectid-bench}
port=55530
trap 'cluster_stop "$cfg" "$dir"' EXIT
settings=("shared_buffers = '512MB'" "max_wal_size = '4GB'" "synchronous_commit = off" "autovacuum = off")

sql() {
    PGOPTIONS="-c client_min_messages=warning" as_pg_user "$bin/psql" -X -q -A -t -v ON_ERROR_STOP=1 \
        -h "$dir" -p "$port" -U postgres -d bench -c "$1"
}

start() {
    cluster_start "$cfg" "$dir" "$port" "${settings[@]}" "$@"
    as_pg_user "$bin/createdb" -h "$dir" -p "$port" -U postgres bench
    sql "CREATE EXTENSION pg_objectid; CREATE EXTENSION pgstattuple"
}

# insert_run NAME KEY_COLUMN CLIENTS: prints "tps density"
insert_run() {
    local name=$1 key=$2 clients=$3
    sql "DROP TABLE IF EXISTS t; CREATE TABLE t ($key, n int); CHECKPOINT"
    echo "INSERT INTO t DEFAULT VALUES;" >"$dir/insert.sql"
    chmod a+r "$dir/insert.sql"
    local tps
    tps=$(as_pg_user "$bin/pgbench" -n -h "$dir" -p "$port" -U postgres -c "$clients" -j "$clients" \
        -T "$seconds" -f "$dir/insert.sql" bench 2>/dev/null | sed -nE 's/^tps = ([0-9.]+).*/\1/p' | head -1)
    local density
    density=$(sql "SELECT avg_leaf_density FROM pgstatindex('t_pkey')")
    printf '%s %s\n' "$tps" "$density"
    log "$name, $clients clients: $tps tps, leaf density $density %"
}

# per_call EXPR: nanoseconds per call of EXPR, loop overhead subtracted, best of 3
per_call() {
    local expr=$1 best_f="" best_b="" t i
    for i in 1 2 3; do
        t=$(sql "EXPLAIN (ANALYZE, TIMING OFF) SELECT count($expr) FROM generate_series(1, $calls)" |
            sed -nE 's/^Execution Time: ([0-9.]+) ms/\1/p')
        best_f=$(printf '%s\n%s\n' "$t" "${best_f:-$t}" | sort -g | head -1)
        t=$(sql "EXPLAIN (ANALYZE, TIMING OFF) SELECT count(1) FROM generate_series(1, $calls)" |
            sed -nE 's/^Execution Time: ([0-9.]+) ms/\1/p')
        best_b=$(printf '%s\n%s\n' "$t" "${best_b:-$t}" | sort -g | head -1)
    done
    python3 -c "print(round(($best_f - $best_b) * 1e6 / $calls, 1))"
}

declare -A result
candidates=("objectid, server mode" "objectid, backend mode" "uuid, gen_random_uuid()" "bigserial")
for mode in server backend; do
    if [ "$mode" = server ]; then start "shared_preload_libraries = 'pg_objectid'"; else start; fi
    [ "$(sql "SELECT objectid_generator_mode()")" = "$mode" ] || die "expected $mode mode"
    for clients in 1 2 4 8; do
        result["objectid, $mode mode|$clients"]=$(insert_run "objectid ($mode)" \
            "id objectid PRIMARY KEY DEFAULT gen_objectid()" "$clients")
        if [ "$mode" = server ]; then
            result["uuid, gen_random_uuid()|$clients"]=$(insert_run "uuid" \
                "id uuid PRIMARY KEY DEFAULT gen_random_uuid()" "$clients")
            result["bigserial|$clients"]=$(insert_run "bigserial" "id bigserial PRIMARY KEY" "$clients")
        fi
    done
    if [ "$mode" = server ]; then
        ns_objectid=$(per_call "gen_objectid()")
        ns_uuid=$(per_call "gen_random_uuid()")
        ns_uuidv7=$(per_call "public.uuidv7()")
        ns_uuidv4=$(per_call "public.uuidv4()")
        log "per call: gen_objectid() $ns_objectid ns, uuidv7() $ns_uuidv7 ns, gen_random_uuid() $ns_uuid ns"
    fi
    cluster_stop "$cfg" "$dir"
done

report="$ROOT/docs/generator-benchmark.md"
{
    echo "# gen_objectid() benchmark"
    echo
    echo "Made by \`scripts/bench_generator.sh\` on $(date -u +%Y-%m-%d): $(nproc) cores, $("$cfg" --version),"
    echo "release build. Settings: ${settings[*]}; pgbench runs of ${seconds} s, one table per run, checkpoint before."
    echo
    echo "## Single-row inserts"
    echo
    echo "\`INSERT INTO t DEFAULT VALUES\` with pgbench, \`t (id <key> PRIMARY KEY DEFAULT <generator>, n int)\`:"
    echo "transactions per second, and the primary key's \`pgstatindex(...).avg_leaf_density\` (%) after the run."
    echo
    printf '| clients |'
    for c in "${candidates[@]}"; do printf ' %s: tps | leaf density |' "$c"; done
    echo
    printf '|---|'
    for c in "${candidates[@]}"; do printf -- '---|---|'; done
    echo
    min_density=100
    for clients in 1 2 4 8; do
        printf '| %s |' "$clients"
        for c in "${candidates[@]}"; do
            read -r tps density <<<"${result["$c|$clients"]}"
            printf ' %.0f | %.1f |' "$tps" "$density"
        done
        echo
        read -r _ d <<<"${result["objectid, server mode|$clients"]}"
        min_density=$(python3 -c "print(min($min_density, $d))")
    done
    echo
    echo "## Server-side cost per call"
    echo
    echo "\`SELECT count(f()) FROM generate_series(1, $calls)\` minus the same loop without the call, best of 3:"
    echo
    echo "| function | ns per call |"
    echo "|---|---|"
    echo "| gen_objectid() (server mode) | $ns_objectid |"
    echo "| uuidv7() (this extension) | $ns_uuidv7 |"
    echo "| uuidv4() (this extension) | $ns_uuidv4 |"
    echo "| gen_random_uuid() | $ns_uuid |"
    echo
    ratio=$(python3 -c "print(round($ns_objectid / $ns_uuid, 3))")
    ratio7=$(python3 -c "print(round($ns_uuidv7 / $ns_uuid, 3))")
    echo "## Targets"
    echo
    met() { python3 -c "print('met' if $1 else 'not met')"; }
    echo "- Leaf density in server mode >= 88 % at every client count: lowest $min_density % — $(met "$min_density >= 88")."
    echo "- gen_objectid() <= 0.2x the per-call cost of gen_random_uuid(): ${ratio}x — $(met "$ratio <= 0.2")."
    echo "- uuidv7() <= 0.3x the per-call cost of gen_random_uuid(): ${ratio7}x — $(met "$ratio7 <= 0.3")."
} >"$report"
cat "$report"
