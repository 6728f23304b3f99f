//! The `objectid` SQL type over [`crate::kernel::objectid::ObjectId`].
//!
//! PostgreSQL stores the type as 12 bytes with no header (`INTERNALLENGTH = 12`, alignment
//! `char`), passed by reference. A Datum is therefore a pointer to exactly the 12 bytes of an
//! `ObjectId`, which is `repr(transparent)` over `[u8; 12]`: arguments are borrowed in place and
//! results are copied into one palloc'd 12-byte chunk.

use core::ptr::NonNull;

use pgrx::array::Element;
use pgrx::callconv::{BoxRet, DatumPass, FcInfo};
use pgrx::datum::Datum;
use pgrx::layout::PassBy;
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::kernel::objectid::{ObjectId, LEN};

mod brin;
mod cast;
mod compare;
pub(crate) mod generate;
mod hash;
mod io;
mod json;
mod time;

#[cfg(feature = "pg_test")]
pub(crate) use compare::objectid_fastcmp;

// SAFETY: the type is declared with a fixed length of 12 and no varlena header, and ObjectId is a
// transparent 12-byte array with alignment 1, so any pointer PostgreSQL hands us for this type
// points at a valid ObjectId.
unsafe impl DatumPass for ObjectId {
    const PASS: PassBy = PassBy::Ref;
}

// SAFETY: as above; a fixed-size type needs no length read from the pointee.
unsafe impl Element for ObjectId {
    unsafe fn point_from(ptr: NonNull<u8>) -> NonNull<Self> {
        ptr.cast()
    }
}

// SAFETY: the result is a fresh palloc'd copy in the function's memory context, which is what
// PostgreSQL expects of a pass-by-reference result.
unsafe impl BoxRet for ObjectId {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        unsafe {
            let dst = pg_sys::palloc(LEN).cast::<ObjectId>();
            dst.write(self);
            fcinfo.return_raw_datum(pg_sys::Datum::from(dst))
        }
    }
}

// Functions returning one of their own arguments (smaller/larger) can hand back the argument's
// pointer: the executor copies a result that is not its own before it frees anything.
// SAFETY: the reference came from a Datum of this type that outlives the call.
unsafe impl BoxRet for &ObjectId {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        unsafe { fcinfo.return_raw_datum(pg_sys::Datum::from(self as *const ObjectId)) }
    }
}

impl_sql_translatable!(ObjectId, "objectid");

/// The install script, in dependency order. Each file creates one SQL concern.
mod install {
    use pgrx::prelude::*;

    extension_sql_file!(
        "../../sql/objectid_type.sql",
        name = "objectid_type",
        bootstrap
    );
    extension_sql_file!(
        "../../sql/objectid_operators.sql",
        name = "objectid_operators",
        requires = ["objectid_type"]
    );
    extension_sql_file!(
        "../../sql/objectid_btree.sql",
        name = "objectid_btree",
        requires = ["objectid_operators"]
    );
    extension_sql_file!(
        "../../sql/objectid_hash.sql",
        name = "objectid_hash",
        requires = ["objectid_operators"]
    );
    extension_sql_file!(
        "../../sql/objectid_brin.sql",
        name = "objectid_brin",
        requires = ["objectid_operators"]
    );
    // minmax-multi and bloom BRIN operator classes arrived in PostgreSQL 14.
    #[cfg(not(feature = "pg13"))]
    extension_sql_file!(
        "../../sql/objectid_brin_multi_bloom.sql",
        name = "objectid_brin_multi_bloom",
        requires = ["objectid_brin", "objectid_hash"]
    );
    extension_sql_file!(
        "../../sql/objectid_aggregates.sql",
        name = "objectid_aggregates",
        requires = ["objectid_btree"]
    );
    extension_sql_file!(
        "../../sql/objectid_casts.sql",
        name = "objectid_casts",
        requires = ["objectid_type"]
    );
    extension_sql_file!(
        "../../sql/objectid_json.sql",
        name = "objectid_json",
        requires = ["objectid_type"]
    );
    extension_sql_file!(
        "../../sql/objectid_time.sql",
        name = "objectid_time",
        requires = ["objectid_type"]
    );
    extension_sql_file!(
        "../../sql/objectid_generate.sql",
        name = "objectid_generate",
        requires = ["objectid_type"]
    );
}
