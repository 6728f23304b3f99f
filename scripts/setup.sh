#!/usr/bin/env bash
# Installs what building and testing pg_objectid needs on Debian 12, skipping whatever is already
# there: Debian packages, cargo-pgrx of the pinned version, and pgrx's registration of the
# system PostgreSQL 15.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)

packages=(postgresql-15 postgresql-server-dev-15 postgresql-contrib libclang-dev clang sudo)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    "${SUDO[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# pgrx 0.19 needs a newer rustc than this toolchain; the crate and the tool must match exactly.
if ! cargo pgrx --version 2>/dev/null | grep -qx "cargo-pgrx $PGRX_VERSION"; then
    log "installing cargo-pgrx $PGRX_VERSION (takes 12-18 minutes)"
    cargo install --locked cargo-pgrx --version "$PGRX_VERSION"
fi

pgrx_config="${PGRX_HOME:-$HOME/.pgrx}/config.toml"
if ! grep -qs "^pg15 = \"$PG15_CONFIG\"" "$pgrx_config"; then
    log "registering PostgreSQL 15 with pgrx"
    cargo pgrx init --pg15 "$PG15_CONFIG"
fi
