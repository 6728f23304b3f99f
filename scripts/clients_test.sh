#!/usr/bin/env bash
# clients_test.sh VERSION [PORT]: the client adapters of docs/clients.md and the ORM integrations
# of docs/frameworks.md against PostgreSQL VERSION.
#
# Extracts the files marked on the two pages (tests/clients/extract.py), so the tests run exactly
# what users copy, starts a throwaway cluster on 127.0.0.1:PORT (default 55640), and runs, each
# with its packages pinned and installed into the download cache ($CACHE/clients/; a second run
# downloads nothing):
#   Python   tests/clients/python  psycopg 3 + pymongo's bson   (pip install --target)
#   Node.js  tests/clients/node    pg + bson                    (npm ci --prefix, from the lock file)
#   Rust     tests/clients/rust    postgres + bson              (cargo, its own Cargo.lock and target)
#   Django, SQLAlchemy + Alembic   tests/frameworks/{django,sqlalchemy}, integrations/{django,sqlalchemy}
#                                  (the same Python packages folder)
#   Drizzle, Kysely                tests/frameworks/node, integrations/node (npm ci, its own lock file),
#                                  and their TypeScript declarations (tsc --noEmit on types.ts)
# pg_objectid must already be installed in that server (scripts/test.sh installs it first). Runs
# all three even when one fails; exits non-zero if any did.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[[ $# -ge 1 && $# -le 2 ]] || die "usage: $0 VERSION [PORT]"
v=$1 port=${2:-55640}
pg_config=$(pg_config_of "$v")
[ -f "$("$pg_config" --pkglibdir)/pg_objectid.so" ] ||
    die "pg_objectid is not installed in PostgreSQL $v; scripts/test.sh installs it first"
for tool in python3 node npm cargo; do
    command -v "$tool" >/dev/null || die "$tool is missing: run scripts/setup.sh"
done

clients="$ROOT/tests/clients"
deps="$CACHE/clients"
adapters="$deps/adapters"
mkdir -p "$deps"

# Each set of drivers is installed again only when its pins change: the pin file is copied
# beside the installed packages, and compared on the next run.
pins_changed() { ! cmp -s "$1" "$2"; }

python_deps=$(clients_python_deps)
pip_target "$clients/python/requirements.txt" "$python_deps"

# Node.js: exactly the versions of the committed lock file (which names no registry host: npm
# fetches from the one it is configured with, and checks each package's integrity hash).
npm_deps() {
    local from=$1 to=$2
    if pins_changed "$from/package-lock.json" "$to/package-lock.json"; then
        log "installing the Node.js packages of ${from#"$ROOT"/} into $to"
        rm -rf "$to"
        mkdir -p "$to"
        cp "$from/package.json" "$from/package-lock.json" "$to/"
        npm ci --prefix "$to" --no-audit --no-fund --loglevel=error >/dev/null
    fi
}
node_deps="$deps/node"
npm_deps "$clients/node" "$node_deps"
frameworks="$ROOT/tests/frameworks"
frameworks_node_deps="$deps/frameworks-node"
npm_deps "$frameworks/node" "$frameworks_node_deps"

log "extracting the adapters of docs/clients.md into $adapters"
python3 "$clients/extract.py" "$ROOT/docs/clients.md" "$adapters" \
    objectid_psycopg.py objectid_pg.js objectid_postgres.rs >/dev/null
framework_files="$deps/framework-files"
log "extracting the recipes of docs/frameworks.md into $framework_files"
python3 "$clients/extract.py" "$ROOT/docs/frameworks.md" "$framework_files" \
    models.py 0001_initial.py shop_sqlalchemy.py env.py 0001_shop.py drizzle_schema.js \
    kysely_migrations.js >/dev/null
export PG_OBJECTID_FRAMEWORK_FILES="$framework_files"

# Rust: built before the server starts; the first build takes a minute or two, later ones
# only recompile the adapter when the page changes.
export PG_OBJECTID_CLIENT_ADAPTERS="$adapters"
rust_target="$deps/rust-target"
log "building the Rust client test"
(cd "$clients/rust" && CARGO_TARGET_DIR="$rust_target" cargo test --locked --no-run -q)

# The port in the folder's name: cluster_start empties the folder first, which must never be
# another run's cluster.
dir=${PG_OBJECTID_TEST_DIR:-/tmp/pg_objectid-test}/clients$v-$port
trap 'cluster_stop "$pg_config" "$dir"' EXIT
log "client tests on PostgreSQL $v (cluster in $dir, port $port)"
cluster_start "$pg_config" "$dir" "$port"
export PG_OBJECTID_CLIENTS_DSN="host=127.0.0.1 port=$port user=postgres"

status=0
results=()
run() {
    local name=$1 started=$SECONDS
    shift
    log "$name"
    if "$@"; then
        results+=("$(printf '%-40s passed %4ds' "$name" $((SECONDS - started)))")
    else
        results+=("$(printf '%-40s FAILED %4ds' "$name" $((SECONDS - started)))")
        status=1
    fi
}
run "Python: psycopg 3 + bson" env PYTHONPATH="$adapters:$python_deps" PYTHONDONTWRITEBYTECODE=1 \
    python3 "$clients/python/test_objectid_psycopg.py" -v
run "Node.js: pg + bson" env NODE_PATH="$node_deps/node_modules" \
    node --test "$clients/node/objectid_pg.test.js"
# shellcheck disable=SC2016  # $1 and $2 are expanded by the inner bash, which gets them as arguments
run "Rust: postgres + bson" \
    bash -c 'cd "$1" && CARGO_TARGET_DIR="$2" cargo test --locked' _ "$clients/rust" "$rust_target"
integrations="$ROOT/integrations"
run "Django" env PYTHONPATH="$integrations/django:$frameworks:$adapters:$python_deps" PYTHONDONTWRITEBYTECODE=1 \
    python3 "$frameworks/django/test_django.py" -v
run "SQLAlchemy + Alembic" env PYTHONPATH="$integrations/sqlalchemy:$frameworks:$framework_files:$adapters:$python_deps" \
    PYTHONDONTWRITEBYTECODE=1 python3 "$frameworks/sqlalchemy/test_sqlalchemy.py" -v
# NODE_PATH: the pinned packages, the integrations (require('pg-objectid-drizzle')) and the
# page's recipes, which require them.
run "Drizzle + Kysely" env NODE_PATH="$frameworks_node_deps/node_modules:$integrations/node" \
    node --test "$frameworks/node/drizzle.test.js" "$frameworks/node/kysely.test.js"
# The declarations (index.d.ts) as an application's TypeScript sees them: the two packages in a
# node_modules beside the pinned ones, found through their package.json "types".
typecheck="$frameworks_node_deps/typecheck"
rm -rf "$typecheck"
mkdir -p "$typecheck/node_modules"
cp -r "$integrations/node/pg-objectid-drizzle" "$integrations/node/pg-objectid-kysely" "$typecheck/node_modules/"
cp "$frameworks/node/types.ts" "$typecheck/"
cat >"$typecheck/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "strict": true, "noEmit": true, "target": "es2022", "module": "preserve",
    "moduleResolution": "bundler", "skipLibCheck": true, "types": []
  },
  "files": ["types.ts"]
}
JSON
run "TypeScript declarations" node "$frameworks_node_deps/node_modules/typescript/bin/tsc" -p "$typecheck"

if grep -E "terminated by signal|server process .* was terminated" "$dir/server.log" >&2; then
    echo "a server process crashed; see $dir/server.log" >&2
    status=1
fi
log "client tests on PostgreSQL $v"
printf '  %s\n' "${results[@]}"
exit $status
