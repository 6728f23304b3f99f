//! pg_objectid: a 12-byte MongoDB-compatible `objectid` type for PostgreSQL.
//!
//! `kernel` holds the value logic with no PostgreSQL in it; `objectid` adapts it to SQL, one module
//! per SQL concern. Every SQL object is declared by hand in `sql/` (pgrx generates none), so that
//! the install script qualifies everything with `@extschema@` and marks volatility, strictness,
//! parallel safety and leakproofness exactly.

pub mod kernel;
mod nodes;
mod objectid;
mod planner;
mod rekey;
mod uuid;

::pgrx::pg_module_magic!(name, version);

#[pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    objectid::generate::init();
    rekey::init();
    planner::init();
}

#[cfg(feature = "pg_test")]
#[path = "../pgrx-tests/mod.rs"]
mod pgrx_tests;

/// Hooks for `cargo pgrx test`, which builds with the `pg_test` feature.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
