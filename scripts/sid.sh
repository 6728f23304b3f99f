# shellcheck shell=bash
# PostgreSQL 19 in a Debian unstable (sid) chroot, sourced by common.sh. Debian's only build of 19
# (its experimental suite) needs a newer C library than Debian 12's, its headers a C23 compiler, and
# pgrx 0.19 a newer rustc than the machine's, so 19's server, its development files, rustc and clang
# live in a sid tree made by debootstrap, where everything of 19 is built (docs/testing.md,
# "PostgreSQL 19"). The host's /tmp, this checkout and $CACHE are bind-mounted into it at the same
# paths, and its postgres user has the host's uid, so a cluster made in the chroot is an ordinary
# folder under /tmp to the host's scripts and tests.
#
# $CACHE/pg19/bin holds a wrapper per program of 19 (pg_config, initdb, pg_ctl, psql, pg_dump,
# pg_upgrade, ...) that runs it in the chroot (the server's programs as $RUN_AS), so
# `pg_config_of 19` works as for the other versions. Its pg_config prints the chroot's folders as
# the host sees them (the chroot's path in front), and the wrappers as --bindir.

SID=${PG_OBJECTID_SID:-/var/lib/pg_objectid/sid}
SID_PG_BIN=/usr/lib/postgresql/19/bin
SID_WRAPPERS="$CACHE/pg19/bin"
# What sid_make installs; a change here makes it install again over the existing tree.
SID_RECIPE=5
SID_PGRX_HOME=/root/.pgrx
SID_PACKAGES=(rustc cargo rustfmt rust-clippy git clang libclang-dev gcc libc6-dev make pkg-config libssl-dev
    ca-certificates sudo python3 dpkg-dev lintian fakeroot patch)
# The downloaded 17 and 18 (pg_upgrade's old servers, run in the chroot) link libxml2.so.2,
# which sid keeps in package libxml2 beside its own libxml2.so.16.
SID_PACKAGES+=(libxml2)
SID_PG_PACKAGES=(postgresql-19/experimental postgresql-client-19/experimental
    postgresql-server-dev-19/experimental libpq-dev/experimental libpq5/experimental)

# The Debian mirror the machine's own apt uses (no host name is written here).
debian_mirror() {
    local uri
    uri=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1)
    [ -n "$uri" ] || uri=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    [ -n "$uri" ] || die "no Debian mirror in /etc/apt/sources.list{,.d}"
    echo "$uri"
}

# sid_bind SOURCE: SOURCE mounted at the same path inside the chroot, once.
sid_bind() {
    mkdir -p "$SID$1"
    mountpoint -q "$SID$1" || mount --bind "$1" "$SID$1"
}

# The chroot's mounts: /proc, /dev and /dev/shm (the server's shared memory), the host's /tmp,
# this checkout and $CACHE. Mounts end with the machine, so every user of the chroot calls this.
sid_mount() {
    [ -x "$SID$SID_PG_BIN/postgres" ] || die "no PostgreSQL 19 chroot in $SID: run scripts/setup.sh 19"
    [ "$(id -u)" = 0 ] || die "PostgreSQL 19 runs in a chroot, which needs root (docs/testing.md)"
    mkdir -p "$SID/proc"
    mountpoint -q "$SID/proc" || mount -t proc proc "$SID/proc"
    sid_bind /dev
    sid_bind /dev/shm
    sid_bind /tmp
    sid_bind "$CACHE"
    case $ROOT/ in
        /tmp/*) ;;
        *) sid_bind "$ROOT" ;;
    esac
}

# in_sid COMMAND...: COMMAND as root in the chroot, in the current folder (the same path there),
# with the chroot's cargo and a clean environment but for the variables named below.
# shellcheck disable=SC2016  # expanded by the inner shell, from its arguments
in_sid() {
    if inside_sid; then
        "$@"
        return
    fi
    sid_mount
    chroot "$SID" /usr/bin/env -i HOME=/root LANG=C.UTF-8 USER=root \
        PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        PGRX_HOME="$SID_PGRX_HOME" ${CARGO_TARGET_DIR:+CARGO_TARGET_DIR="$CARGO_TARGET_DIR"} \
        ${RUST_BACKTRACE:+RUST_BACKTRACE="$RUST_BACKTRACE"} \
        /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$PWD" "$@"
}

# Builds the chroot (about 4 minutes the first time: debootstrap, then Debian's packages), or does
# nothing when it is there with this recipe. Needs root, and the host's cargo-pgrx (setup.sh).
sid_setup() {
    sid_make
    sid_finish
}

# sid_setup's first part, which needs nothing of the host's toolchain (setup.sh runs it beside
# the build of cargo-pgrx): the tree and its packages.
sid_make() {
    [ "$(id -u)" = 0 ] || die "the PostgreSQL 19 chroot needs root to make and to use (docs/testing.md)"
    if [ "$(cat "$SID/etc/pg_objectid-sid" 2>/dev/null)" != "$SID_RECIPE" ]; then
        local mirror
        mirror=$(debian_mirror)
        if [ ! -x "$SID/usr/bin/apt-get" ]; then
            command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
            log "making a Debian unstable chroot in $SID (debootstrap)"
            rm -rf "$SID.partial"
            debootstrap --variant=minbase sid "$SID.partial" "$mirror" >"$CACHE/debootstrap.log" 2>&1 || {
                tail -n 20 "$CACHE/debootstrap.log" >&2
                die "debootstrap of sid failed"
            }
            mv "$SID.partial" "$SID"
        fi
        # The suites' Release files may be past their Valid-Until on the mirror.
        echo 'Acquire::Check-Valid-Until "false";' >"$SID/etc/apt/apt.conf.d/99pg_objectid"
        printf 'deb %s sid main\ndeb %s experimental main\n' "$mirror" "$mirror" >"$SID/etc/apt/sources.list"
        rm -f "$SID"/etc/apt/sources.list.d/*.sources
        # HTTPS from inside (cargo) needs the host's trusted certificates and resolver.
        mkdir -p "$SID/usr/local/share/ca-certificates"
        cp /usr/local/share/ca-certificates/*.crt "$SID/usr/local/share/ca-certificates/" 2>/dev/null || true
        cp /etc/resolv.conf "$SID/etc/resolv.conf"
        # sudo (cargo pgrx test runs the server through it) looks the machine's name up.
        cp /etc/hosts "$SID/etc/hosts"
        # The server's user with the host's uid and gid, so both sides own the same files.
        local uid gid
        uid=$(id -u "$RUN_AS") gid=$(id -g "$RUN_AS")
        grep -q "^$RUN_AS:" "$SID/etc/group" || echo "$RUN_AS:x:$gid:" >>"$SID/etc/group"
        grep -q "^$RUN_AS:" "$SID/etc/passwd" ||
            echo "$RUN_AS:x:$uid:$gid:PostgreSQL administrator:/var/lib/postgresql:/bin/bash" >>"$SID/etc/passwd"
        grep -q "^$RUN_AS:" "$SID/etc/shadow" || echo "$RUN_AS:*:20000:0:99999:7:::" >>"$SID/etc/shadow"
        mkdir -p "$SID/var/lib/postgresql" "$SID/etc/postgresql-common"
        chown "$uid:$gid" "$SID/var/lib/postgresql"
        # No main cluster: the tests make their own.
        echo "create_main_cluster = false" >"$SID/etc/postgresql-common/createcluster.conf"
        sid_mount_minimal
        log "installing PostgreSQL 19, rustc and clang in the chroot"
        in_sid_root sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
            && update-ca-certificates >/dev/null' sh "${SID_PACKAGES[@]}" "${SID_PG_PACKAGES[@]}" ||
            die "installing packages in the chroot failed"
        echo "$SID_RECIPE" >"$SID/etc/pg_objectid-sid"
    fi
}

# The second part: cargo-pgrx, its registration of 19, the wrappers.
sid_finish() {
    sid_mount
    # cargo-pgrx only drives cargo, so the host's build of the pinned version (setup.sh) serves:
    # copied in, it runs on sid's newer C library and calls sid's cargo and rustc 1.97. That saves
    # building it again with sid's rustc (6 minutes alone, more beside other builds).
    if ! in_sid cargo pgrx --version 2>/dev/null | grep -qx "cargo-pgrx $PGRX_VERSION"; then
        local host_pgrx
        host_pgrx=$(command -v cargo-pgrx) || die "no cargo-pgrx on the host: scripts/setup.sh installs it first"
        install -m 0755 "$host_pgrx" "$SID/usr/local/bin/cargo-pgrx"
        in_sid cargo pgrx --version 2>/dev/null | grep -qx "cargo-pgrx $PGRX_VERSION" ||
            die "the host's $host_pgrx is not cargo-pgrx $PGRX_VERSION"
    fi
    grep -qx "pg19 = \"$SID_PG_BIN/pg_config\"" "$SID$SID_PGRX_HOME/config.toml" 2>/dev/null ||
        in_sid cargo pgrx init --pg19 "$SID_PG_BIN/pg_config" >/dev/null
    sid_wrappers
}

# Undoes sid_mount (and sid_mount_minimal). Remove the chroot only after this: while the host's
# /tmp and this checkout are mounted in it, deleting its tree deletes them.
sid_unmount() {
    local m
    mount | awk -v root="$SID/" 'index($3, root) == 1 { print $3 }' | sort -r | while read -r m; do
        umount "$m"
    done
}

# Before the chroot's first package install: what apt and the packages' scripts need.
sid_mount_minimal() {
    mkdir -p "$SID/proc"
    mountpoint -q "$SID/proc" || mount -t proc proc "$SID/proc"
    sid_bind /dev
    sid_bind /dev/shm
}
in_sid_root() {
    chroot "$SID" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

# The wrappers of $SID_WRAPPERS: one script, linked under the name of each program of 19.
sid_wrappers() {
    mkdir -p "$SID_WRAPPERS"
    cat >"$SID_WRAPPERS/.run" <<EOF
#!/bin/sh
# PostgreSQL 19's \$(basename "\$0"), run in the chroot $SID (made by pg_objectid's
# scripts/setup.sh; see its docs/testing.md). Inside the chroot (pg_upgrade runs the programs of
# the folder it is given) it is the program itself.
prog=\$(basename "\$0")
if [ -f /etc/pg_objectid-sid ]; then exec $SID_PG_BIN/"\$prog" "\$@"; fi
sudo=
[ "\$(id -u)" = 0 ] || sudo="sudo -n"
if [ "\$prog" = pg_config ] && [ \$# = 1 ]; then
    case \$1 in
        --bindir) echo "$SID_WRAPPERS"; exit 0 ;;
        --docdir | --htmldir | --includedir | --pkgincludedir | --includedir-server | --libdir | \\
            --pkglibdir | --localedir | --mandir | --sharedir | --sysconfdir | --pgxs)
            dir=\$(\$sudo chroot "$SID" $SID_PG_BIN/pg_config "\$1") || exit
            echo "$SID\$dir"
            exit 0 ;;
    esac
fi
# As root: the server's programs as $RUN_AS (they refuse root, and own what they make, as
# as_pg_user runs them for the other versions); clients as root, who may read and write the files
# the caller names.
user=\$(id -un)
if [ "\$user" = root ]; then
    case \$prog in
        psql | pg_dump | pg_dumpall | pg_restore | createdb | dropdb | createuser | dropuser | \\
            pg_isready | vacuumdb | reindexdb | clusterdb | pgbench | pg_config) ;;
        *) user=$RUN_AS ;;
    esac
fi
exec \$sudo chroot --userspec="\$user" "$SID" /bin/sh -c 'cd "\$1" 2>/dev/null || cd /; shift; exec "\$@"' \\
    sh "\$PWD" $SID_PG_BIN/"\$prog" "\$@"
EOF
    chmod 755 "$SID_WRAPPERS/.run"
    local prog
    for prog in "$SID$SID_PG_BIN"/*; do
        ln -sfn .run "$SID_WRAPPERS/$(basename "$prog")"
    done
}

# Whether this runs in the chroot (a script that sid_* ran there).
inside_sid() {
    [ -f /etc/pg_objectid-sid ]
}

# Whether $1 is one of the wrappers (it switches to $RUN_AS itself).
is_sid_program() {
    case $1 in "$SID_WRAPPERS"/*) return 0 ;; esac
    return 1
}
