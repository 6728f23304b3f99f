//! What must be known about a relation before a time condition on it is rewritten.

use pgrx::pg_sys;

use super::catalog::Catalog;
use super::condition::version_7_column;
use super::nodes::{is_a, list_ptrs};

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
        let relation = pg_sys::RelationIdGetRelation(relid);
        if relation.is_null() {
            return false;
        }
        let constr = (*(*relation).rd_att).constr;
        let mut found = false;
        if !constr.is_null() {
            for i in 0..usize::from((*constr).num_check) {
                let check = &*(*constr).check.add(i);
                #[cfg(feature = "pg18")]
                let enforced = check.ccenforced;
                #[cfg(not(feature = "pg18"))]
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

/// Whether a time condition on `relid` must stay in the query next to its index bound, because
/// the table has an index whose expressions or predicate call the time function: such an index
/// can only be used (or proven to cover the query, `predicate_implied_by`) through the
/// condition as written.
pub(crate) unsafe fn condition_serves_an_index(relid: pg_sys::Oid, function: pg_sys::Oid) -> bool {
    unsafe {
        let relation = pg_sys::RelationIdGetRelation(relid);
        if relation.is_null() {
            return true;
        }
        let indexes = pg_sys::RelationGetIndexList(relation);
        pg_sys::RelationClose(relation);
        for index in list_oids(indexes) {
            let tuple = pg_sys::SearchSysCache1(
                pg_sys::SysCacheIdentifier::INDEXRELID as i32,
                pg_sys::Datum::from(index),
            );
            if tuple.is_null() {
                continue;
            }
            let mut calls = false;
            for column in [
                pg_sys::Anum_pg_index_indexprs,
                pg_sys::Anum_pg_index_indpred,
            ] {
                let mut isnull = true;
                let datum = pg_sys::SysCacheGetAttr(
                    pg_sys::SysCacheIdentifier::INDEXRELID as i32,
                    tuple,
                    column as pg_sys::AttrNumber,
                    &mut isnull,
                );
                if !isnull {
                    let text = pg_sys::text_to_cstring(datum.cast_mut_ptr());
                    calls |= calls_function(pg_sys::stringToNode(text).cast(), function);
                }
            }
            pg_sys::ReleaseSysCache(tuple);
            if calls {
                return true;
            }
        }
        false
    }
}

/// Whether `node` contains a call of `function`.
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
            if is_a(node, pg_sys::NodeTag::T_FuncExpr)
                && (*node.cast::<pg_sys::FuncExpr>()).funcid == *context.cast::<pg_sys::Oid>()
            {
                return true;
            }
            super::nodes::expression_tree_walker(node, Some(walker), context)
        }
    }
    let mut function = function;
    unsafe { walker(node, (&raw mut function).cast()) }
}

/// The arms of an AND (implicit as a List, or explicit), or the node itself.
pub(crate) unsafe fn conjuncts(node: *mut pg_sys::Node) -> impl Iterator<Item = *mut pg_sys::Node> {
    unsafe {
        let list = if is_a(node, pg_sys::NodeTag::T_List) {
            Some(node.cast::<pg_sys::List>())
        } else if is_a(node, pg_sys::NodeTag::T_BoolExpr)
            && (*node.cast::<pg_sys::BoolExpr>()).boolop == pg_sys::BoolExprType::AND_EXPR
        {
            Some((*node.cast::<pg_sys::BoolExpr>()).args)
        } else {
            None
        };
        let single = if list.is_none() { Some(node) } else { None };
        list.into_iter()
            .flat_map(|l| list_ptrs(l).map(|p| p.cast::<pg_sys::Node>()))
            .chain(single)
    }
}

unsafe fn list_oids(list: *mut pg_sys::List) -> impl Iterator<Item = pg_sys::Oid> {
    let len = if list.is_null() {
        0
    } else {
        unsafe { (*list).length }
    };
    (0..len as usize).map(move |i| unsafe { (*(*list).elements.add(i)).oid_value })
}
