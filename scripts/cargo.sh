#!/bin/sh
# cargo, as the scripts run it on the host: `scripts/cargo.sh test`, `scripts/cargo.sh pgrx install`.
# pgrx 0.19.4 declares rust-version 1.96, one above the newest toolchain rustup can fetch on these
# machines (1.95); it builds on 1.95 and passes every test there (docs/testing.md), so the commands
# that compile get --ignore-rust-version. cargo-pgrx runs cargo as $CARGO, which cargo itself would
# set to its own path for `cargo pgrx`, so cargo-pgrx is run directly with this script as $CARGO;
# and pgrx-tests' framework, which installs the build under test from inside the test program
# (where cargo has set $CARGO to itself), runs $CARGO_PGRX, this script too.
# 19 is built in the sid chroot with its rustc 1.97 (scripts/sid.sh), which needs none of this.
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
case ${1:-} in
    pgrx) CARGO=$self CARGO_PGRX=$self exec cargo-pgrx "$@" ;;
    build | check | clippy | doc | run | rustc | test)
        sub=$1
        shift
        exec cargo "$sub" --ignore-rust-version "$@"
        ;;
esac
exec cargo "$@"
