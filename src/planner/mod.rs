//! Time conditions on a key answered from the key's indexes.
//!
//! A btree index on an objectid orders rows by creation second, so
//! `objectid_timestamp(id) >= t` is also a range of ids. PostgreSQL cannot see that by itself:
//! it asks a function's planner support function for index conditions only when the call is the
//! whole condition or the operator's own function, and in `objectid_timestamp(id) >= t` the
//! operator is timestamptz's `>=`. So, while a query is planned, the extension rewrites each such
//! condition on a table into the equivalent condition on the column itself,
//! `id >= objectid_first_at_or_after(t)`, and leaves everything else to PostgreSQL's planner:
//! index choice for every access method, partial indexes, partition pruning, inheritance,
//! TABLESAMPLE, parallel and bitmap scans, costs and row estimates (from the key's statistics).
//!
//! - `catalog`: the extension's objects, by OID.
//! - `condition`: recognising a time condition.
//! - `proof`: what must be known about the table before rewriting (v7-only uuid columns;
//!   indexes that need the condition as written).
//! - `rewrite`: where in a query a condition may be rewritten, and into what.
//!
//! For objectid the rewritten condition is exact (true for exactly the same rows), so it replaces
//! the original, and the row estimate is that of the key's range, counted once. Only where an
//! index, a partition key or a CHECK constraint of the table (or of the tables and partitions the
//! scan reaches, or above a partition) uses `objectid_timestamp(...)` does the original stay as
//! well, so that index matching, partition pruning and constraint exclusion, which match the
//! condition as written, keep working.
//!
//! For `uuid_extract_timestamp(id)` (the extension's, or PostgreSQL 18's) only version-7 UUIDs
//! sort by their time, so the rewrite needs proof that the column holds nothing else: a valid
//! CHECK constraint, or the query's own `uuid_extract_version(id) = 7` next to the condition.
//! The bound then only narrows the scan, and the original condition stays as the exact test.
//!
//! `pg_objectid.time_index_paths = off` turns the rewrite off, for a session or a statement.

mod catalog;
mod condition;
mod proof;
mod rewrite;

use pgrx::datum::Internal;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

static TIME_INDEX_PATHS: GucSetting<bool> = GucSetting::<bool>::new(true);

#[cfg(not(feature = "pg19"))]
static mut PREV_GET_RELATION_INFO_HOOK: pg_sys::get_relation_info_hook_type = None;
#[cfg(feature = "pg19")]
static mut PREV_BUILD_SIMPLE_REL_HOOK: pg_sys::build_simple_rel_hook_type = None;

pub(crate) fn init() {
    GucRegistry::define_bool_guc(
        c"pg_objectid.time_index_paths",
        c"Answers time conditions on objectid and version-7 uuid keys from the key's indexes.",
        c"When on, a condition such as objectid_timestamp(id) >= t is rewritten during planning \
          into the equivalent condition on id, which btree and BRIN indexes on id, partition \
          pruning and the key's statistics can use.",
        &TIME_INDEX_PATHS,
        GucContext::Userset,
        GucFlags::default(),
    );
    #[cfg(not(any(feature = "pg13", feature = "pg14")))]
    // SAFETY: reserving our own prefix, as contrib modules do after defining their settings.
    unsafe {
        pg_sys::MarkGUCPrefixReserved(c"pg_objectid".as_ptr())
    };
    catalog::init();
    // SAFETY: called once from _PG_init; chaining the hook is the documented protocol.
    #[cfg(not(feature = "pg19"))]
    unsafe {
        PREV_GET_RELATION_INFO_HOOK = pg_sys::get_relation_info_hook;
        pg_sys::get_relation_info_hook = Some(get_relation_info);
    }
    // SAFETY: as above.
    #[cfg(feature = "pg19")]
    unsafe {
        PREV_BUILD_SIMPLE_REL_HOOK = pg_sys::build_simple_rel_hook;
        pg_sys::build_simple_rel_hook = Some(build_simple_rel);
    }
}

/// 13 to 18: `get_relation_info` (plancat.c) calls its hook last, for each table
/// `build_simple_rel` builds a relation for.
#[cfg(not(feature = "pg19"))]
#[pg_guard]
unsafe extern "C-unwind" fn get_relation_info(
    root: *mut pg_sys::PlannerInfo,
    relation: pg_sys::Oid,
    inhparent: bool,
    rel: *mut pg_sys::RelOptInfo,
) {
    unsafe {
        if let Some(prev) = PREV_GET_RELATION_INFO_HOOK {
            pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| prev(root, relation, inhparent, rel));
        }
        relation_built(root, rel, relation, inhparent);
    }
}

/// 19 removed `get_relation_info_hook` (commit 91f33a2ae) for this one, which `build_simple_rel`
/// (relnode.c) calls at the same point for a table, right after `get_relation_info`, before
/// `apply_child_basequals`; but for every range-table entry it builds a relation for: also a
/// subquery, function, table function, VALUES list, CTE, named tuplestore, and the RTE_RESULT of a
/// query without FROM (query_planner builds that one before any other relation, with no
/// conditions handed out either). Only a table has conditions the rewrite can prove anything
/// about; `rte->relid` and `rte->inh` are what 18 passed as `relation` and `inhparent`.
#[cfg(feature = "pg19")]
#[pg_guard]
unsafe extern "C-unwind" fn build_simple_rel(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rte: *mut pg_sys::RangeTblEntry,
) {
    unsafe {
        if let Some(prev) = PREV_BUILD_SIMPLE_REL_HOOK {
            pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| prev(root, rel, rte));
        }
        if rte.is_null() || (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION {
            return;
        }
        relation_built(root, rel, (*rte).relid, (*rte).inh);
    }
}

/// The planner has built `rel` for table `relation`, before the level's conditions are handed
/// out to relations.
unsafe fn relation_built(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    relation: pg_sys::Oid,
    inhparent: bool,
) {
    unsafe {
        // Base relations are built before the level's conditions are handed out; children of
        // partitioned and inheritance parents (other member relations) get theirs from the
        // parent's, already rewritten.
        if !TIME_INDEX_PATHS.get()
            || root.is_null()
            || rel.is_null()
            || (*rel).reloptkind != pg_sys::RelOptKind::RELOPT_BASEREL
        {
            return;
        }
        if let Some(catalog) = catalog::get() {
            rewrite::rewrite_conditions_on(root, rel, relation, inhparent, &catalog);
        }
    }
}

/// Answers no request (a null pointer, not SQL NULL, which the planner would reject): being
/// called is its job. The planner calls it while it simplifies a query that uses
/// `objectid_timestamp`, which loads this library, and so installs the hook above, before the
/// query's relations are planned: the rewrite works from a session's first query, without
/// preloading.
#[pg_extern(sql = false)]
fn objectid_timestamp_support(_request: Internal) -> Internal {
    Internal::from(Some(pg_sys::Datum::from(0usize)))
}

/// The same for the extension's `uuid_extract_timestamp`.
#[pg_extern(sql = false)]
fn uuid_extract_timestamp_support(_request: Internal) -> Internal {
    Internal::from(Some(pg_sys::Datum::from(0usize)))
}
