//! pg_objectid: a 12-byte MongoDB-compatible `objectid` type for PostgreSQL.
//!
//! `kernel` holds the value logic with no PostgreSQL in it; `objectid` adapts it to SQL, one module
//! per SQL concern. Every SQL object is declared by hand in `sql/` (pgrx generates none), so that
//! the install script qualifies everything with `@extschema@` and marks volatility, strictness,
//! parallel safety and leakproofness exactly.

// 19's bindings give the syscache identifiers as plain `i32`s, 13-18's as an enum: the `as i32`
// that 13-18 need is a no-op on 19.
#![cfg_attr(feature = "pg19", allow(clippy::unnecessary_cast))]

pub mod kernel;
mod nodes;
mod objectid;
mod planner;
mod rekey;
mod uuid;

::pgrx::pg_module_magic!(name, version);

#[pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    no_backtraces_for_clients();
    objectid::generate::init();
    rekey::init();
    planner::init();
}

/// Turns off the Rust backtraces that pgrx's panic hook captures for every error that passes
/// through the extension (PostgreSQL's own included, such as a disk-full 53100 in a rekey) and
/// appends to the DETAIL the client reads, when the server's environment has `RUST_BACKTRACE=1`:
/// a client must not read the server's code addresses and paths. `Backtrace::capture` decides once
/// per process, on its first call, from `RUST_LIB_BACKTRACE` before `RUST_BACKTRACE`; that first
/// call is made here, with `RUST_LIB_BACKTRACE=0`, and the environment is then put back as it was
/// (for other libraries, which link a std of their own). A backend runs one thread, and so does
/// the postmaster when it preloads the library, so nothing else reads the environment meanwhile.
fn no_backtraces_for_clients() {
    const NAME: &str = "RUST_LIB_BACKTRACE";
    let before = std::env::var_os(NAME);
    std::env::set_var(NAME, "0");
    let _disabled = std::backtrace::Backtrace::capture();
    match before {
        Some(value) => std::env::set_var(NAME, value),
        None => std::env::remove_var(NAME),
    }
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
