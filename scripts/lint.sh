#!/usr/bin/env bash
# The linters (issue 20), each of which must be clean:
#   rustfmt     cargo fmt --all --check
#   clippy      cargo clippy --all-targets -- -D warnings, once per selected PostgreSQL version
#               (with the pg_test feature, so that pgrx-tests/ is linted too)
#   ShellCheck  every *.sh of the repository and .ci/run (.shellcheckrc)
#   ruff        ruff check on every Python file of the repository (ruff.toml)
# Usage:
#   scripts/lint.sh           clippy on all of 13 14 15 16 17 18
#   scripts/lint.sh 15        a subset (or PG_OBJECTID_VERSIONS="15 18")
# It runs every linter even after one fails, then names those that failed and exits non-zero if
# any did. It installs nothing: scripts/setup.sh installs ShellCheck, the pinned ruff
# (scripts/lint-requirements.txt) and the servers that clippy builds pgrx against.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

mapfile -t versions < <(selected_versions "$@")
cd "$ROOT"

failed=()
# lint NAME COMMAND...: runs one linter, and notes NAME if it fails.
lint() {
    local name=$1
    shift
    log "$name: $*"
    "$@" || failed+=("$name")
}
# missing NAME WHAT: notes NAME as failed, as its tool is not installed.
missing() {
    echo "error: $2 is missing: run scripts/setup.sh" >&2
    failed+=("$1")
}

lint rustfmt cargo fmt --all --check

for v in "${versions[@]}"; do
    if [ "$v" = 19 ]; then
        # 19's headers and rustc are the chroot's (sid.sh), and so is its target folder.
        # shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
        lint "clippy on PostgreSQL 19" env CARGO_TARGET_DIR="$ROOT/target/sid" bash -c \
            'source "$1/scripts/common.sh" && cd "$1" && in_sid cargo clippy --all-targets \
                --no-default-features --features "pg19 pg_test" -- -D warnings' _ "$ROOT"
    else
        lint "clippy on PostgreSQL $v" "$ROOT/scripts/cargo.sh" clippy --all-targets --no-default-features \
            --features "pg$v pg_test" -- -D warnings
    fi
done

# Every shell script, tracked or not, outside the build output and installed Node.js packages.
mapfile -t shell_scripts < <(find . \( -path ./target -o -path ./.git -o -name node_modules \) -prune \
    -o -type f -name '*.sh' -print | LC_ALL=C sort)
if command -v shellcheck >/dev/null; then
    lint shellcheck shellcheck --external-sources "${shell_scripts[@]}" .ci/run
else
    missing shellcheck ShellCheck
fi

# The pinned ruff, as scripts/setup.sh installed it for the pins of today's checkout. It checks
# every Python file that is not ignored by .gitignore, and leaves no cache in the tree.
ruff_dir=$(lint_python_deps)
if [ -x "$ruff_dir/bin/ruff" ] && cmp -s scripts/lint-requirements.txt "$ruff_dir/requirements.txt"; then
    lint ruff "$ruff_dir/bin/ruff" check --no-cache .
else
    missing ruff "the ruff of scripts/lint-requirements.txt"
fi

if [ ${#failed[@]} -gt 0 ]; then
    log "lint: FAILED: $(printf '%s, ' "${failed[@]}" | sed 's/, $//')"
    exit 1
fi
log "lint: all clean (rustfmt, clippy on PostgreSQL ${versions[*]}, shellcheck, ruff)"
