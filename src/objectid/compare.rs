//! Comparison: the six operators' functions, the btree comparison and sort support, and the
//! smaller/larger transition functions of `min` and `max`. Order is byte order.

use core::cmp::Ordering;
use core::ffi::c_int;

use pgrx::datum::Internal;
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::kernel::objectid::ObjectId;

#[pg_extern(sql = false)]
fn objectid_eq(a: &ObjectId, b: &ObjectId) -> bool {
    a == b
}

#[pg_extern(sql = false)]
fn objectid_ne(a: &ObjectId, b: &ObjectId) -> bool {
    a != b
}

#[pg_extern(sql = false)]
fn objectid_lt(a: &ObjectId, b: &ObjectId) -> bool {
    a < b
}

#[pg_extern(sql = false)]
fn objectid_le(a: &ObjectId, b: &ObjectId) -> bool {
    a <= b
}

#[pg_extern(sql = false)]
fn objectid_gt(a: &ObjectId, b: &ObjectId) -> bool {
    a > b
}

#[pg_extern(sql = false)]
fn objectid_ge(a: &ObjectId, b: &ObjectId) -> bool {
    a >= b
}

#[pg_extern(sql = false)]
fn objectid_cmp(a: &ObjectId, b: &ObjectId) -> i32 {
    ordering_to_int(a.cmp(b))
}

#[pg_extern(sql = false)]
fn objectid_smaller<'a>(a: &'a ObjectId, b: &'a ObjectId) -> &'a ObjectId {
    a.min(b)
}

#[pg_extern(sql = false)]
fn objectid_larger<'a>(a: &'a ObjectId, b: &'a ObjectId) -> &'a ObjectId {
    a.max(b)
}

/// Sorts and index builds call the comparator directly instead of `objectid_cmp` through the
/// function manager, which saves building a call frame per comparison.
#[pg_extern(sql = false)]
fn objectid_sortsupport(ssup: Internal) {
    let ssup = ssup
        .unwrap()
        .expect("objectid_sortsupport is called with a SortSupport")
        .cast_mut_ptr::<pg_sys::SortSupportData>();
    // SAFETY: the planner passes a valid SortSupport for us to fill in.
    unsafe { (*ssup).comparator = Some(objectid_fastcmp) };
}

/// Cannot fail, so it needs no error-handling guard.
pub(crate) unsafe extern "C-unwind" fn objectid_fastcmp(
    a: pg_sys::Datum,
    b: pg_sys::Datum,
    _ssup: pg_sys::SortSupport,
) -> c_int {
    // SAFETY: sort support for this type is only ever handed objectid Datums, which point at
    // 12 readable bytes.
    let (a, b) = unsafe {
        (
            &*a.cast_mut_ptr::<ObjectId>(),
            &*b.cast_mut_ptr::<ObjectId>(),
        )
    };
    ordering_to_int(a.cmp(b))
}

fn ordering_to_int(o: Ordering) -> i32 {
    o as i32
}
