# Shared by the scripts in this folder: where things are, and a throwaway PostgreSQL cluster.
# Source it; it defines functions and variables only.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGRX_VERSION=0.18.0
PG15_CONFIG=/usr/lib/postgresql/15/bin/pg_config

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# PostgreSQL will not run as root; as root, run the server's programs as this user instead.
RUN_AS=${PG_OBJECTID_RUN_AS:-postgres}
as_pg_user() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u "$RUN_AS" -- "$@"
    else
        "$@"
    fi
}

# Builds the extension for the server of $1 (a pg_config) and installs it into that server's tree.
install_extension() {
    local pg_config=$1 profile=${2:-release} feature
    feature=pg$("$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
    local args=(--pg-config "$pg_config" --no-default-features --features "$feature")
    [ "$profile" = release ] && args+=(--release)
    # Installing writes into the server's lib and share folders.
    [ "$(id -u)" = 0 ] || args+=(--sudo)
    log "building and installing pg_objectid ($profile) for $("$pg_config" --version)"
    (cd "$ROOT" && cargo pgrx install "${args[@]}")
}

# cluster_start PG_CONFIG DIR PORT [postgresql.conf lines...]
# Creates a fresh cluster in DIR (removed first), listening on PORT and on a socket in DIR only.
cluster_start() {
    local pg_config=$1 dir=$2 port=$3; shift 3
    local bindir
    bindir=$("$pg_config" --bindir)
    cluster_stop "$pg_config" "$dir"
    rm -rf "$dir"
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown "$RUN_AS" "$dir"
    as_pg_user "$bindir/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    {
        echo "port = $port"
        echo "listen_addresses = '127.0.0.1'"
        echo "unix_socket_directories = '$dir'"
        echo "fsync = off"
        echo "max_connections = 60"
        printf '%s\n' "$@"
    } | as_pg_user tee -a "$dir/data/postgresql.conf" >/dev/null
    as_pg_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
        || { cat "$dir/server.log" >&2; die "the server in $dir did not start"; }
}

cluster_stop() {
    local pg_config=$1 dir=$2
    [ -f "$dir/data/postmaster.pid" ] || return 0
    as_pg_user "$("$pg_config" --bindir)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}
