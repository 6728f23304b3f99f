//! Small helpers over PostgreSQL's node trees.

use core::ffi::c_void;

use pgrx::pg_sys;

pub(crate) use pg_sys::expression_tree_walker;

/// `IsA(node, tag)`, false for a null pointer.
pub(crate) unsafe fn is_a(node: *mut pg_sys::Node, tag: pg_sys::NodeTag) -> bool {
    !node.is_null() && unsafe { (*node).type_ } == tag
}

/// The pointer elements of a PostgreSQL List (NIL is empty).
pub(crate) unsafe fn list_ptrs(list: *mut pg_sys::List) -> impl Iterator<Item = *mut c_void> {
    let len = if list.is_null() {
        0
    } else {
        unsafe { (*list).length }
    };
    (0..len as usize).map(move |i| unsafe { (*(*list).elements.add(i)).ptr_value })
}

/// A new List of `nodes`.
pub(crate) unsafe fn list_of(
    nodes: impl IntoIterator<Item = *mut pg_sys::Node>,
) -> *mut pg_sys::List {
    let mut list: *mut pg_sys::List = core::ptr::null_mut();
    for node in nodes {
        list = unsafe { pg_sys::lappend(list, node.cast()) };
    }
    list
}
