//! pg_objectid on Citus: a coordinator and two workers, each with both libraries preloaded.
//!
//! `scripts/citus_test.sh VERSION` starts the three nodes and sets `PG_OBJECTID_CITUS_COORDINATOR`,
//! `PG_OBJECTID_CITUS_WORKER1` and `PG_OBJECTID_CITUS_WORKER2` (libpq `key=value` strings without
//! `dbname`). Each test makes a database of its own on every node, so tests run in parallel
//! without seeing each other's tables. What is checked on the workers is checked there directly,
//! through connections of their own, not only through what the coordinator reports.

// The server suite's helpers (row and plan text, the raw-bytes objectid); not all are used here.
#[allow(dead_code)]
#[path = "../server/common.rs"]
mod common;

mod cluster;

mod defaults;
mod distribution;
mod extension;
mod joins;
mod loading;
mod time;
