//! Recognising a time condition: `objectid_timestamp(x) <op> t` or `t <op> objectid_timestamp(x)`
//! (and the same with `uuid_extract_timestamp` over a uuid), where `<op>` is one of timestamptz's
//! own btree comparison operators and `x` a column of the relation being planned. Everything is
//! matched by OID, with argument counts and types checked, so that no user-defined function or
//! operator, whatever its name, is taken for one of these.

use pgrx::pg_sys;

use super::catalog::Catalog;
use crate::nodes::{is_a, list_ptrs};

/// Which time function the condition reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum TimeFunction {
    /// The extension's `objectid_timestamp(objectid)`: every objectid sorts by its second.
    ObjectId,
    /// The extension's `uuid_extract_timestamp(uuid)`, or PostgreSQL 18's (they agree on every
    /// UUID). Only version-7 UUIDs sort by their time (a v1's time is not a prefix of its bytes).
    Uuid,
}

/// A btree strategy, with the time function on the left.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Strategy {
    Less,
    LessEqual,
    Equal,
    GreaterEqual,
    Greater,
}

impl Strategy {
    fn from_btree(number: i32) -> Option<Self> {
        Some(match number as u32 {
            pg_sys::BTLessStrategyNumber => Strategy::Less,
            pg_sys::BTLessEqualStrategyNumber => Strategy::LessEqual,
            pg_sys::BTEqualStrategyNumber => Strategy::Equal,
            pg_sys::BTGreaterEqualStrategyNumber => Strategy::GreaterEqual,
            pg_sys::BTGreaterStrategyNumber => Strategy::Greater,
            _ => return None,
        })
    }

    /// The same condition written the other way round: `t < f(x)` is `f(x) > t`.
    fn commuted(self) -> Self {
        match self {
            Strategy::Less => Strategy::Greater,
            Strategy::LessEqual => Strategy::GreaterEqual,
            Strategy::Equal => Strategy::Equal,
            Strategy::GreaterEqual => Strategy::LessEqual,
            Strategy::Greater => Strategy::Less,
        }
    }
}

pub(crate) struct TimeCondition {
    pub function: TimeFunction,
    /// The time function's argument, as written (a column, possibly relabelled from a domain).
    pub arg: *mut pg_sys::Node,
    /// The column inside `arg`.
    pub column: *mut pg_sys::Var,
    pub strategy: Strategy,
    /// The time compared with: a timestamptz expression.
    pub other: *mut pg_sys::Node,
}

/// `node` as a time condition, if it is one.
pub(crate) unsafe fn recognise(
    node: *mut pg_sys::Node,
    catalog: &Catalog,
) -> Option<TimeCondition> {
    unsafe {
        if !is_a(node, pg_sys::NodeTag::T_OpExpr) {
            return None;
        }
        let op = node.cast::<pg_sys::OpExpr>();
        if (*op).opretset {
            return None;
        }
        let strategy = timestamptz_comparison((*op).opno)?;
        let args: Vec<*mut pg_sys::Node> = list_ptrs((*op).args).map(|p| p.cast()).collect();
        let [left, right] = args[..] else { return None };
        let (call, other, strategy) = match time_call(left, catalog) {
            Some(call) => (call, right, strategy),
            None => (time_call(right, catalog)?, left, strategy.commuted()),
        };
        let (function, arg, column) = call;
        (pg_sys::exprType(other) == pg_sys::TIMESTAMPTZOID).then_some(TimeCondition {
            function,
            arg,
            column,
            strategy,
            other,
        })
    }
}

/// The strategy of `opno` if it is one of the five comparison operators of timestamptz with
/// timestamptz, found through PostgreSQL's built-in btree family for it (`datetime_ops`).
unsafe fn timestamptz_comparison(opno: pg_sys::Oid) -> Option<Strategy> {
    unsafe {
        let family = pg_sys::get_opclass_family(pg_sys::TIMESTAMPTZ_BTREE_OPS_OID);
        let (mut strategy, mut left, mut right) = (0, pg_sys::InvalidOid, pg_sys::InvalidOid);
        if !pg_sys::op_in_opfamily(opno, family) {
            return None;
        }
        pg_sys::get_op_opfamily_properties(
            opno,
            family,
            false,
            &mut strategy,
            &mut left,
            &mut right,
        );
        if left != pg_sys::TIMESTAMPTZOID || right != pg_sys::TIMESTAMPTZOID {
            return None;
        }
        Strategy::from_btree(strategy)
    }
}

/// `node` as a call of a time function on a column: the function, its argument and the column.
unsafe fn time_call(
    node: *mut pg_sys::Node,
    catalog: &Catalog,
) -> Option<(TimeFunction, *mut pg_sys::Node, *mut pg_sys::Var)> {
    unsafe {
        if !is_a(node, pg_sys::NodeTag::T_FuncExpr) {
            return None;
        }
        let call = node.cast::<pg_sys::FuncExpr>();
        if (*call).funcretset {
            return None;
        }
        let function = if (*call).funcid == catalog.objectid_timestamp {
            TimeFunction::ObjectId
        } else if (*call).funcid == catalog.uuid_extract_timestamp
            || is_builtin_v7_time((*call).funcid)
        {
            TimeFunction::Uuid
        } else {
            return None;
        };
        let args: Vec<*mut pg_sys::Node> = list_ptrs((*call).args).map(|p| p.cast()).collect();
        let [arg] = args[..] else { return None };
        let wanted = match function {
            TimeFunction::ObjectId => catalog.objectid_type,
            TimeFunction::Uuid => pg_sys::UUIDOID,
        };
        if pg_sys::exprType(arg) != wanted {
            return None;
        }
        let column = strip_relabel(arg);
        if !is_a(column, pg_sys::NodeTag::T_Var) {
            return None;
        }
        Some((function, arg, column.cast()))
    }
}

/// PostgreSQL 18's `uuid_extract_timestamp`, which reads a v7's milliseconds exactly as ours
/// does. 17's built-in of that name reads version 1 only (a v7 gives NULL), so it is not one.
fn is_builtin_v7_time(funcid: pg_sys::Oid) -> bool {
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    {
        funcid == pg_sys::Oid::from(pg_sys::F_UUID_EXTRACT_TIMESTAMP)
    }
    #[cfg(not(any(feature = "pg18", feature = "pg19")))]
    {
        let _ = funcid;
        false
    }
}

/// `uuid_extract_version(column) = 7` (ours, or PostgreSQL 17/18's), either way round, with the
/// 7 an integer constant of any width: the column of the call if so.
pub(crate) unsafe fn version_7_column(
    node: *mut pg_sys::Node,
    catalog: &Catalog,
) -> Option<*mut pg_sys::Var> {
    unsafe {
        if !is_a(node, pg_sys::NodeTag::T_OpExpr) {
            return None;
        }
        let op = node.cast::<pg_sys::OpExpr>();
        // Equality of PostgreSQL's integer_ops family: int2, int4 and int8 with each other.
        let family = pg_sys::INTEGER_BTREE_FAM_OID;
        if (*op).opretset
            || pg_sys::get_op_opfamily_strategy((*op).opno, family)
                != pg_sys::BTEqualStrategyNumber as i32
        {
            return None;
        }
        let args: Vec<*mut pg_sys::Node> = list_ptrs((*op).args).map(|p| p.cast()).collect();
        let [left, right] = args[..] else { return None };
        let (call, constant) = if is_const_7(right) {
            (left, right)
        } else if is_const_7(left) {
            (right, left)
        } else {
            return None;
        };
        let _ = constant;
        if !is_a(call, pg_sys::NodeTag::T_FuncExpr) {
            return None;
        }
        let call = call.cast::<pg_sys::FuncExpr>();
        if (*call).funcretset
            || !((*call).funcid == catalog.uuid_extract_version
                || is_builtin_version((*call).funcid))
        {
            return None;
        }
        let args: Vec<*mut pg_sys::Node> = list_ptrs((*call).args).map(|p| p.cast()).collect();
        let [arg] = args[..] else { return None };
        if pg_sys::exprType(arg) != pg_sys::UUIDOID {
            return None;
        }
        let column = strip_relabel(arg);
        is_a(column, pg_sys::NodeTag::T_Var).then_some(column.cast())
    }
}

/// PostgreSQL 17/18's `uuid_extract_version`, which agrees with ours (NULL for a UUID not of the
/// RFC 9562 variant, else the version nibble).
fn is_builtin_version(funcid: pg_sys::Oid) -> bool {
    #[cfg(any(feature = "pg17", feature = "pg18", feature = "pg19"))]
    {
        funcid == pg_sys::Oid::from(pg_sys::F_UUID_EXTRACT_VERSION)
    }
    #[cfg(not(any(feature = "pg17", feature = "pg18", feature = "pg19")))]
    {
        let _ = funcid;
        false
    }
}

unsafe fn is_const_7(node: *mut pg_sys::Node) -> bool {
    unsafe {
        if !is_a(node, pg_sys::NodeTag::T_Const) {
            return false;
        }
        let c = node.cast::<pg_sys::Const>();
        if (*c).constisnull {
            return false;
        }
        let v = (*c).constvalue.value();
        match (*c).consttype {
            pg_sys::INT2OID => v as i16 == 7,
            pg_sys::INT4OID => v as i32 == 7,
            pg_sys::INT8OID => v as i64 == 7,
            _ => false,
        }
    }
}

/// A column behind binary-compatible relabelling (a domain over the type, say).
unsafe fn strip_relabel(mut node: *mut pg_sys::Node) -> *mut pg_sys::Node {
    unsafe {
        while is_a(node, pg_sys::NodeTag::T_RelabelType) {
            node = (*node.cast::<pg_sys::RelabelType>()).arg.cast();
        }
        node
    }
}
