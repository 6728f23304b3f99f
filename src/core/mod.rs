//! The pure Rust core: identifier layouts, parsing and formatting, with no PostgreSQL in it, so
//! that plain `cargo test` covers it in seconds.

pub mod objectid;
