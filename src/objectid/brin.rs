//! The distance function of the minmax-multi BRIN operator class (PostgreSQL 14 and later).

use pgrx::prelude::*;

use crate::kernel::objectid::ObjectId;

/// Declared in SQL as `(internal, internal)`, as BRIN support functions are, but called with two
/// ordinary objectid Datums.
#[pg_extern(sql = false)]
fn objectid_minmax_multi_distance(a: &ObjectId, b: &ObjectId) -> f64 {
    a.distance(b)
}
