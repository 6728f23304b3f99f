//! Small helpers over PostgreSQL's node trees, for the planner hook and the rekey toolkit.

use core::ffi::c_void;

use pgrx::{pg_sys, PgList};

pub(crate) use pg_sys::expression_tree_walker;

pub(crate) use pgrx::is_a;

/// The pointer elements of a PostgreSQL List (NIL is empty), copied out so that the iterator
/// does not borrow the `PgList` that reads them.
pub(crate) unsafe fn list_ptrs(list: *mut pg_sys::List) -> impl Iterator<Item = *mut c_void> {
    let list = unsafe { PgList::<c_void>::from_pg(list) };
    list.iter_ptr().collect::<Vec<_>>().into_iter()
}

/// The Oid elements of a PostgreSQL List (NIL is empty).
pub(crate) unsafe fn list_oids(list: *mut pg_sys::List) -> impl Iterator<Item = pg_sys::Oid> {
    let list = unsafe { PgList::<pg_sys::Oid>::from_pg(list) };
    list.iter_oid().collect::<Vec<_>>().into_iter()
}

/// A new List of `nodes`.
pub(crate) fn list_of(nodes: impl IntoIterator<Item = *mut pg_sys::Node>) -> *mut pg_sys::List {
    let mut list = PgList::<pg_sys::Node>::new();
    for node in nodes {
        list.push(node);
    }
    list.into_pg()
}

/// Whether `node` is an AND, OR or NOT (`op`) expression.
pub(crate) unsafe fn is_bool(node: *mut pg_sys::Node, op: pg_sys::BoolExprType::Type) -> bool {
    unsafe {
        is_a(node, pg_sys::NodeTag::T_BoolExpr) && (*node.cast::<pg_sys::BoolExpr>()).boolop == op
    }
}

/// The arms of an AND: implicit (a List, as quals are once the planner has preprocessed them) or
/// explicit (an AND expression); None for any other node.
pub(crate) unsafe fn and_arms(node: *mut pg_sys::Node) -> Option<*mut pg_sys::List> {
    unsafe {
        if is_a(node, pg_sys::NodeTag::T_List) {
            Some(node.cast())
        } else if is_bool(node, pg_sys::BoolExprType::AND_EXPR) {
            Some((*node.cast::<pg_sys::BoolExpr>()).args)
        } else {
            None
        }
    }
}

/// The arms of an AND, or the node itself.
pub(crate) unsafe fn conjuncts(node: *mut pg_sys::Node) -> impl Iterator<Item = *mut pg_sys::Node> {
    unsafe {
        let arms = and_arms(node);
        let single = if arms.is_none() { Some(node) } else { None };
        arms.into_iter()
            .flat_map(|l| list_ptrs(l).map(|p| p.cast::<pg_sys::Node>()))
            .chain(single)
    }
}
