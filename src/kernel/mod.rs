//! The pure Rust core: identifier layouts, parsing and formatting, generators, the clock and the
//! random source, with no PostgreSQL in it, so that plain `cargo test` covers it in seconds.

pub mod clock;
pub mod extjson;
pub mod fork;
pub mod generator;
pub mod key_map;
pub mod objectid;
pub mod random;
pub mod time;
pub mod uuidv7;
