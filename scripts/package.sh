#!/usr/bin/env bash
# Builds installable Debian packages of pg_objectid, one per PostgreSQL major version, named and
# laid out the way Debian packages its own PostgreSQL extensions (postgresql-15-repack, ...):
#   scripts/package.sh                   every version whose server is present here
#   scripts/package.sh 15 18             those versions (or PG_OBJECTID_VERSIONS="15 18")
#   scripts/package.sh --out DIR 15      into DIR instead of target/debian (or PG_OBJECTID_DEB_DIR)
# Each package, postgresql-N-objectid_VERSION-REVISION_ARCH.deb, holds
#   /usr/lib/postgresql/N/lib/pg_objectid.so
#   /usr/share/postgresql/N/extension/pg_objectid.control, pg_objectid--VERSION.sql and every
#     upgrade script sql/pg_objectid--A--B.sql, so ALTER EXTENSION pg_objectid UPDATE works
#     after upgrading the package
#   /usr/share/doc/postgresql-N-objectid/copyright, changelog.Debian.gz and the license files
#     of the Rust crates linked in (rust-crate-licenses.gz)
# whatever tree the build used: the servers downloaded from PyPI have other prefixes, and their
# files are moved into Debian's layout. VERSION is Cargo.toml's; REVISION is
# PG_OBJECTID_DEB_REVISION (default 1). Maintainer is META.json.in's first maintainer unless
# PG_OBJECTID_MAINTAINER is set. Needs cargo-pgrx (scripts/setup.sh) and dpkg-dev; lintian, when
# installed, checks every package and any error it reports fails the build.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

out=${PG_OBJECTID_DEB_DIR:-$ROOT/target/debian}
args=()
while [ $# -gt 0 ]; do
    case $1 in
        --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
        --out=*) out=${1#--out=}; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option: $1" ;;
        *) args+=("$1"); shift ;;
    esac
done

for tool in dpkg-deb dpkg-shlibdeps strip python3 git; do
    command -v "$tool" >/dev/null || die "$tool is missing (Debian packages dpkg-dev, binutils, python3, git)"
done
cargo pgrx --version 2>/dev/null | grep -qx "cargo-pgrx $PGRX_VERSION" ||
    die "cargo-pgrx $PGRX_VERSION is missing: run scripts/setup.sh first"

# Versions asked for by name must be present; by default, every server present is packaged.
versions=()
if [ ${#args[@]} -gt 0 ] || [ -n "${PG_OBJECTID_VERSIONS:-}" ]; then
    mapfile -t versions < <(selected_versions "${args[@]}")
    for v in "${versions[@]}"; do
        [ -x "$(pg_config_of "$v")" ] || die "PostgreSQL $v is not present ($(pg_config_of "$v")): run scripts/setup.sh $v"
    done
else
    for v in "${ALL_VERSIONS[@]}"; do
        [ -x "$(pg_config_of "$v")" ] && versions+=("$v")
    done
    [ ${#versions[@]} -gt 0 ] || die "no PostgreSQL server is present: run scripts/setup.sh"
fi

# Cargo.toml is the one place the version is kept; pgrx writes it into the control file too.
version=$(cargo_version <"$ROOT/Cargo.toml")
# A SemVer pre-release (0.5.0-rc.1) sorts before its release; in Debian's ordering only "~" does.
deb_version="${version/-/\~}-${PG_OBJECTID_DEB_REVISION:-1}"
arch=$(dpkg --print-architecture)
maintainer=${PG_OBJECTID_MAINTAINER:-$(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["maintainer"]
print(m if isinstance(m, str) else m[0])' "$ROOT/META.json.in")}
# The extension's own one-line description, short enough for a Debian synopsis (under 80).
synopsis=$(sed -n "s/^comment = '\(.*\)'$/\1/p" "$ROOT/pg_objectid.control")
[ -n "$synopsis" ] || die "pg_objectid.control has no comment"
# Timestamps inside the packages come from the last commit, not the clock, so that two builds of
# a commit differ only where the build does (pgrx orders the independent blocks of the install
# script differently from run to run). dpkg-deb reads SOURCE_DATE_EPOCH for its own headers.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct)}
# sed, not head: head would close the pipe early, and git's SIGPIPE would fail the pipeline.
first_year=$(git -C "$ROOT" log --reverse --format=%cd --date=format:%Y | sed -n 1p)
last_year=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y)
years=$first_year
[ "$first_year" = "$last_year" ] || years="$first_year-$last_year"

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/pg_objectid-package.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The upgrade scripts in the source tree: each must be in every package.
mapfile -t upgrade_scripts < <(find "$ROOT/sql" -maxdepth 1 -name 'pg_objectid--*--*.sql' -printf '%f\n' | sort)

# Writes DOC/copyright (Debian's machine-readable format: pg_objectid under the PostgreSQL
# License, and the list of Rust crates that pg_objectid.so links statically, with the licenses
# they declare) and DOC/rust-crate-licenses.gz: the license files each of those crates ships,
# since MIT and BSD licenses ask for their notices to travel with binaries.
write_copyright() {
    local v=$1 doc=$2
    (cd "$ROOT" && cargo tree --locked -e normal,no-proc-macro --no-default-features --features "pg$v" \
        --prefix none -f '{p}|{l}') >"$work/crates-pg$v.txt"
    (cd "$ROOT" && cargo metadata --locked --format-version 1) >"$work/metadata-pg$v.json"
    python3 - "$work/crates-pg$v.txt" "$work/metadata-pg$v.json" "$years" "$doc" <<'PY'
import json, os, sys

crates_file, metadata_file, years, doc = sys.argv[1:]
crates = set()
for line in open(crates_file):
    line = line.strip().removesuffix(" (*)")
    if not line or line.startswith("pg_objectid "):
        continue
    # "name vVERSION[ (path)]|license expression"
    package, _, license = line.partition("|")
    name, version = package.split()[:2]
    crates.add((name, version.removeprefix("v"), license or "not declared"))
dirs = {(p["name"], p["version"]): os.path.dirname(p["manifest_path"])
        for p in json.load(open(metadata_file))["packages"]}

with open(os.path.join(doc, "rust-crate-licenses"), "w") as out:
    for name, version, license in sorted(crates):
        crate_dir = dirs[(name, version)]
        files = sorted(f for f in os.listdir(crate_dir)
                       if f.upper().startswith(("LICENSE", "LICENCE", "COPYING", "UNLICENSE", "NOTICE"))
                       and os.path.isfile(os.path.join(crate_dir, f)))
        out.write(f"{'=' * 78}\n{name} {version}: {license}\n")
        if not files:
            out.write("(the crate ships no license file)\n")
        for f in files:
            out.write(f"{'-' * 78}\n{f}\n\n{open(os.path.join(crate_dir, f), errors='replace').read().rstrip()}\n")

with open(os.path.join(doc, "copyright"), "w") as out:
    out.write("""Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: pg_objectid
Comment: pg_objectid.so links these Rust crates statically, each under the
 license its authors declare (crate version: license):
""")
    for name, version, license in sorted(crates):
        out.write(f" {name} {version}: {license}\n")
    out.write(f""" The license files these crates ship are in rust-crate-licenses.gz beside
 this file.

Files: *
Copyright: {years} The pg_objectid authors
License: PostgreSQL

License: PostgreSQL
 Permission to use, copy, modify, and distribute this software and its
 documentation for any purpose, without fee, and without a written agreement
 is hereby granted, provided that the above copyright notice and this
 paragraph and the following two paragraphs appear in all copies.
 .
 IN NO EVENT SHALL THE PG_OBJECTID AUTHORS BE LIABLE TO ANY PARTY FOR DIRECT,
 INDIRECT, SPECIAL, INCIDENTAL, OR CONSEQUENTIAL DAMAGES, INCLUDING LOST
 PROFITS, ARISING OUT OF THE USE OF THIS SOFTWARE AND ITS DOCUMENTATION, EVEN
 IF THE PG_OBJECTID AUTHORS HAVE BEEN ADVISED OF THE POSSIBILITY OF SUCH
 DAMAGE.
 .
 THE PG_OBJECTID AUTHORS SPECIFICALLY DISCLAIM ANY WARRANTIES, INCLUDING, BUT
 NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A
 PARTICULAR PURPOSE. THE SOFTWARE PROVIDED HEREUNDER IS ON AN "AS IS" BASIS,
 AND THE PG_OBJECTID AUTHORS HAVE NO OBLIGATIONS TO PROVIDE MAINTENANCE,
 SUPPORT, UPDATES, ENHANCEMENTS, OR MODIFICATIONS.
""")
PY
    gzip -9n "$doc/rust-crate-licenses"
    chmod 0644 "$doc/copyright" "$doc/rust-crate-licenses.gz"
}

# Installed-Size as dpkg-gencontrol computes it: KiB per regular file, rounded up, plus one per
# directory or other entry.
installed_size() {
    find "$1" -mindepth 1 -path "$1/DEBIAN" -prune -o \( -type f -printf '%s\n' \) -o \( ! -type f -printf 'x\n' \) |
        awk '$1 == "x" { n += 1; next } { n += int(($1 + 1023) / 1024) } END { print n }'
}

built=()
made_in_sid=()
for v in "${versions[@]}"; do
    if [ "$v" = 19 ] && ! inside_sid; then
        # Debian's 19 is the sid chroot's (sid.sh): built and linted there, against its libraries.
        in_sid bash "${BASH_SOURCE[0]}" --out "$out" 19 >&2
        made_in_sid+=("$out/postgresql-19-objectid_${deb_version}_$arch.deb")
        continue
    fi
    pg_config=$(pg_config_of "$v")
    [ "$(major_of "$pg_config")" = "$v" ] || die "$pg_config is not PostgreSQL $v"
    package="postgresql-$v-objectid"
    deb="$out/${package}_${deb_version}_${arch}.deb"

    # cargo pgrx package writes the files under the server's own prefixes inside --out-dir; it
    # reads the server's headers and installs nothing.
    log "building pg_objectid $version (release) for $("$pg_config" --version)"
    build="$work/build-pg$v"
    started=$SECONDS
    (cd "$ROOT" && "$ROOT/scripts/cargo.sh" pgrx package --pg-config "$pg_config" --no-default-features --features "pg$v" \
        --out-dir "$build")
    log "release build for PostgreSQL $v took $((SECONDS - started)) s"
    built_lib="$build$("$pg_config" --pkglibdir)/pg_objectid.so"
    built_ext="$build$("$pg_config" --sharedir)/extension"
    [ -f "$built_lib" ] || die "cargo pgrx package made no $built_lib"
    [ -f "$built_ext/pg_objectid.control" ] || die "cargo pgrx package made no $built_ext/pg_objectid.control"

    # The layout dpkg-shlibdeps expects: debian/control naming the package, whose files are staged
    # in debian/PACKAGE.
    src="$work/src-pg$v"
    root="$src/debian/$package"
    lib="$root/usr/lib/postgresql/$v/lib"
    ext="$root/usr/share/postgresql/$v/extension"
    doc="$root/usr/share/doc/$package"
    mkdir -p "$lib" "$ext" "$doc" "$root/DEBIAN"
    install -m 0644 "$built_lib" "$lib/pg_objectid.so"
    # As dh_strip does: the debugging symbols would triple the size; the dynamic symbols that
    # PostgreSQL looks the functions up by stay.
    strip --remove-section=.comment --remove-section=.note --strip-unneeded "$lib/pg_objectid.so"
    for f in "$built_ext"/pg_objectid*; do
        install -m 0644 "$f" "$ext/"
    done

    # What makes the package useful, checked before it is made: the install script of this
    # version, the control file pointing at it, and every upgrade script of the source tree.
    default_version=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$ext/pg_objectid.control")
    [ "$default_version" = "$version" ] ||
        die "the built control file's default_version is '$default_version', Cargo.toml's version is '$version'"
    [ -f "$ext/pg_objectid--$version.sql" ] || die "no install script pg_objectid--$version.sql was built"
    for s in "${upgrade_scripts[@]}"; do
        cmp -s "$ROOT/sql/$s" "$ext/$s" || die "the upgrade script $s is missing from the package or differs from sql/$s"
    done
    for f in "$ext"/*; do
        f=$(basename "$f")
        case " pg_objectid.control pg_objectid--$version.sql ${upgrade_scripts[*]} " in
            *" $f "*) ;;
            *) die "cargo pgrx package made a file that is not the control file, the install script or an upgrade script of sql/: $f" ;;
        esac
    done

    write_copyright "$v" "$doc"
    # Debian's changelog format; -n keeps gzip's timestamp out, as lintian asks.
    {
        echo "$package ($deb_version) unstable; urgency=medium"
        echo
        echo "  * pg_objectid $version built for PostgreSQL $v with pgrx $PGRX_VERSION,"
        echo "    from commit $(git -C "$ROOT" rev-parse --short=12 HEAD)."
        echo
        echo " -- $maintainer  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
    } | gzip -9n >"$doc/changelog.Debian.gz"
    chmod 0644 "$doc/changelog.Debian.gz"

    # The shared libraries the .so needs (libc6, libgcc-s1), with the minimum versions of the
    # symbols it uses, from the installed libraries' symbols files, as dh_shlibdeps finds them.
    # Warning bit 1 (a symbol found in no library) is off: PostgreSQL's own functions, which
    # the library calls, are in the server executable that loads it, not in a library.
    printf 'Source: pg-objectid\n\nPackage: %s\nArchitecture: any\n' "$package" >"$src/debian/control"
    shlibs=$(cd "$src" && dpkg-shlibdeps --warnings=6 -O "$lib/pg_objectid.so" |
        sed -n 's/^shlibs:Depends=//p')
    [ -n "$shlibs" ] || die "dpkg-shlibdeps found no library dependency for $lib/pg_objectid.so"

    (cd "$root" && find usr -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
    find "$root" -type d -exec chmod 0755 {} +
    chmod 0644 "$root/DEBIAN/md5sums"
    cat >"$root/DEBIAN/control" <<EOF
Package: $package
Version: $deb_version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(installed_size "$root")
Depends: postgresql-$v, $shlibs
Section: database
Priority: optional
Description: $synopsis
 pg_objectid adds a 12-byte objectid type to PostgreSQL: MongoDB's ObjectId
 with its BSON layout, its operators, casts and aggregates, btree, hash and
 BRIN operator classes, the gen_objectid() generator and creation-time
 functions, and PostgreSQL 18's UUID functions (uuidv7() and
 uuid_extract_timestamp()) on every server version.
 .
 This package is built for PostgreSQL $v. CREATE EXTENSION pg_objectid
 enables it in a database; the extension is trusted, so any user with the
 CREATE privilege on the database may create it. After an upgrade of this
 package, ALTER EXTENSION pg_objectid UPDATE updates the databases that have
 it.
EOF
    chmod 0644 "$root/DEBIAN/control"
    find "$root" -exec touch --no-dereference -d "@$SOURCE_DATE_EPOCH" {} +

    rm -f "$deb"
    dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
    log "built $deb ($(du -k "$deb" | cut -f1) KiB; installs $(installed_size "$root") KiB)"
    built+=("$deb")
    rm -rf "$build"
done

if [ ${#built[@]} = 0 ]; then
    :
elif command -v lintian >/dev/null; then
    log "lintian"
    # Errors fail the build; warnings and notes are printed for the reader. Suppressed:
    # initial-upload-closes-no-bugs, which asks a first upload to Debian's archive to close its
    # "intent to package" bug: these packages are not uploaded there.
    lint=(lintian --fail-on error --display-info --suppress-tags initial-upload-closes-no-bugs "${built[@]}")
    # lintian advises against running as root: as root, run it as the servers' user when that
    # user can read the packages.
    if [ "$(id -u)" = 0 ] && id "$RUN_AS" >/dev/null 2>&1 &&
        (cd / && runuser -u "$RUN_AS" -- test -r "${built[0]}"); then
        (cd / && runuser -u "$RUN_AS" -- "${lint[@]}") || die "lintian found errors"
    else
        "${lint[@]}" || die "lintian found errors"
    fi
else
    log "lintian is not installed (apt-get install lintian): packages not linted"
fi
printf '%s\n' "${built[@]}" "${made_in_sid[@]}"
