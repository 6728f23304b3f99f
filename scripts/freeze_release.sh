#!/usr/bin/env bash
# Freezes the install script of the version in Cargo.toml into sql/releases/VERSION/, the first
# step of the next release (docs/releasing.md): the update tests then install it, run
# ALTER EXTENSION ... UPDATE and compare the objects with a fresh install.
#   scripts/freeze_release.sh [PG_CONFIG]    a server of 14 or later (default: 18's)
# It builds and installs the extension for that server, takes the install script pgrx wrote there
# and stores it as the diff from the newest frozen release with the whole script's checksum, so
# that sql/releases/ grows by the size of each release's changes, not by a copy of the script
# (or whole, when the diff would be longer).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

pg_config=${1:-$(pg_config_of 18)}
[ "$(major_of "$pg_config")" -ge 14 ] ||
    die "freeze from a server of 14 or later: 13's script lacks the minmax-multi and bloom classes"
version=$(sed -nE 's/^version = "([^"]+)"$/\1/p' "$ROOT/Cargo.toml" | head -1)
dir="$ROOT/sql/releases/$version"
[ -e "$dir" ] && die "$dir exists: $version is frozen already"
mapfile -t frozen < <(release_versions)
[ ${#frozen[@]} -gt 0 ] || die "sql/releases/ holds no release to diff from"
previous=${frozen[-1]}

install_extension "$pg_config" release
script="$("$pg_config" --sharedir)/extension/pg_objectid--$version.sql"
[ -f "$script" ] || die "the install did not write $script"
# PostgreSQL reads a script in the database's encoding: a byte above 127 breaks CREATE EXTENSION
# in EUC_JP or LATIN1 databases (tests/server/extension.rs installs every release in them).
if LC_ALL=C grep -n '[^[:print:][:space:]]' "$script" | head -3 | grep .; then
    die "$script has bytes outside ASCII (above): write comments in ASCII"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
release_script "$previous" >"$work/previous.sql"
mkdir -p "$dir"
# diff exits 1 when the files differ, which they must.
status=0
diff -u --label "pg_objectid--$previous.sql" --label "pg_objectid--$version.sql" \
    "$work/previous.sql" "$script" >"$dir/pg_objectid--$version.sql.diff" || status=$?
[ $status = 1 ] || { rm -rf "$dir"; die "diff of $previous and $version's scripts failed or found them equal"; }
stored="$(wc -l <"$dir/pg_objectid--$version.sql.diff") lines of diff from $previous"
# A release that rewrote most of the script is kept whole, as a new base for the diffs after it.
if [ "$(wc -l <"$dir/pg_objectid--$version.sql.diff")" -gt "$(wc -l <"$script")" ]; then
    rm "$dir/pg_objectid--$version.sql.diff"
    cp "$script" "$dir/pg_objectid--$version.sql"
    stored="whole: the diff from $previous was longer than the script"
fi
cp "$script" "$work/pg_objectid--$version.sql"
(cd "$work" && sha256sum "pg_objectid--$version.sql") >"$dir/pg_objectid--$version.sql.sha256"
cmp -s <(release_script "$version") "$script" || { rm -rf "$dir"; die "sql/releases/ does not rebuild $script"; }
log "froze $version in $dir ($stored)"
