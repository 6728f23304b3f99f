# Named targets over scripts/, for working on pg_objectid (docs/testing.md#targets says what each
# costs). The README's test command, `bash scripts/test.sh`, is `make test`: it runs the same
# scripts. Every target runs scripts/setup.sh for what it needs first; that is quick when the
# machine is set up. V picks the PostgreSQL major version (13-19; 19 runs in a chroot, as root)
# where one is used.
#
#   make quick          the inner loop: the kernel's unit tests and one version's server suite
#   make version V=16   every test of one version (server, preloaded generator, crash, Citus, pgrx)
#   make test           everything, on 13-19 (the README's command)
#   make lint           rustfmt, clippy on every version, shellcheck, ruff
#   make citus V=17 | cross-version | cross-version-19 | replication | package | package-19 | pgxn
#   make clients V=17 | mongodb V=18
#   make bench | bench-rekey | bench-citus | bench-scale | demo | install V=15

V ?= 17
SHELL := /bin/bash

.PHONY: quick unit server version test lint install setup citus cross-version cross-version-19 \
	replication package package-19 pgxn clients mongodb bench bench-rekey bench-citus bench-scale demo

setup:
	bash scripts/setup.sh $(V)

unit:
	scripts/cargo.sh test

# The kernel's tests, then the server suite on V against a throwaway cluster (port 55500+V).
quick: setup unit
	scripts/cargo.sh test --test server --no-run
	bash scripts/test_version.sh $(V) --quick

server: quick

version: setup
	scripts/cargo.sh test --test server --no-run
	scripts/cargo.sh test --test citus --no-run
	bash scripts/test_version.sh $(V)

test:
	bash scripts/test.sh

lint:
	bash scripts/setup.sh
	bash scripts/lint.sh

# The debug build of V, installed into V's server (with the earlier releases' install scripts).
install: setup
	source scripts/common.sh && install_extension "$$(pg_config_of $(V))" debug

citus: install
	bash scripts/citus_test.sh $(V)

clients: install
	bash scripts/clients_test.sh $(V) 55640

mongodb: install
	bash scripts/mongodb_test.sh $(V) 55652

# Dump/restore and pg_upgrade into 18, from 15, 16 and 17.
cross-version:
	bash scripts/setup.sh 15 16 17 18
	source scripts/common.sh && for v in 15 16 17 18; do install_extension "$$(pg_config_of $$v)" debug; done
	bash scripts/cross_version.sh 15 18 17 16

# Dump/restore into 19 from 15 and 18, pg_upgrade into 19 from 17 and 18.
cross-version-19:
	bash scripts/setup.sh 15 17 18 19
	source scripts/common.sh && for v in 15 17 18 19; do install_extension "$$(pg_config_of $$v)" debug; done
	bash scripts/cross_version.sh 15 19 17 18

replication:
	bash scripts/setup.sh 15 18
	source scripts/common.sh && for v in 15 18; do install_extension "$$(pg_config_of $$v)" debug; done
	bash scripts/replication_test.sh 15 18

# The Debian package of 15, installed into Debian's own server, used and purged.
package:
	bash scripts/setup.sh 15
	bash scripts/package_test.sh 55650

# The Debian package of 19, in the chroot 19 runs in (docs/testing.md#postgresql-19).
package-19:
	bash scripts/setup.sh 19
	bash scripts/package_test.sh 55651 19

# META.json and the zip, against the control files of the servers installed so far.
pgxn: install
	bash scripts/pgxn_test.sh $(V)

bench:
	bash scripts/bench.sh

bench-rekey:
	bash scripts/bench_rekey.sh

bench-citus:
	bash scripts/bench_citus.sh

# Inserts once the key's index outgrows memory (direct I/O), and costs at three table sizes.
bench-scale:
	bash scripts/bench_scale.sh

demo:
	bash scripts/demo.sh
