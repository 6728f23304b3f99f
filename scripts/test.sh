#!/usr/bin/env bash
# README command 2: set up, then run every test on each selected PostgreSQL major version.
#   scripts/test.sh           all of 13 14 15 16 17 18 19 (19 in a chroot: docs/testing.md)
#   scripts/test.sh 15        a subset (or PG_OBJECTID_VERSIONS="15 18")
# First the linters (scripts/lint.sh) and the kernel's unit tests. Then, per version, every test
# of that version (scripts/test_version.sh: the server suite, the preloaded generator, the crash
# test, Citus on 16-18, the in-process pgrx tests), PG_OBJECTID_JOBS of them side by side (default
# 2, one per core: while one version compiles, another's tests wait on its server). Last, the
# checks across versions and builds: dump/restore and pg_upgrade (scripts/cross_version.sh, when
# 15, 17 and 18 are selected), replication, the MongoDB recipe, PGXN, and the Debian package.
# Each job's output is printed whole when it ends; docs/testing.md says what each costs.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

mapfile -t versions < <(selected_versions "$@")
"$ROOT/scripts/setup.sh" "${versions[@]}"
cd "$ROOT"

base=${PG_OBJECTID_TEST_DIR:-/tmp/pg_objectid-test}
logs="$base/logs"
rm -rf "$logs"
mkdir -p "$logs"
jobs=${PG_OBJECTID_JOBS:-2}
summary=()
failed=0
failed_jobs=()

log "kernel unit tests"
unit=passed
"$ROOT/scripts/cargo.sh" test || unit=FAILED
# The 0.5.0 -> 0.6.0 update script is generated from sql/rekey/: refuse a stale one.
python3 "$ROOT/scripts/rekey_update_sql.py" --check || unit=FAILED
[ "$unit" = passed ] || failed=1
summary+=("kernel unit tests, update script current: $unit")

# The client-side suites are ordinary programs, the same for every server version: built once
# here, and run as binaries by every job (scripts/common.sh, run_tests).
PG_OBJECTID_SERVER_TESTS=$(test_binary server)
PG_OBJECTID_CITUS_TESTS=$(test_binary citus)
export PG_OBJECTID_SERVER_TESTS PG_OBJECTID_CITUS_TESTS

# Jobs run in the background, at most $jobs at a time, each writing $logs/NAME.log. A job's
# summary is its log's last line, or NAME and its outcome when it printed none.
declare -A job_of_pid=() started_at=()
finish_one() {
    local pid status=0 name
    wait -n -p pid "${!job_of_pid[@]}" || status=$?
    name=${job_of_pid[$pid]}
    unset "job_of_pid[$pid]"
    log "$name: done (exit $status) in $((SECONDS - started_at[$name])) s; its output:"
    cat "$logs/$name.log"
    if [ $status = 0 ]; then
        # The line without the bold of log()'s lines.
        summary+=("$(tail -n 1 "$logs/$name.log" | sed 's/\x1b\[[0-9;]*m//g')")
    else
        failed=1
        failed_jobs+=("$name")
        summary+=("$name: FAILED (exit $status), see above; last line: $(tail -n 1 "$logs/$name.log")")
    fi
}
# job NAME COMMAND...: starts COMMAND as a job, after waiting for a free slot.
job() {
    local name=$1
    shift
    while [ ${#job_of_pid[@]} -ge "$jobs" ]; do finish_one; done
    log "$name: started"
    started_at[$name]=$SECONDS
    "$@" >"$logs/$name.log" 2>&1 &
    job_of_pid[$!]=$name
}
wait_all() {
    while [ ${#job_of_pid[@]} -gt 0 ]; do finish_one; done
}
trap 'kill "${!job_of_pid[@]}" 2>/dev/null || true' EXIT

# The client-library tests (docs/clients.md) test drivers, not servers: once per run, on 17 when
# it is selected, else on the last version selected.
clients_version=${versions[-1]}
printf '%s\n' "${versions[@]}" | grep -qx 17 && clients_version=17
job lint bash "$ROOT/scripts/lint.sh" "${versions[@]}"
for v in "${versions[@]}"; do
    mode=()
    [ "$v" = "$clients_version" ] && mode=(--clients)
    job "pg$v" bash "$ROOT/scripts/test_version.sh" "$v" "${mode[@]}"
done
wait_all

selected() { printf '%s\n' "${versions[@]}" | grep -qx "$1"; }
# labelled WHAT COMMAND...: COMMAND, then WHAT and its outcome as the job's last line.
# shellcheck disable=SC2317  # called through job's "$@", which ShellCheck does not follow
labelled() {
    local what=$1 status=0
    shift
    "$@" || status=$?
    if [ "$status" = 0 ]; then echo "$what: passed"; else echo "$what: FAILED"; fi
    return "$status"
}
# 17 is where the pg_upgrade check falls back to when 15 cannot be upgraded (see the script).
if selected 15 && selected 17 && selected 18; then
    also=()
    selected 16 && also+=(16)
    job cross-version labelled "dump/restore and pg_upgrade to 18" \
        "$ROOT/scripts/cross_version.sh" 15 18 17 "${also[@]}"
fi
# Issue 37: into 19 from 15 (17 where 15's own column options stop pg_upgrade) and from 18.
if selected 15 && selected 17 && selected 18 && selected 19; then
    job cross-version-19 labelled "dump/restore and pg_upgrade to 19 (from 15 or 17, and 18)" \
        "$ROOT/scripts/cross_version.sh" 15 19 17 18
fi
if selected 15 && selected 18; then
    job replication labelled "logical replication 15 -> 18, streaming replication on 18" \
        "$ROOT/scripts/replication_test.sh" 15 18
fi
# Issue 13: the mongoexport recipe of docs/mongodb.md, once, on the newest selected version (its
# SQL function uses the RETURN form of PostgreSQL 14). Every version's build is still installed.
newest=${versions[-1]}
if [ "$newest" -ge 14 ]; then
    job mongodb labelled "mongoexport recipe (docs/mongodb.md) on $newest" \
        "$ROOT/scripts/mongodb_test.sh" "$newest" 55652
fi
# The PGXN release: META.json against the spec (PGXN's validator and scripts/check_meta.py) and
# against the control files built above, and the zip's contents.
job pgxn labelled "PGXN META.json and zip" "$ROOT/scripts/pgxn_test.sh" "${versions[@]}"
wait_all

# Issue 13: the Debian package of 15, installed into Debian's own server with apt-get, used and
# purged again (scripts/package_test.sh). It moves the development build of 15 aside meanwhile (and
# back), so it runs alone, after every other test of that server.
if selected 15; then
    job debian labelled "Debian package on PostgreSQL 15" \
        env PG_OBJECTID_PACKAGE_TEST_DIR="$base/package" "$ROOT/scripts/package_test.sh" 55650
fi
# The same for Debian's 19, in the sid chroot (the script runs itself there).
if selected 19; then
    job debian-19 labelled "Debian package on PostgreSQL 19" \
        env PG_OBJECTID_PACKAGE_TEST_DIR="$base/package-19" "$ROOT/scripts/package_test.sh" 55651 19
fi
wait_all

# A failed job's last lines once more, next to the summary: a reader of a cut log (CI shows its
# beginning and end) then sees why without the whole output. Every log stays in $logs.
for name in "${failed_jobs[@]}"; do
    log "$name FAILED; the last 60 lines of its output ($logs/$name.log):"
    tail -n 60 "$logs/$name.log"
done
log "summary ($((SECONDS / 60)) minutes)"
printf '  %s\n' "${summary[@]}"
exit $failed
