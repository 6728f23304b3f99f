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
/// the table, or with `inh` any of its children and partitions, has an index whose expressions
/// or predicate call the time function: such an index can only be used (or proven to cover the
/// query, `predicate_implied_by`) through the condition as written.
pub(crate) unsafe fn condition_serves_an_index(
    relid: pg_sys::Oid,
    inh: bool,
    function: pg_sys::Oid,
) -> bool {
    unsafe {
        scanned_relations(relid, inh).any(|table| {
            index_definitions(table)
                .into_iter()
                .any(|text| calls_function(pg_sys::stringToNode(text).cast(), function))
        })
    }
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
