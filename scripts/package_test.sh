#!/usr/bin/env bash
# Tests the Debian package of pg_objectid for PostgreSQL 15 (or 19) on Debian's own server, as a
# user of the package would meet it:
#   scripts/package_test.sh [PORT] [VERSION]   PORT of the throwaway cluster, default 56100;
#                                              VERSION 15 (default) or 19
# 19 is Debian's build in the sid chroot (sid.sh): the script runs itself there, where that server
# is an ordinary Debian package, so the package is built, linted, installed and purged there.
# It builds postgresql-V-objectid with scripts/package.sh (lintian must pass), installs it with
# apt-get, checks that dpkg installed exactly the package's files, then in a throwaway cluster of
# Debian's 15 (PG_OBJECTID_PACKAGE_TEST_DIR, default /tmp/pg_objectid-package-test): CREATE
# EXTENSION and the extension's functions, CREATE EXTENSION by a user who is not a superuser,
# and ALTER EXTENSION pg_objectid UPDATE from each earlier release with only the package's
# scripts on disk; then purges the package and checks that nothing of it remains. Needs root
# (or sudo) for apt-get, and lintian. Whatever happens, the package is purged at the end and the
# server's folders are left as they were found.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

port=${1:-56100}
v=${2:-15}
if ! [[ $port =~ ^[0-9]+$ && $v =~ ^(15|19)$ ]]; then die "usage: $0 [PORT] [15|19]"; fi
if [ "$v" = 19 ] && ! inside_sid; then
    log "running the package test for 19 in the chroot $SID"
    in_sid env PG_OBJECTID_PACKAGE_TEST_DIR="${PG_OBJECTID_PACKAGE_TEST_DIR:-}" bash "$0" "$port" 19
    exit
fi
SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)
command -v lintian >/dev/null || die "lintian is missing: apt-get install lintian"

package=postgresql-$v-objectid
pg_config=$(pg_config_of "$v")
[ -x "$pg_config" ] || die "Debian's PostgreSQL $v is missing: run scripts/setup.sh $v"
dpkg -S "$pg_config" >/dev/null 2>&1 || die "$pg_config is not from a Debian package"
bindir=$("$pg_config" --bindir)
libdir=$("$pg_config" --pkglibdir)
extdir=$("$pg_config" --sharedir)/extension
version=$(cargo_version <"$ROOT/Cargo.toml")
dir=${PG_OBJECTID_PACKAGE_TEST_DIR:-/tmp/pg_objectid-package-test}

# A package already installed may be someone's own: leave it alone rather than purge it.
status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
if [ -n "$status" ] && [ "$status" != not-installed ]; then
    die "$package is installed on this system; this test installs and purges it: remove it first (apt-get purge $package)"
fi

work=$(mktemp -d /tmp/pg_objectid-package-test.XXXXXX)
# lintian (run by package.sh as the servers' user) must be able to read the package.
chmod 0755 "$work"
added_scripts=()
cleanup() {
    local status=$? f
    cluster_stop "$pg_config" "$dir"
    if dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null | grep -qvx not-installed; then
        log "purging $package"
        DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get purge -y -qq "$package" >/dev/null 2>&1 ||
            "${SUDO[@]}" dpkg --purge "$package" >/dev/null 2>&1 || echo "error: could not purge $package" >&2
    fi
    for f in "${added_scripts[@]}"; do "${SUDO[@]}" rm -f "$f"; done
    # Put back the development build this test moved away (see below).
    for f in "$work"/backup/lib/* "$work"/backup/extension/*; do
        [ -e "$f" ] || continue
        case $f in
            */backup/lib/*) "${SUDO[@]}" cp -p "$f" "$libdir/" ;;
            *) "${SUDO[@]}" cp -p "$f" "$extdir/" ;;
        esac
    done
    rm -rf "$work" "$dir"
    [ "$status" = 0 ] || echo "error: the package test of $package failed" >&2
}
trap cleanup EXIT

fail() { die "package test: $*"; }

log "building $package"
# Its report, lintian's included, goes to the log (standard error).
"$ROOT/scripts/package.sh" --out "$work/debs" "$v" >&2
debs=("$work"/debs/"$package"_*.deb)
[[ ${#debs[@]} = 1 && -f ${debs[0]} ]] || fail "package.sh made no single $package package"
deb=${debs[0]}
deb_version=$(dpkg-deb -f "$deb" Version)
log "built $(basename "$deb"): $(du -k "$deb" | cut -f1) KiB"

# The test command (scripts/test.sh) and the demo install development builds into this server's
# folders with cargo pgrx install, and copy the earlier releases' install scripts there. Moved
# aside so that the server can load only what the package installs, and so that after the purge
# "nothing left" means the package cleaned up; they are put back when the test ends.
mkdir -p "$work/backup/lib" "$work/backup/extension"
for f in "$libdir"/pg_objectid* "$extdir"/pg_objectid*; do
    [ -e "$f" ] || continue
    case $f in
        "$libdir"/*) "${SUDO[@]}" mv "$f" "$work/backup/lib/" ;;
        *) "${SUDO[@]}" mv "$f" "$work/backup/extension/" ;;
    esac
done

log "installing $(basename "$deb")"
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends "$deb" \
    >"$work/apt-install.log" 2>&1 || { cat "$work/apt-install.log" >&2; fail "apt-get install failed"; }
[ "$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$package")" = "ii $deb_version" ] ||
    fail "dpkg does not show $package $deb_version as installed"

# What dpkg recorded as installed must be exactly the package's contents, and every file on
# disk must match the package's checksums.
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed -e 's#^\./#/#' -e 's#/$##' | grep -v '^$' | LC_ALL=C sort \
    >"$work/package.list"
dpkg -L "$package" | grep -vx '/\.' | LC_ALL=C sort >"$work/installed.list"
diff -u "$work/package.list" "$work/installed.list" || fail "dpkg -L differs from the package's contents"
dpkg --verify "$package" || fail "installed files differ from the package's checksums"
for f in "$libdir/pg_objectid.so" "$extdir/pg_objectid.control" "$extdir/pg_objectid--$version.sql"; do
    [ "$(dpkg -S "$f" 2>/dev/null | cut -d: -f1)" = "$package" ] || fail "$f is not installed by $package"
done
# Each upgrade script of the source tree is installed unchanged, so that a database made by an
# earlier release can be updated after the package is upgraded.
mapfile -t upgrade_scripts < <(find "$ROOT/sql" -maxdepth 1 -name 'pg_objectid--*--*.sql' -printf '%f\n' | sort)
[ ${#upgrade_scripts[@]} -gt 0 ] || fail "no upgrade script in sql/"
for s in "${upgrade_scripts[@]}"; do
    grep -qx "$extdir/$s" "$work/package.list" || fail "the package lacks the upgrade script $s"
    cmp -s "$ROOT/sql/$s" "$extdir/$s" || fail "the installed $s differs from sql/$s"
done

log "a cluster of Debian's PostgreSQL $v in $dir, port $port"
cluster_start "$pg_config" "$dir" "$port"

# q USER DATABASE SQL: the rows, unaligned, stopping at the first error.
q() {
    as_pg_user "$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U "$1" -d "$2" -c "$3"
}
# expect WHAT GOT WANTED
expect() {
    [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
}

expect "the server's version" "$(q postgres postgres "SHOW server_version_num" | cut -c1-2)" "$v"
expect "the available extension" \
    "$(q postgres postgres "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_objectid'")" \
    "$version"

log "CREATE EXTENSION pg_objectid in a new database"
q postgres postgres "CREATE DATABASE pkgtest" >/dev/null
q postgres pkgtest "CREATE EXTENSION pg_objectid" >/dev/null
expect "the extension's version" \
    "$(q postgres pkgtest "SELECT extversion FROM pg_extension WHERE extname = 'pg_objectid'")" "$version"
expect "a table keyed by gen_objectid()" "$(q postgres pkgtest "
    SET timezone = 'UTC';
    CREATE TABLE orders (id objectid PRIMARY KEY DEFAULT gen_objectid(), total numeric);
    INSERT INTO orders (total) SELECT g FROM generate_series(1, 1000) AS g;
    SELECT count(*), count(DISTINCT id),
           bool_and(objectid_timestamp(id) BETWEEN now() - interval '1 minute' AND now() + interval '1 minute')
    FROM orders")" "1000|1000|t"
expect "a lookup through the primary key" "$(q postgres pkgtest "
    SET enable_seqscan = off;
    SELECT count(*) FROM orders WHERE id = (SELECT id FROM orders WHERE total = 500)")" 1
expect "a known ObjectId" "$(q postgres pkgtest "
    SET timezone = 'UTC';
    SELECT id, pg_column_size(id), objectid_timestamp(id), encode(id::bytea, 'hex')
    FROM (SELECT '507f1f77bcf86cd799439011'::objectid AS id) AS s")" \
    "507f1f77bcf86cd799439011|12|2012-10-17 21:13:27+00|507f1f77bcf86cd799439011"
expect "uuidv7()" "$(q postgres pkgtest "
    SELECT substr(u::text, 15, 1), uuid_extract_version(u),
           abs(extract(epoch FROM uuid_extract_timestamp(u) - now())) < 60
    FROM (SELECT uuidv7() AS u) AS s")" "7|7|t"
# The extension's member objects, to compare the updated databases with below.
members="SELECT string_agg(pg_describe_object(classid, objid, objsubid), E'\n'
                      ORDER BY pg_describe_object(classid, objid, objsubid))
    FROM pg_depend
    WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
      AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid')"
fresh_members=$(q postgres pkgtest "$members")
[ "$(printf '%s\n' "$fresh_members" | wc -l)" -gt 50 ] || fail "a fresh install has too few member objects"

log "CREATE EXTENSION pg_objectid by a user who is not a superuser (the extension is trusted)"
q postgres postgres "CREATE ROLE pkgtest_owner LOGIN NOSUPERUSER" >/dev/null
q postgres postgres "CREATE DATABASE pkgtest_user OWNER pkgtest_owner" >/dev/null
expect "the user's superuser flag" "$(q pkgtest_owner pkgtest_user "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")" f
q pkgtest_owner pkgtest_user "CREATE EXTENSION pg_objectid" >/dev/null
expect "the extension's owner and a table of the user's" "$(q pkgtest_owner pkgtest_user "
    CREATE TABLE events (id objectid PRIMARY KEY DEFAULT gen_objectid(), ref uuid DEFAULT uuidv7());
    INSERT INTO events DEFAULT VALUES;
    INSERT INTO events DEFAULT VALUES;
    SELECT (SELECT extowner::regrole FROM pg_extension WHERE extname = 'pg_objectid'),
           count(DISTINCT id), count(DISTINCT ref)
    FROM events")" "pkgtest_owner|2|2"

# Upgrading the package replaces the library and adds upgrade scripts; the databases keep the
# objects of the release they were made with until ALTER EXTENSION ... UPDATE. Each earlier
# release's install script (sql/releases/) is put in place only for its CREATE EXTENSION ...
# VERSION, as an earlier package would have had it, and removed before the update, which must
# then find its way with the package's upgrade scripts alone.
log "ALTER EXTENSION pg_objectid UPDATE from each earlier release"
mapfile -t releases < <(release_versions)
[ ${#releases[@]} -gt 0 ] || fail "no earlier release in sql/releases"
for r in "${releases[@]}"; do
    expect "the update path from $r" "$(q postgres postgres "
        SELECT path IS NOT NULL FROM pg_extension_update_paths('pg_objectid')
        WHERE source = '$r' AND target = '$version'")" t
    db="pkgtest_from_${r//./_}"
    script="$extdir/pg_objectid--$r.sql"
    [ -e "$script" ] && fail "$script exists before the test put it there"
    added_scripts+=("$script")
    release_script "$r" >"$work/pg_objectid--$r.sql"
    "${SUDO[@]}" install -m 0644 "$work/pg_objectid--$r.sql" "$script"
    q postgres postgres "CREATE DATABASE $db" >/dev/null
    q postgres "$db" "CREATE EXTENSION pg_objectid VERSION '$r'" >/dev/null
    "${SUDO[@]}" rm -f "$script"
    q postgres "$db" "ALTER EXTENSION pg_objectid UPDATE" >/dev/null
    expect "the version after updating from $r" \
        "$(q postgres "$db" "SELECT extversion FROM pg_extension WHERE extname = 'pg_objectid'")" "$version"
    [ "$(q postgres "$db" "$members")" = "$fresh_members" ] ||
        fail "the member objects after updating from $r differ from a fresh install's:
$(diff <(printf '%s\n' "$fresh_members") <(q postgres "$db" "$members") || true)"
    expect "gen_objectid() after updating from $r" \
        "$(q postgres "$db" "SELECT objectid_timestamp(gen_objectid()) > now() - interval '1 minute'")" t
done
# Every version the upgrade scripts start from must reach the current one.
for s in "${upgrade_scripts[@]}"; do
    from=${s#pg_objectid--}
    from=${from%%--*}
    expect "the update path from $from" "$(q postgres postgres "
        SELECT path IS NOT NULL FROM pg_extension_update_paths('pg_objectid')
        WHERE source = '$from' AND target = '$version'")" t
done

cluster_stop "$pg_config" "$dir"

log "purging $package"
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get purge -y "$package" >"$work/apt-purge.log" 2>&1 ||
    { cat "$work/apt-purge.log" >&2; fail "apt-get purge failed"; }
[ "$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || echo not-installed)" = not-installed ] ||
    fail "dpkg still lists $package after the purge"
# Every file and the package's own folders must be gone; folders shared with the server stay.
while read -r path; do
    if [ -d "$path" ] && [ ! -L "$path" ]; then
        case $path in
            */doc/"$package") fail "the folder $path remains after the purge" ;;
        esac
    elif [ -e "$path" ] || [ -L "$path" ]; then
        fail "$path remains after the purge"
    fi
done <"$work/package.list"
left=$(ls -d "$libdir"/pg_objectid* "$extdir"/pg_objectid* 2>/dev/null || true)
[ -z "$left" ] || fail "files remain in the server's folders after the purge: $left"

log "package test of $(basename "$deb") passed"
