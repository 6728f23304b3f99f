//! What must be known about a relation before a time condition on it is rewritten.

use pgrx::pg_sys;

use super::catalog::Catalog;
use super::condition::version_7_column;
use crate::nodes::{conjuncts, is_a, list_oids};

/// Whether column `attno` of table `relid` can hold only version-7 UUIDs, or UUIDs for which
/// `uuid_extract_timestamp` is NULL, by a CHECK constraint `uuid_extract_version(col) = 7` that
/// the server enforces for every row the scan can return.
///
/// Such a constraint passes a UUID of another variant (its version is NULL): those rows have
/// no time either, so the original condition, which the rewrite keeps, rejects them.
///
/// Mirrors the tests `get_relation_constraints` (plancat.c) applies before constraint
/// exclusion trusts a CHECK constraint: it must be validated (`ccvalid`), enforced (18's
/// `ccenforced`), and, when the scan includes inheritance children (`inh`), not `NO INHERIT`,
/// which is the one kind a child may lack. Every other CHECK constraint of a parent is one its
/// children and partitions have too, validated whenever the parent's is (PostgreSQL refuses to
/// attach or inherit a child whose matching constraint is `NOT VALID`).
pub(crate) unsafe fn check_says_only_v7(
    relid: pg_sys::Oid,
    attno: pg_sys::AttrNumber,
    inh: bool,
    catalog: &Catalog,
) -> bool {
    unsafe {
        // PostgreSQL does not enforce CHECK constraints on foreign tables (it cannot see their
        // rows being written), so theirs prove nothing, nor do a parent's when a child or
        // partition is foreign.
        if scanned_relations(relid, inh).any(|r| {
            pg_sys::get_rel_relkind(r) == pg_sys::RELKIND_FOREIGN_TABLE as core::ffi::c_char
        }) {
            return false;
        }
        let relation = pg_sys::RelationIdGetRelation(relid);
        if relation.is_null() {
            return false;
        }
        let constr = (*(*relation).rd_att).constr;
        let mut found = false;
        if !constr.is_null() {
            for i in 0..usize::from((*constr).num_check) {
                let check = &*(*constr).check.add(i);
                #[cfg(any(feature = "pg18", feature = "pg19"))]
                let enforced = check.ccenforced;
                #[cfg(not(any(feature = "pg18", feature = "pg19")))]
                let enforced = true;
                if !check.ccvalid || !enforced || (inh && check.ccnoinherit) {
                    continue;
                }
                // The stored expression is never const-folded, so a constraint reads as written;
                // its columns refer to the table as range table entry 1.
                let expr = pg_sys::stringToNode(check.ccbin).cast::<pg_sys::Node>();
                if conjuncts(expr).any(|c| {
                    version_7_column(c, catalog).is_some_and(|var| {
                        (*var).varno == 1 && (*var).varlevelsup == 0 && (*var).varattno == attno
                    })
                }) {
                    found = true;
                    break;
                }
            }
        }
        pg_sys::RelationClose(relation);
        found
    }
}

/// Whether a time condition on `relid` must stay in the query as written, next to its rewritten
/// form, because PostgreSQL matches something of the table's against the condition as written,
/// and would no longer find it:
/// - an index whose expressions or predicate call the time function (index matching, and
///   `predicate_implied_by` for a partial index), of the table or, with `inh`, of any child or
///   partition;
/// - a partition key that calls it, of the table, of a partitioned table below it (partition
///   pruning, `match_clause_to_partition_key`) or above it (a partition queried directly is
///   excluded by its partition constraint, which repeats its ancestors' keys);
/// - a CHECK constraint that calls it, of the table or a child or partition (constraint
///   exclusion, `relation_excluded_by_constraints`).
pub(crate) unsafe fn condition_needed_as_written(
    relid: pg_sys::Oid,
    inh: bool,
    function: pg_sys::Oid,
) -> bool {
    unsafe {
        let calls = |text: *mut core::ffi::c_char| {
            calls_function(pg_sys::stringToNode(text).cast(), function)
        };
        let ancestors = if pg_sys::get_rel_relispartition(relid) {
            list_oids(get_partition_ancestors(relid)).collect()
        } else {
            Vec::new()
        };
        scanned_relations(relid, inh).any(|table| {
            index_definitions(table).into_iter().any(calls)
                || partition_key(table).is_some_and(calls)
                || check_constraints(table).into_iter().any(calls)
        }) || ancestors
            .into_iter()
            .any(|a| partition_key(a).is_some_and(calls))
    }
}

unsafe extern "C-unwind" {
    // catalog/partition.h, the same from PostgreSQL 11 on; not in pgrx's bindings. Reads
    // pg_inherits, locking no partition.
    fn get_partition_ancestors(relid: pg_sys::Oid) -> *mut pg_sys::List;
}

/// pg_partitioned_table and pg_constraint, whose OIDs are fixed in their catalog headers, and
/// the index of pg_constraint on (conrelid, contypid, conname); pgrx's bindings lack them.
const PARTITIONED_TABLE: pg_sys::Oid = pg_sys::Oid::from_u32(3350);
const CONSTRAINT: pg_sys::Oid = pg_sys::Oid::from_u32(2606);
const CONSTRAINT_RELID_INDEX: u32 = 2665;

/// The column number of `name` in catalog `catalog`, looked up rather than written down: it
/// differs between versions (pg_constraint gained columns in 18).
unsafe fn catalog_column(catalog: pg_sys::Oid, name: &core::ffi::CStr) -> pg_sys::AttrNumber {
    unsafe { pg_sys::get_attnum(catalog, name.as_ptr()) }
}

/// The `nodeToString` text of the expressions of `table`'s partition key (pg_partitioned_table.
/// partexprs), if it is partitioned by any; from the syscache, which needs no lock on the table.
unsafe fn partition_key(table: pg_sys::Oid) -> Option<*mut core::ffi::c_char> {
    unsafe {
        let tuple = pg_sys::SearchSysCache1(
            pg_sys::SysCacheIdentifier::PARTRELID as i32,
            pg_sys::Datum::from(table),
        );
        if tuple.is_null() {
            return None;
        }
        let mut isnull = true;
        let datum = pg_sys::SysCacheGetAttr(
            pg_sys::SysCacheIdentifier::PARTRELID as i32,
            tuple,
            catalog_column(PARTITIONED_TABLE, c"partexprs"),
            &mut isnull,
        );
        let text = (!isnull).then(|| pg_sys::text_to_cstring(datum.cast_mut_ptr()));
        pg_sys::ReleaseSysCache(tuple);
        text
    }
}

/// The `nodeToString` texts of `table`'s CHECK constraints (pg_constraint.conbin), read by
/// conrelid without a lock on the table.
unsafe fn check_constraints(table: pg_sys::Oid) -> Vec<*mut core::ffi::c_char> {
    let mut out = Vec::new();
    unsafe {
        let (contype, conbin) = (
            catalog_column(CONSTRAINT, c"contype"),
            catalog_column(CONSTRAINT, c"conbin"),
        );
        super::catalog::scan_catalog(
            CONSTRAINT,
            CONSTRAINT_RELID_INDEX,
            catalog_column(CONSTRAINT, c"conrelid") as u32,
            table,
            |tuple, desc| {
                let mut isnull = true;
                let kind = pg_sys::heap_getattr(tuple, contype.into(), desc, &mut isnull);
                // contype 'c': CONSTRAINT_CHECK of catalog/pg_constraint.h.
                if isnull || kind.value() as u8 != b'c' {
                    return;
                }
                let datum = pg_sys::heap_getattr(tuple, conbin.into(), desc, &mut isnull);
                if !isnull {
                    out.push(pg_sys::text_to_cstring(datum.cast_mut_ptr()));
                }
            },
        )
    };
    out
}

/// The table and, with `inh`, all its inheritance children and partitions, at any depth. Read
/// from pg_inherits without locking the children: the planner locks those it scans itself, and
/// a child attached meanwhile invalidates the plan.
unsafe fn scanned_relations(relid: pg_sys::Oid, inh: bool) -> impl Iterator<Item = pg_sys::Oid> {
    unsafe extern "C-unwind" {
        // catalog/pg_inherits.h, the same in every supported version; not in pgrx's bindings.
        fn find_all_inheritors(
            parent: pg_sys::Oid,
            lockmode: pg_sys::LOCKMODE,
            numparents: *mut *mut pg_sys::List,
        ) -> *mut pg_sys::List;
    }
    let all = if inh {
        // Includes `relid` itself, first.
        unsafe {
            list_oids(find_all_inheritors(
                relid,
                pg_sys::NoLock as pg_sys::LOCKMODE,
                core::ptr::null_mut(),
            ))
        }
        .collect::<Vec<_>>()
    } else {
        vec![relid]
    };
    all.into_iter()
}

/// The `nodeToString` texts of the expressions and predicates of the indexes of `table`, read
/// from pg_index (by `indrelid`), which needs no lock on the table.
unsafe fn index_definitions(table: pg_sys::Oid) -> Vec<*mut core::ffi::c_char> {
    let mut out = Vec::new();
    unsafe {
        super::catalog::scan_catalog(
            pg_sys::IndexRelationId,
            pg_sys::IndexIndrelidIndexId,
            pg_sys::Anum_pg_index_indrelid,
            table,
            |tuple, desc| {
                for column in [
                    pg_sys::Anum_pg_index_indexprs,
                    pg_sys::Anum_pg_index_indpred,
                ] {
                    let mut isnull = true;
                    let datum = pg_sys::heap_getattr(tuple, column as i32, desc, &mut isnull);
                    if !isnull {
                        out.push(pg_sys::text_to_cstring(datum.cast_mut_ptr()));
                    }
                }
            },
        )
    };
    out
}

/// Whether `node` contains a call of `function`, or may once PostgreSQL has simplified it: it
/// simplifies stored partition keys, index expressions and CHECK constraints before matching
/// them against a query (RelationBuildPartitionKey, RelationGetIndexExpressions,
/// get_relation_constraints), and so inlines an SQL function that wraps `function`. Any call of an
/// SQL-language function (directly or as an operator's) counts, without looking inside: keeping
/// the condition as written is always right, and simplifying here ourselves would evaluate the
/// expressions' constant parts, and raise their errors, where PostgreSQL may never do so (a
/// pruned partition's).
unsafe fn calls_function(node: *mut pg_sys::Node, function: pg_sys::Oid) -> bool {
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn walker(
        node: *mut pg_sys::Node,
        context: *mut core::ffi::c_void,
    ) -> bool {
        unsafe {
            if node.is_null() {
                return false;
            }
            let called = if is_a(node, pg_sys::NodeTag::T_FuncExpr) {
                Some((*node.cast::<pg_sys::FuncExpr>()).funcid)
            } else if is_a(node, pg_sys::NodeTag::T_OpExpr) {
                Some(pg_sys::get_opcode((*node.cast::<pg_sys::OpExpr>()).opno))
            } else {
                None
            };
            if let Some(called) = called {
                if called == *context.cast::<pg_sys::Oid>()
                    || super::catalog::function_language(called)
                        == Some(super::catalog::SQL_LANGUAGE)
                {
                    return true;
                }
            }
            crate::nodes::expression_tree_walker(node, Some(walker), context)
        }
    }
    let mut function = function;
    unsafe { walker(node, (&raw mut function).cast()) }
}
