//! Tests against a real PostgreSQL server with pg_objectid installed: SQL in, rows and errors out.
//!
//! `scripts/test.sh` starts a throwaway cluster and sets `PG_OBJECTID_TEST_DSN` (a libpq-style
//! `key=value` string without `dbname`). Each test makes its own database, named after the test
//! (`common::database_name`), so tests run in parallel without seeing each other's objects.

mod common;

mod aggregates;
mod attacks;
mod binary;
mod casts;
mod crash;
mod differential;
mod docs;
mod extension;
mod fuzz;
mod generate;
mod indexes;
mod json;
mod operators;
mod planner;
mod rekey;
mod rekey_attacks;
mod rekey_catalog_changes;
mod rekey_implied_checks;
mod rekey_new_key;
mod text_io;
mod time;
mod uuid;
