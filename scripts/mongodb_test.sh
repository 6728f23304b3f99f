#!/usr/bin/env bash
# mongodb_test.sh VERSION [PORT]: the mongoexport recipe of docs/mongodb.md, run exactly as the
# page writes it, on Extended JSON files that pymongo's bson library writes (tests/mongodb/). The
# extension must already be installed in the server of VERSION (scripts/test.sh does that).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[ $# -ge 1 ] || die "usage: $0 VERSION [PORT]"
v=$1
port=${2:-55650}
pg_config=$(pg_config_of "$v")
[ -f "$("$pg_config" --pkglibdir)/pg_objectid.so" ] ||
    die "pg_objectid is not installed in PostgreSQL $v; scripts/test.sh installs it first"

# pymongo with the pins of the client tests (tests/clients/python), in the same folder.
pydeps=$(clients_python_deps)
pip_target "$ROOT/tests/clients/python/requirements.txt" "$pydeps"

dir=${PG_OBJECTID_TEST_DIR:-/tmp/pg_objectid-test}/mongodb$v
work=$(mktemp -d)
trap 'cluster_stop "$pg_config" "$dir"; rm -rf "$work"' EXIT
log "mongoexport recipe (docs/mongodb.md) on PostgreSQL $v (port $port)"
cluster_start "$pg_config" "$dir" "$port"
PGHOST=$dir PGPORT=$port PGUSER=postgres PYTHONPATH=$pydeps \
    python3 "$ROOT/tests/mongodb/recipe.py" "$ROOT/docs/mongodb.md" "$("$pg_config" --bindir)/psql" "$work"
