//! In-process tests, run by `cargo pgrx test`: what SQL cannot observe directly, such as which
//! comparator the sort machinery really calls.

// pgrx runs these as functions of the `tests` schema.
#[pgrx::pg_schema]
mod tests {
    use pgrx::pg_sys;
    use pgrx::prelude::*;

    use crate::core::objectid::ObjectId;

    fn objectid_lt_operator() -> pg_sys::Oid {
        Spi::get_one("SELECT '<(objectid,objectid)'::regoperator::oid")
            .expect("SPI")
            .expect("the < operator exists")
    }

    #[pg_test]
    fn sort_support_hands_out_the_direct_comparator() {
        let a = ObjectId::from_bytes([0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 9]);
        let b = ObjectId::from_bytes([0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        let datum = |id: &ObjectId| pg_sys::Datum::from(id as *const ObjectId);
        unsafe {
            // As tuplesort does for ORDER BY id.
            let mut ssup = pg_sys::SortSupportData {
                ssup_cxt: pg_sys::CurrentMemoryContext,
                ..Default::default()
            };
            pg_sys::PrepareSortSupportFromOrderingOp(objectid_lt_operator(), &mut ssup);
            let cmp = ssup.comparator.expect("a comparator");
            assert_eq!(
                cmp as *const () as usize,
                crate::objectid::objectid_fastcmp as *const () as usize,
                "not the fmgr fallback"
            );
            assert!(cmp(datum(&a), datum(&b), &mut ssup) < 0);
            assert!(cmp(datum(&b), datum(&a), &mut ssup) > 0);
            assert_eq!(cmp(datum(&a), datum(&a), &mut ssup), 0);
        }
    }

    #[pg_test]
    fn catalog_lookups_find_the_operator_classes() {
        let typid: pg_sys::Oid = Spi::get_one("SELECT 'objectid'::regtype::oid")
            .expect("SPI")
            .expect("type");
        for am in [
            pg_sys::BTREE_AM_OID,
            pg_sys::HASH_AM_OID,
            pg_sys::BRIN_AM_OID,
        ] {
            let opclass = unsafe { pg_sys::GetDefaultOpClass(typid, am) };
            assert_ne!(
                opclass,
                pg_sys::InvalidOid,
                "no default operator class for am {am:?}"
            );
        }
    }
}
