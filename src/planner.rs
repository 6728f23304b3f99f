//! Index scans for `objectid_timestamp(id) <op> t`, and for `uuid_extract_timestamp(id) <op> t`
//! (the extension's, or PostgreSQL 18's own) where the column holds only version-7 UUIDs.
//!
//! A btree index on `id` orders rows by creation second, so a condition on
//! `objectid_timestamp(id)` is also a range of ids: `>=`/`>` t needs `id >= objectid_lower_bound(t)`,
//! `<=` t needs `id <= objectid_upper_bound(t)`, `<` t `id <= objectid_upper_bound_before(t)`
//! (which stops before second t when t is a whole second), `=` both ends. The range may cover
//! more than the condition (whole seconds; clamped ends outside the type's time range), so the
//! original condition stays as a recheck.
//!
//! PostgreSQL asks a function's planner support function for index conditions
//! (SupportRequestIndexCondition) only when the call is the whole condition or the operator's own
//! function. In `objectid_timestamp(id) >= t` the operator is timestamptz's `>=`, so our function is
//! never asked. The same index path is therefore offered from a `set_rel_pathlist_hook`, with the
//! same `IndexClause` a support function would have returned; the planner then costs it against
//! the other paths as usual. `objectid_timestamp`'s support function (`objectid_timestamp_support`)
//! makes sure this library, and so the hook, is loaded before such a query is planned.
//! 18's built-in `uuid_extract_timestamp` has no such support function of ours, so its conditions
//! get the path only in sessions that have loaded the library already (preloading does that).

use core::ffi::{c_char, c_void, CStr};
use core::ptr;

use pgrx::datum::Internal;
use pgrx::pg_sys;
use pgrx::prelude::*;

static mut PREV_SET_REL_PATHLIST_HOOK: pg_sys::set_rel_pathlist_hook_type = None;

pub(crate) fn init() {
    // SAFETY: called once from _PG_init; chaining the hook is the documented protocol.
    unsafe {
        PREV_SET_REL_PATHLIST_HOOK = pg_sys::set_rel_pathlist_hook;
        pg_sys::set_rel_pathlist_hook = Some(set_rel_pathlist);
    }
}

/// Answers no request (a null pointer, not SQL NULL, which the planner would reject): being
/// called is its job, since that loads this library, and so installs the hook above, while the
/// planner simplifies the query and before it builds paths.
#[pg_extern(sql = false)]
fn objectid_timestamp_support(_request: Internal) -> Internal {
    Internal::from(Some(pg_sys::Datum::from(0usize)))
}

/// The time-reading functions whose conditions can bound a btree scan of their argument.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TimeFunction {
    /// `objectid_timestamp(objectid)`: every objectid sorts by its second.
    ObjectId,
    /// The extension's `uuid_extract_timestamp(uuid)`: only version-7 UUIDs sort by their time
    /// (a v1's time is not a prefix of its bytes), so its conditions may bound a scan only where
    /// the column is known to hold nothing but v7 values (see `only_v7`).
    UuidV7,
}

impl TimeFunction {
    fn of(name: &CStr) -> Option<Self> {
        match name.to_bytes() {
            b"objectid_timestamp" => Some(TimeFunction::ObjectId),
            b"uuid_extract_timestamp" => Some(TimeFunction::UuidV7),
            _ => None,
        }
    }

    /// The bound functions: lower, upper and upper for a strict `<`.
    fn bounds(self) -> [&'static CStr; 3] {
        match self {
            TimeFunction::ObjectId => [
                c"objectid_lower_bound",
                c"objectid_upper_bound",
                c"objectid_upper_bound_before",
            ],
            TimeFunction::UuidV7 => [
                c"uuidv7_lower_bound",
                c"uuidv7_upper_bound",
                c"uuidv7_upper_bound_before",
            ],
        }
    }
}

/// `time_function(column) <strategy> other` found in a relation's restrictions.
struct TimeCondition {
    function: TimeFunction,
    rinfo: *mut pg_sys::RestrictInfo,
    column: *mut pg_sys::Var,
    /// btree strategy with the call on the left (1 <, 2 <=, 3 =, 4 >=, 5 >).
    strategy: u16,
    other: *mut pg_sys::Expr,
    /// The bound functions, from the schema objectid_timestamp lives in.
    lower_bound: pg_sys::Oid,
    upper_bound: pg_sys::Oid,
    upper_bound_before: pg_sys::Oid,
}

#[pg_guard]
unsafe extern "C-unwind" fn set_rel_pathlist(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rti: pg_sys::Index,
    rte: *mut pg_sys::RangeTblEntry,
) {
    unsafe {
        if let Some(prev) = PREV_SET_REL_PATHLIST_HOOK {
            pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| prev(root, rel, rti, rte));
        }
        if (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION
            || (*rel).indexlist.is_null()
            || (*rel).baserestrictinfo.is_null()
            || !matches!(
                (*rel).reloptkind,
                pg_sys::RelOptKind::RELOPT_BASEREL | pg_sys::RelOptKind::RELOPT_OTHER_MEMBER_REL
            )
        {
            return;
        }
        let conditions: Vec<TimeCondition> = list_ptrs((*rel).baserestrictinfo)
            .filter_map(|r| time_condition(r.cast(), (*rel).relid))
            .collect();
        if conditions.is_empty() {
            return;
        }
        for index in list_ptrs((*rel).indexlist).map(|p| p.cast::<pg_sys::IndexOptInfo>()) {
            add_index_path(root, rel, (*rte).relid, index, &conditions);
        }
    }
}

/// Recognises `objectid_timestamp(col) op t` or `t op objectid_timestamp(col)`, where `t` is a
/// timestamptz expression without columns or volatile functions (so it can bound a scan).
unsafe fn time_condition(
    rinfo: *mut pg_sys::RestrictInfo,
    relid: pg_sys::Index,
) -> Option<TimeCondition> {
    unsafe {
        let clause = (*rinfo).clause.cast::<pg_sys::Node>();
        if (*clause).type_ != pg_sys::NodeTag::T_OpExpr {
            return None;
        }
        let op = clause.cast::<pg_sys::OpExpr>();
        let args: Vec<*mut c_void> = list_ptrs((*op).args).collect();
        let [left, right] = args[..] else { return None };
        let ((call, function, schema), other, commuted) =
            if let Some(f) = time_function_call(left.cast()) {
                (f, right, false)
            } else if let Some(f) = time_function_call(right.cast()) {
                (f, left, true)
            } else {
                return None;
            };
        let other = other.cast::<pg_sys::Node>();
        if pg_sys::exprType(other) != pg_sys::TIMESTAMPTZOID
            || pg_sys::contain_var_clause(other)
            || pg_sys::contain_volatile_functions(other)
        {
            return None;
        }
        let column = pg_sys::list_nth((*call).args, 0).cast::<pg_sys::Var>();
        if (*column.cast::<pg_sys::Node>()).type_ != pg_sys::NodeTag::T_Var
            || (*column).varno as pg_sys::Index != relid
            || (*column).varlevelsup != 0
        {
            return None;
        }
        let family = pg_sys::get_opclass_family(pg_sys::TIMESTAMPTZ_BTREE_OPS_OID);
        let strategy = u16::try_from(pg_sys::get_op_opfamily_strategy((*op).opno, family)).ok()?;
        if !(1..=5).contains(&strategy) {
            return None;
        }
        let strategy = if commuted { 6 - strategy } else { strategy };
        let schema = pg_sys::get_namespace_name(schema);
        let [lower, upper, before] = function.bounds();
        Some(TimeCondition {
            function,
            rinfo,
            column,
            strategy,
            other: other.cast(),
            lower_bound: lookup_bound(schema, lower)?,
            upper_bound: lookup_bound(schema, upper)?,
            upper_bound_before: lookup_bound(schema, before)?,
        })
    }
}

/// The call if `node` is one of this extension's time functions (or, on 18, the built-in
/// `uuid_extract_timestamp`), with the schema to find the matching bound functions in.
unsafe fn time_function_call(
    node: *mut pg_sys::Node,
) -> Option<(*mut pg_sys::FuncExpr, TimeFunction, pg_sys::Oid)> {
    unsafe {
        if (*node).type_ != pg_sys::NodeTag::T_FuncExpr {
            return None;
        }
        let call = node.cast::<pg_sys::FuncExpr>();
        // The cheap tests first: this runs for every function call in every restriction, and
        // finding the extension reads pg_extension, which has no cache.
        let extension = || {
            let oid = pg_sys::get_extension_oid(c"pg_objectid".as_ptr(), true);
            (oid != pg_sys::InvalidOid).then_some(oid)
        };
        // 18's own reads a v7's milliseconds exactly as ours does, and it is the one an
        // unqualified call reaches there. (17's knows v1 only: a v7 gives NULL, so no bound.)
        #[cfg(feature = "pg18")]
        if (*call).funcid == pg_sys::Oid::from(pg_sys::F_UUID_EXTRACT_TIMESTAMP) {
            let schema = pg_sys::get_extension_schema(extension()?);
            return Some((call, TimeFunction::UuidV7, schema));
        }
        let name = pg_sys::get_func_name((*call).funcid);
        if name.is_null() {
            return None;
        }
        let function = TimeFunction::of(CStr::from_ptr(name))?;
        let owner = pg_sys::getExtensionOfObject(pg_sys::ProcedureRelationId, (*call).funcid);
        (Some(owner) == extension())
            .then(|| (call, function, pg_sys::get_func_namespace((*call).funcid)))
    }
}

unsafe fn lookup_bound(schema: *mut c_char, name: &CStr) -> Option<pg_sys::Oid> {
    unsafe {
        let mut qualified = pg_sys::lappend(ptr::null_mut(), pg_sys::makeString(schema).cast());
        qualified = pg_sys::lappend(
            qualified,
            pg_sys::makeString(name.as_ptr().cast_mut()).cast(),
        );
        let argtypes = [pg_sys::TIMESTAMPTZOID];
        let oid = pg_sys::LookupFuncName(qualified, 1, argtypes.as_ptr(), true);
        (oid != pg_sys::InvalidOid).then_some(oid)
    }
}

/// Offers a scan of `index` bounded by every condition on its first column, if it is a btree
/// over objectid.
unsafe fn add_index_path(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    table: pg_sys::Oid,
    index: *mut pg_sys::IndexOptInfo,
    conditions: &[TimeCondition],
) {
    unsafe {
        if (*index).relam != pg_sys::BTREE_AM_OID || (*index).ncolumns < 1 {
            return;
        }
        let key = *(*index).indexkeys;
        let family = *(*index).opfamily;
        let keytype = *(*index).opcintype;
        let mut clauses: *mut pg_sys::List = ptr::null_mut();
        let mut v7_known: Option<bool> = None;
        for c in conditions
            .iter()
            .filter(|c| i32::from((*c.column).varattno) == key && (*c.column).vartype == keytype)
        {
            if c.function == TimeFunction::UuidV7
                && !*v7_known.get_or_insert_with(|| only_v7(rel, table, key))
            {
                continue;
            }
            let member = |strategy: u32| {
                pg_sys::get_opfamily_member(family, keytype, keytype, strategy as i16)
            };
            let (ge, le) = (
                member(pg_sys::BTGreaterEqualStrategyNumber),
                member(pg_sys::BTLessEqualStrategyNumber),
            );
            if ge == pg_sys::InvalidOid || le == pg_sys::InvalidOid {
                return;
            }
            let mut quals: *mut pg_sys::List = ptr::null_mut();
            if c.strategy >= 3 {
                quals = pg_sys::lappend(
                    quals,
                    bound_qual(root, c, ge, c.lower_bound, keytype).cast(),
                );
            }
            let upper = if c.strategy == 1 {
                c.upper_bound_before
            } else {
                c.upper_bound
            };
            if c.strategy <= 3 {
                quals = pg_sys::lappend(quals, bound_qual(root, c, le, upper, keytype).cast());
            }
            let clause = pg_sys::palloc0(core::mem::size_of::<pg_sys::IndexClause>())
                .cast::<pg_sys::IndexClause>();
            (*clause).type_ = pg_sys::NodeTag::T_IndexClause;
            (*clause).rinfo = c.rinfo;
            (*clause).indexquals = quals;
            // Whole seconds: the original condition is rechecked on each row.
            (*clause).lossy = true;
            (*clause).indexcol = 0;
            clauses = pg_sys::lappend(clauses, clause.cast());
        }
        if clauses.is_null() {
            return;
        }
        let direction = pg_sys::ScanDirection::ForwardScanDirection;
        let pathkeys = pg_sys::truncate_useless_pathkeys(
            root,
            rel,
            pg_sys::build_index_pathkeys(root, index, direction),
        );
        let path = pg_sys::create_index_path(
            root,
            index,
            clauses,
            ptr::null_mut(),
            ptr::null_mut(),
            pathkeys,
            direction,
            index_only(rel, index),
            ptr::null_mut(),
            1.0,
            false,
        );
        pg_sys::add_path(rel, path.cast());
    }
}

/// Whether the scan can answer from the index alone, as PostgreSQL decides for the paths it builds
/// itself: every column the query needs from `rel`, in its output or its conditions (our rechecked
/// time condition among them), is one the index can return.
unsafe fn index_only(rel: *mut pg_sys::RelOptInfo, index: *mut pg_sys::IndexOptInfo) -> bool {
    unsafe {
        if !pg_sys::enable_indexonlyscan {
            return false;
        }
        let relid = (*rel).relid;
        let mut needed: *mut pg_sys::Bitmapset = ptr::null_mut();
        pg_sys::pull_varattnos((*(*rel).reltarget).exprs.cast(), relid, &mut needed);
        for r in list_ptrs((*rel).baserestrictinfo) {
            let clause = (*r.cast::<pg_sys::RestrictInfo>()).clause;
            pg_sys::pull_varattnos(clause.cast(), relid, &mut needed);
        }
        let columns = usize::try_from((*index).ncolumns).unwrap_or(0);
        let mut member = -1;
        loop {
            member = pg_sys::bms_next_member(needed, member);
            if member < 0 {
                return true;
            }
            let attno = member + pg_sys::FirstLowInvalidHeapAttributeNumber;
            // System columns and whole-row references never come from an index.
            if attno <= 0 {
                return false;
            }
            let returnable = (0..columns)
                .any(|i| *(*index).indexkeys.add(i) == attno && *(*index).canreturn.add(i));
            if !returnable {
                return false;
            }
        }
    }
}

/// Whether column `attno` of `rel` can hold only version-7 UUIDs (or NULL): a condition of the
/// query, or a valid CHECK constraint of the table, says `uuid_extract_version(column) = 7`.
unsafe fn only_v7(rel: *mut pg_sys::RelOptInfo, table: pg_sys::Oid, attno: i32) -> bool {
    unsafe {
        let relid = (*rel).relid;
        if list_ptrs((*rel).baserestrictinfo).any(|r| {
            version_is_7(
                (*r.cast::<pg_sys::RestrictInfo>()).clause.cast(),
                attno,
                relid,
            )
        }) {
            return true;
        }
        let relation = pg_sys::RelationIdGetRelation(table);
        if relation.is_null() {
            return false;
        }
        let constr = (*(*relation).rd_att).constr;
        let mut found = false;
        if !constr.is_null() {
            for i in 0..usize::from((*constr).num_check) {
                let check = (*constr).check.add(i);
                #[cfg(feature = "pg18")]
                let trusted = (*check).ccvalid && (*check).ccenforced;
                #[cfg(not(feature = "pg18"))]
                let trusted = (*check).ccvalid;
                // CHECK expressions refer to the table as range table entry 1.
                if trusted && version_is_7(pg_sys::stringToNode((*check).ccbin).cast(), attno, 1) {
                    found = true;
                    break;
                }
            }
        }
        pg_sys::RelationClose(relation);
        found
    }
}

/// `uuid_extract_version(column) = 7`, alone or among the arms of an AND.
unsafe fn version_is_7(node: *mut pg_sys::Node, attno: i32, varno: pg_sys::Index) -> bool {
    unsafe {
        if node.is_null() {
            return false;
        }
        match (*node).type_ {
            pg_sys::NodeTag::T_BoolExpr => {
                let b = node.cast::<pg_sys::BoolExpr>();
                (*b).boolop == pg_sys::BoolExprType::AND_EXPR
                    && list_ptrs((*b).args).any(|a| version_is_7(a.cast(), attno, varno))
            }
            pg_sys::NodeTag::T_OpExpr => {
                let op = node.cast::<pg_sys::OpExpr>();
                let name = pg_sys::get_opname((*op).opno);
                if name.is_null() || CStr::from_ptr(name) != c"=" {
                    return false;
                }
                let args: Vec<*mut c_void> = list_ptrs((*op).args).collect();
                let [left, right] = args[..] else {
                    return false;
                };
                (is_version_call(left.cast(), attno, varno) && is_const_7(right.cast()))
                    || (is_version_call(right.cast(), attno, varno) && is_const_7(left.cast()))
            }
            _ => false,
        }
    }
}

/// `uuid_extract_version(column)`, ours or PostgreSQL's own (17+): they agree on versions.
unsafe fn is_version_call(node: *mut pg_sys::Node, attno: i32, varno: pg_sys::Index) -> bool {
    unsafe {
        if (*node).type_ != pg_sys::NodeTag::T_FuncExpr {
            return false;
        }
        let call = node.cast::<pg_sys::FuncExpr>();
        let name = pg_sys::get_func_name((*call).funcid);
        if name.is_null() || CStr::from_ptr(name) != c"uuid_extract_version" {
            return false;
        }
        let arg = pg_sys::list_nth((*call).args, 0).cast::<pg_sys::Node>();
        if (*arg).type_ != pg_sys::NodeTag::T_Var {
            return false;
        }
        let var = arg.cast::<pg_sys::Var>();
        i32::from((*var).varattno) == attno
            && (*var).varno as pg_sys::Index == varno
            && (*var).varlevelsup == 0
    }
}

unsafe fn is_const_7(node: *mut pg_sys::Node) -> bool {
    unsafe {
        if (*node).type_ != pg_sys::NodeTag::T_Const {
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

/// `column <op> bound(other)` as a RestrictInfo for the index.
unsafe fn bound_qual(
    root: *mut pg_sys::PlannerInfo,
    c: &TimeCondition,
    op: pg_sys::Oid,
    bound: pg_sys::Oid,
    keytype: pg_sys::Oid,
) -> *mut pg_sys::RestrictInfo {
    unsafe {
        let arg = pg_sys::copyObjectImpl(c.other.cast());
        let call = pg_sys::makeFuncExpr(
            bound,
            keytype,
            pg_sys::lappend(ptr::null_mut(), arg),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
            pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
        );
        // Folded to a constant where `other` is one, as the planner folds an explicit
        // `id >= objectid_lower_bound('…')`, so that the index path is costed from the column's
        // statistics like that one rather than with default guesses.
        let call = pg_sys::eval_const_expressions(root, call.cast());
        let expr = pg_sys::make_opclause(
            op,
            pg_sys::BOOLOID,
            false,
            pg_sys::copyObjectImpl(c.column.cast()).cast(),
            call.cast(),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
        );
        let level = (*c.rinfo).security_level;
        #[cfg(feature = "pg13")]
        let _ = root;
        #[cfg(feature = "pg13")]
        return pg_sys::make_restrictinfo(
            expr,
            true,
            false,
            false,
            level,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        );
        #[cfg(any(feature = "pg14", feature = "pg15"))]
        return pg_sys::make_restrictinfo(
            root,
            expr,
            true,
            false,
            false,
            level,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        );
        #[cfg(any(feature = "pg16", feature = "pg17", feature = "pg18"))]
        return pg_sys::make_restrictinfo(
            root,
            expr,
            true,
            false,
            false,
            false,
            level,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        );
    }
}

/// The pointer elements of a PostgreSQL List (NIL is empty).
unsafe fn list_ptrs(list: *mut pg_sys::List) -> impl Iterator<Item = *mut c_void> {
    let len = if list.is_null() {
        0
    } else {
        unsafe { (*list).length }
    };
    (0..len as usize).map(move |i| unsafe { (*(*list).elements.add(i)).ptr_value })
}
