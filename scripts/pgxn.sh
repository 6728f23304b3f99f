#!/usr/bin/env bash
# Makes the PGXN release of the committed HEAD:
#   scripts/pgxn.sh                 into target/pgxn
#   scripts/pgxn.sh --out DIR       into DIR (or PG_OBJECTID_PGXN_DIR)
# writes DIR/META.json and DIR/pg_objectid-VERSION.zip: `git archive` of HEAD under the folder
# pg_objectid-VERSION/, with that META.json added at its top, as PGXN wants it.
#
# The version is kept in one place, Cargo.toml (pgrx fills the control file's default_version
# from it), so META.json is not committed: META.json.in is, with @CARGO_VERSION@ where the
# version goes, and this script fills it in from HEAD's Cargo.toml, the one in the archive.
# @RELEASE_STATUS@ becomes "testing" for a SemVer pre-release (0.5.0-rc.1), else "stable".
# The result is checked with scripts/check_meta.py before anything is written.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

out=${PG_OBJECTID_PGXN_DIR:-$ROOT/target/pgxn}
while [ $# -gt 0 ]; do
    case $1 in
        --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
        --out=*) out=${1#--out=}; shift ;;
        *) die "usage: $0 [--out DIR]" ;;
    esac
done

cd "$ROOT"
git rev-parse --verify -q HEAD >/dev/null || die "no commit to archive"
# PGXN takes META.json from the archive's top folder; a committed one would be a second copy.
! git cat-file -e HEAD:META.json 2>/dev/null || die "META.json is committed; it is generated from META.json.in: remove it"
git cat-file -e HEAD:META.json.in 2>/dev/null || die "no META.json.in in HEAD"

version=$(git show HEAD:Cargo.toml | cargo_version)
worktree_version=$(cargo_version <Cargo.toml)
# The archive is HEAD, so its version is HEAD's; a different one in the work tree is a bump not
# yet committed, and the release would not be the one meant.
[ "$version" = "$worktree_version" ] ||
    die "Cargo.toml says $worktree_version but HEAD has $version: commit the version first"
changed=$(git status --porcelain --untracked-files=no)
[ -z "$changed" ] || log "warning: uncommitted changes are not in the archive (it is HEAD):"$'\n'"$changed"

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/pg_objectid-pgxn.XXXXXX)
trap 'rm -rf "$work"' EXIT

# From HEAD, like the zip and the version: an uncommitted edit of the template must not ship.
git show HEAD:META.json.in >"$work/META.json.in"
python3 - "$work/META.json.in" "$version" >"$work/META.json" <<'PY'
import json, re, sys

template, version = sys.argv[1], sys.argv[2]
text = open(template).read()
# A SemVer pre-release has a "-" before any "+build" part.
status = "testing" if "-" in version.split("+")[0] else "stable"
text = text.replace("@CARGO_VERSION@", version).replace("@RELEASE_STATUS@", status)
left = re.findall(r"@[A-Z_]+@", text)
if left:
    sys.exit(f"{template}: unknown placeholders {sorted(set(left))}")
json.loads(text)
sys.stdout.write(text)
PY
python3 scripts/check_meta.py "$work/META.json" --cargo-toml <(git show HEAD:Cargo.toml) >/dev/null

# Timestamps from the commit, as git archive gives its other entries, so the same commit makes
# the same archive.
touch -d "@$(git log -1 --format=%ct HEAD)" "$work/META.json"
zip="$out/pg_objectid-$version.zip"
rm -f "$zip"
git archive --format=zip --prefix="pg_objectid-$version/" --add-file="$work/META.json" -o "$zip" HEAD
cp -p "$work/META.json" "$out/META.json"
log "wrote $out/META.json and $zip ($(du -k "$zip" | cut -f1) KiB) from commit $(git rev-parse --short=12 HEAD)"
printf '%s\n' "$out/META.json" "$zip"
