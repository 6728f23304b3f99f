//! In-process tests, run by `cargo pgrx test`: what SQL cannot observe directly, such as which
//! comparator the sort machinery really calls.

// pgrx runs these as functions of the `tests` schema.
#[pgrx::pg_schema]
mod tests {
    use pgrx::pg_sys;
    use pgrx::prelude::*;

    use crate::kernel::objectid::ObjectId;

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

    /// Issue 10, item 5: a generator past its last id (second 2106-02-07 06:28:15, counter
    /// 0xFFFFFF) makes gen_objectid() fail with SQLSTATE 2200H instead of wrapping.
    #[pg_test]
    fn gen_objectid_refuses_past_the_last_second_with_2200h() {
        use crate::kernel::generator::Generator;
        use crate::objectid::generate::next_id;
        let g = Generator::new([1, 2, 3, 4, 5], 0x00ff_ffff, 0);
        let last = g.next(u32::MAX).expect("the last id");
        assert_eq!(last.to_hex(), "ffffffff0102030405ffffff");
        assert_eq!(
            refused_with(|| next_id(&g)),
            Some(PgSqlErrorCode::ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED)
        );
    }

    /// Issue 12: gen_objectid_subsecond() past its last tick (second 2106-02-07 06:28:15, tick
    /// 0xFFFFFF) fails with SQLSTATE 2200H too.
    #[pg_test]
    fn gen_objectid_subsecond_refuses_past_the_last_tick_with_2200h() {
        use crate::kernel::generator::Generator;
        use crate::objectid::generate::next_id_subsecond;
        let g = Generator::new([1, 2, 3, 4, 5], 0, 0);
        let last = next_id_subsecond(&g, u32::MAX, 999_999_999);
        assert_eq!(last.to_hex(), "ffffffffffffff0102030405");
        assert_eq!(
            refused_with(|| next_id_subsecond(&g, 0, 0)),
            Some(PgSqlErrorCode::ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED)
        );
    }

    /// Issue 10, item 6: gen_objectid_at() refuses with SQLSTATE 2200H rather than wrap its
    /// backfill counter.
    #[pg_test]
    fn gen_objectid_at_refuses_past_the_backfill_limit_with_2200h() {
        use crate::kernel::generator::Generator;
        use crate::objectid::generate::next_id_at;
        let g = Generator::new([1, 2, 3, 4, 5], 0, u64::MAX - 1);
        assert_eq!(next_id_at(&g, 7).to_hex(), "00000007fffffffffffffffe");
        assert_eq!(
            refused_with(|| next_id_at(&g, 7)),
            Some(PgSqlErrorCode::ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED)
        );
    }

    /// The SQLSTATE of the error `f` raises, None if it returns.
    fn refused_with(
        f: impl FnOnce() -> ObjectId + std::panic::UnwindSafe,
    ) -> Option<PgSqlErrorCode> {
        PgTryBuilder::new(|| {
            f();
            None
        })
        .catch_others(|e| match e {
            pg_sys::panic::CaughtError::PostgresError(r)
            | pg_sys::panic::CaughtError::ErrorReport(r) => Some(r.sql_error_code()),
            other => other.rethrow(),
        })
        .execute()
    }
}
