#!/usr/bin/env bash
# Tests the PGXN release that scripts/pgxn.sh makes:
#   scripts/pgxn_test.sh                  against the control file installed in each server present
#   scripts/pgxn_test.sh 15 18            ... in these servers (or PG_OBJECTID_VERSIONS="15 18")
#   scripts/pgxn_test.sh --control FILE   against a built pg_objectid.control (repeatable)
# META.json's versions must equal Cargo.toml's and the default_version of those built control
# files (scripts/test.sh builds and installs the extension in each server before it runs this).
# Checks META.json with two validators that share no code: PGXN's own, the pgxn_meta crate
# (the spec's JSON schemas; installed once into the download cache), and scripts/check_meta.py
# (the spec's rules, standard-library Python, plus this project's version rules). Then the zip:
# one folder pg_objectid-VERSION holding HEAD's files and that META.json. Last, broken copies of
# META.json, which each validator must reject, so that a validator that passes everything fails
# the test.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PGXN_META_VERSION=0.7.0
fail() { die "PGXN test: $*"; }

controls=()
versions=()
while [ $# -gt 0 ]; do
    case $1 in
        --control) [ $# -ge 2 ] || die "--control needs a file"; controls+=("$2"); shift 2 ;;
        [0-9]*) versions+=("$1"); shift ;;
        *) die "usage: $0 [VERSION...] [--control FILE]..." ;;
    esac
done
control_of() { echo "$("$(pg_config_of "$1")" --sharedir)/extension/pg_objectid.control"; }
if [ ${#versions[@]} -gt 0 ] || { [ ${#controls[@]} = 0 ] && [ -n "${PG_OBJECTID_VERSIONS:-}" ]; }; then
    # Versions asked for must have a build installed.
    mapfile -t versions < <(selected_versions "${versions[@]}")
    for v in "${versions[@]}"; do
        [ -x "$(pg_config_of "$v")" ] || fail "PostgreSQL $v is not present"
        [ -f "$(control_of "$v")" ] || fail "no pg_objectid.control in PostgreSQL $v: install the extension first"
        controls+=("$(control_of "$v")")
    done
elif [ ${#controls[@]} = 0 ]; then
    for v in "${ALL_VERSIONS[@]}"; do
        [ -x "$(pg_config_of "$v")" ] && [ -f "$(control_of "$v")" ] && controls+=("$(control_of "$v")")
    done
fi
[ ${#controls[@]} -gt 0 ] ||
    fail "no built pg_objectid.control: install the extension first (scripts/test.sh does), or name one with --control"
for c in "${controls[@]}"; do [ -f "$c" ] || fail "no control file $c"; done

# PGXN's validator, built once into the cache like the downloaded servers; a second run does no
# work. Its own target folder is thrown away: only the binary is kept.
validator_root="$CACHE/pgxn_meta-$PGXN_META_VERSION"
validator="$validator_root/bin/pgxn_meta"
if ! "$validator" --version 2>/dev/null | grep -q " $PGXN_META_VERSION\$"; then
    log "installing pgxn_meta $PGXN_META_VERSION, PGXN's META.json validator, into $validator_root (1-2 minutes, once)"
    mkdir -p "$CACHE"
    target=$(mktemp -d /tmp/pg_objectid-pgxn_meta.XXXXXX)
    cargo install --quiet --locked --root "$validator_root" --target-dir "$target" pgxn_meta \
        --version "$PGXN_META_VERSION" || { rm -rf "$target"; fail "could not install pgxn_meta"; }
    rm -rf "$target" "$validator_root/.crates.toml" "$validator_root/.crates2.json"
fi

work=$(mktemp -d /tmp/pg_objectid-pgxn-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$ROOT/scripts/pgxn.sh" --out "$work/out" >/dev/null
meta="$work/out/META.json"
version=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$meta")
zip="$work/out/pg_objectid-$version.zip"
[ -f "$zip" ] || fail "pgxn.sh made no $(basename "$zip")"

log "META.json: PGXN's validator (pgxn_meta $PGXN_META_VERSION)"
"$validator" "$meta" || fail "pgxn_meta rejects META.json"
log "META.json: scripts/check_meta.py, against Cargo.toml and ${#controls[@]} built control file(s)"
control_args=()
for c in "${controls[@]}"; do control_args+=(--control "$c"); done
python3 "$ROOT/scripts/check_meta.py" "$meta" --cargo-toml "$ROOT/Cargo.toml" "${control_args[@]}" ||
    fail "check_meta.py rejects META.json"

log "the zip: HEAD's files and META.json under pg_objectid-$version/"
mkdir "$work/unzipped"
(cd "$work/unzipped" && unzip -q "$zip")
[ "$(ls -A "$work/unzipped")" = "pg_objectid-$version" ] ||
    fail "the zip's top level is '$(find "$work/unzipped" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ')', not pg_objectid-$version alone"
dist="$work/unzipped/pg_objectid-$version"
cmp -s "$dist/META.json" "$meta" || fail "the zip's META.json is not the generated one"
{ git -C "$ROOT" ls-tree -r --name-only HEAD; echo META.json; } | LC_ALL=C sort >"$work/expected.list"
(cd "$dist" && find . \( -type f -o -type l \) -printf '%P\n' | LC_ALL=C sort) >"$work/zip.list"
diff -u "$work/expected.list" "$work/zip.list" || fail "the zip's files are not HEAD's files and META.json"
# Each file as committed (HEAD's blob), not as it is in the work tree.
while read -r f; do
    [ "$f" = META.json ] && continue
    [ "$(git -C "$ROOT" rev-parse "HEAD:$f")" = "$(git hash-object "$dist/$f")" ] || fail "$f in the zip is not HEAD's"
done <"$work/zip.list"
# The version inside the zip is its own Cargo.toml's, and provides names files that are there.
python3 "$ROOT/scripts/check_meta.py" "$dist/META.json" --cargo-toml "$dist/Cargo.toml" --dist "$dist" >/dev/null ||
    fail "the zip's META.json does not match the zip's Cargo.toml or files"

log "broken copies of META.json, which must be rejected"
# spec: breaks the spec, both validators must reject it; project: valid by the spec but not this
# project's version, which check_meta.py must reject and pgxn_meta accept.
python3 - "$meta" "$work/broken" <<'PY'
import copy, json, os, sys

meta = json.load(open(sys.argv[1]))
out = sys.argv[2]
os.makedirs(out)
ext = "pg_objectid"

def missing_version(m): del m["version"]
def bad_semver(m): m["version"] = "0.4"
def unknown_license(m): m["license"] = "postgres"
def provides_without_file(m): del m["provides"][ext]["file"]
def provides_path_outside(m): m["provides"][ext]["file"] = "../pg_objectid.control"
def unknown_key(m): m["homepage"] = "x"
def name_with_space(m): m["name"] = "pg objectid"
def tag_with_slash(m): m["tags"].append("a/b")
def prereq_not_semver(m): m["prereqs"]["runtime"]["requires"]["PostgreSQL"] = "13"
def bad_release_status(m): m["release_status"] = "final"
def missing_meta_spec(m): del m["meta-spec"]
def version_not_cargo(m):
    m["version"] = "9.9.9"
    m["provides"][ext]["version"] = "9.9.9"
def extension_version_not_control(m): m["provides"][ext]["version"] = "0.0.1"

for kind, f in [
    ("spec", missing_version), ("spec", bad_semver), ("spec", unknown_license),
    ("spec", provides_without_file), ("spec", provides_path_outside), ("spec", unknown_key),
    ("spec", name_with_space), ("spec", tag_with_slash), ("spec", prereq_not_semver),
    ("spec", bad_release_status), ("spec", missing_meta_spec),
    ("project", version_not_cargo), ("project", extension_version_not_control),
]:
    m = copy.deepcopy(meta)
    f(m)
    assert m != meta, f.__name__
    name = f.__name__.replace("_", "-")
    json.dump(m, open(os.path.join(out, f"{kind}.{name}.json"), "w"), indent=2)
PY
checked=0
for broken in "$work"/broken/*.json; do
    name=$(basename "$broken" .json)
    "$validator" "$broken" >/dev/null 2>&1 && by_pgxn=accepts || by_pgxn=rejects
    python3 "$ROOT/scripts/check_meta.py" "$broken" --cargo-toml "$ROOT/Cargo.toml" "${control_args[@]}" \
        >/dev/null 2>&1 && by_ours=accepts || by_ours=rejects
    case $name in
        spec.*) want_pgxn=rejects ;;
        *) want_pgxn=accepts ;;
    esac
    [ "$by_pgxn" = "$want_pgxn" ] || fail "pgxn_meta $by_pgxn the broken copy ${name#*.} (expected: $want_pgxn)"
    [ "$by_ours" = rejects ] || fail "check_meta.py accepts the broken copy ${name#*.}"
    checked=$((checked + 1))
done
[ "$checked" -ge 13 ] || fail "only $checked broken copies were checked"
log "PGXN test passed: META.json $version valid, the zip complete, $checked broken copies rejected"
