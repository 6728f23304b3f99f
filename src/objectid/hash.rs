//! Hashing for the hash operator class, hash joins, hash aggregation and hash partitioning,
//! with PostgreSQL's own byte hash (the one `uuid` uses) over the 12 bytes.

use core::ffi::c_int;

use pgrx::prelude::*;

use crate::kernel::objectid::{ObjectId, LEN};

// PostgreSQL's byte hash (src/common/hashfn.c), exported by the server but not among pgrx's
// bindings. Neither function can raise an error.
extern "C-unwind" {
    fn hash_bytes(k: *const u8, keylen: c_int) -> u32;
    fn hash_bytes_extended(k: *const u8, keylen: c_int, seed: u64) -> u64;
}

#[pg_extern(sql = false)]
fn objectid_hash(id: &ObjectId) -> i32 {
    // SAFETY: reads LEN bytes from a 12-byte array.
    unsafe { hash_bytes(id.as_bytes().as_ptr(), LEN as c_int) as i32 }
}

/// The seeded 64-bit hash, required for hash partitioning (`PARTITION BY HASH`).
#[pg_extern(sql = false)]
fn objectid_hash_extended(id: &ObjectId, seed: i64) -> i64 {
    // SAFETY: as above.
    unsafe { hash_bytes_extended(id.as_bytes().as_ptr(), LEN as c_int, seed as u64) as i64 }
}
