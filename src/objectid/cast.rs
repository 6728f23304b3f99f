//! Explicit casts between `objectid` and `bytea`: the 12 raw bytes either way.

use pgrx::prelude::*;

use crate::kernel::objectid::{ObjectId, LEN};

/// Named after the target type, as PostgreSQL names cast functions.
#[pg_extern(sql = false)]
fn bytea(id: &ObjectId) -> &[u8] {
    id.as_bytes()
}

#[pg_extern(sql = false)]
fn objectid(bytes: &[u8]) -> ObjectId {
    ObjectId::from_slice(bytes).unwrap_or_else(|e| {
        // Quote the input as PostgreSQL prints a bytea, cut short if long.
        const QUOTE_MAX: usize = 32;
        let shown = hex::encode(&bytes[..bytes.len().min(QUOTE_MAX)]);
        let more = if bytes.len() > QUOTE_MAX { "..." } else { "" };
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_BINARY_REPRESENTATION,
            format!(
                "invalid length for type objectid: \"\\x{shown}{more}\" has {} bytes, expected {LEN}",
                e.0
            )
        );
    })
}
