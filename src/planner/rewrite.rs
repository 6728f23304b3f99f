//! Rewriting the time conditions on one relation into conditions on its key.
//!
//! Runs from `get_relation_info_hook` for each base relation of a query level, that is from
//! `add_base_rels_to_query` at the start of `query_planner` (planmain.c), after the level's
//! expressions have been preprocessed and before `deconstruct_jointree` hands its conditions out
//! to the relations. Everything PostgreSQL does with a relation's conditions comes later and sees
//! the rewritten ones: partition pruning, partial-index proofs (`check_index_predicates`),
//! index matching for every access method, TABLESAMPLE, inheritance, costs and row estimates.
//!
//! Where a condition may be rewritten: only in *qual position*, the conditions of a query
//! level's WHERE clause and of its JOIN … ON clauses (`FromExpr.quals`, `JoinExpr.quals`), and
//! there only through AND and OR, never under NOT or inside any other expression. In those
//! places a row passes when the whole condition is true; NULL and false both reject it. Through
//! AND and OR, whether the whole is true depends only on which parts are true, so replacing a
//! part with one that is true for exactly the same rows cannot change the result, even where the
//! replacement is NULL where the original was false.

use pgrx::pg_sys;

use super::catalog::{self, Catalog};
use super::condition::{recognise, version_7_column, Strategy, TimeCondition, TimeFunction};
use super::proof;
use crate::nodes::{and_arms, is_a, is_bool, list_of, list_ptrs};

struct Level<'a> {
    root: *mut pg_sys::PlannerInfo,
    catalog: &'a Catalog,
    /// The relation being planned: its range table index, table OID, and whether the scan
    /// includes inheritance children or partitions.
    varno: pg_sys::Index,
    relid: pg_sys::Oid,
    inh: bool,
    /// Whether an index, partition key or CHECK constraint needs `objectid_timestamp(...)` as
    /// written (proof::condition_needed_as_written); asked once.
    objectid_condition_kept: Option<bool>,
}

/// Rewrites the time conditions on relation `rel` (table `relid`) found in the query level
/// `root` is planning.
pub(crate) unsafe fn rewrite_conditions_on(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    relid: pg_sys::Oid,
    inh: bool,
    catalog: &Catalog,
) {
    unsafe {
        let parse = (*root).parse;
        if parse.is_null() || (*parse).jointree.is_null() {
            return;
        }
        let mut level = Level {
            root,
            catalog,
            varno: (*rel).relid,
            relid,
            inh,
            objectid_condition_kept: None,
        };
        walk_jointree((*parse).jointree.cast(), &mut level);
    }
}

unsafe fn walk_jointree(node: *mut pg_sys::Node, level: &mut Level) {
    unsafe {
        if is_a(node, pg_sys::NodeTag::T_FromExpr) {
            let from = node.cast::<pg_sys::FromExpr>();
            (*from).quals = rewrite_qual((*from).quals, level);
            for item in list_ptrs((*from).fromlist) {
                walk_jointree(item.cast(), level);
            }
        } else if is_a(node, pg_sys::NodeTag::T_JoinExpr) {
            let join = node.cast::<pg_sys::JoinExpr>();
            (*join).quals = rewrite_qual((*join).quals, level);
            walk_jointree((*join).larg, level);
            walk_jointree((*join).rarg, level);
        }
    }
}

/// A qual (by now an implicit-AND List) with its time conditions rewritten.
unsafe fn rewrite_qual(node: *mut pg_sys::Node, level: &mut Level) -> *mut pg_sys::Node {
    unsafe {
        if node.is_null() {
            return node;
        }
        let conjuncts = rewrite_positive(node, &[], level);
        if is_a(node, pg_sys::NodeTag::T_List) {
            list_of(conjuncts).cast()
        } else {
            and_of(conjuncts)
        }
    }
}

/// The conjuncts that, in qual position, pass exactly the rows `node` passes. `v7_columns` are
/// the columns that enclosing ANDs require to hold a version-7 UUID.
unsafe fn rewrite_positive(
    node: *mut pg_sys::Node,
    v7_columns: &[*mut pg_sys::Var],
    level: &mut Level,
) -> Vec<*mut pg_sys::Node> {
    unsafe {
        if let Some(args) = and_arms(node) {
            // A row passes an AND only if it passes every arm, so what one arm requires holds
            // while another is evaluated: `uuid_extract_version(id) = 7 AND <time on id>`.
            let mut known = v7_columns.to_vec();
            known.extend(list_ptrs(args).filter_map(|a| version_7_column(a.cast(), level.catalog)));
            return list_ptrs(args)
                .flat_map(|a| rewrite_positive(a.cast(), &known, level))
                .collect();
        }
        if is_bool(node, pg_sys::BoolExprType::OR_EXPR) {
            let or = node.cast::<pg_sys::BoolExpr>();
            let arms: Vec<*mut pg_sys::Node> = list_ptrs((*or).args)
                .map(|a| and_of(rewrite_positive(a.cast(), v7_columns, level)))
                .collect();
            (*or).args = list_of(arms);
            return vec![node];
        }
        match recognise(node, level.catalog) {
            Some(condition) => rewrite_condition(node, &condition, v7_columns, level),
            None => vec![node],
        }
    }
}

unsafe fn rewrite_condition(
    node: *mut pg_sys::Node,
    c: &TimeCondition,
    v7_columns: &[*mut pg_sys::Var],
    level: &mut Level,
) -> Vec<*mut pg_sys::Node> {
    unsafe {
        let column = &*c.column;
        if column.varno as pg_sys::Index != level.varno || column.varlevelsup != 0 {
            return vec![node];
        }
        // The time must have one value per row, computed as the original condition computed it.
        // A subquery is left alone too: copying it would plan it twice.
        if pg_sys::contain_volatile_functions(c.other) || pg_sys::contain_subplans(c.other) {
            return vec![node];
        }
        // An equality with another relation's column is a join clause that hash and merge joins
        // can use; two range bounds could not.
        if c.strategy == Strategy::Equal && pg_sys::contain_vars_of_level(c.other, 0) {
            return vec![node];
        }
        if !executable(node, c, level) {
            return vec![node];
        }
        match c.function {
            TimeFunction::ObjectId => {
                let exact = bound_conditions(c, level);
                let kept = *level.objectid_condition_kept.get_or_insert_with(|| {
                    proof::condition_needed_as_written(
                        level.relid,
                        level.inh,
                        level.catalog.objectid_timestamp,
                    )
                });
                if kept {
                    core::iter::once(node).chain(exact).collect()
                } else {
                    exact
                }
            }
            TimeFunction::Uuid => {
                let attno = column.varattno;
                let known = v7_columns.iter().any(|&v| {
                    (*v).varno == column.varno
                        && (*v).varattno == attno
                        && (*v).varlevelsup == column.varlevelsup
                });
                if !known
                    && !proof::check_says_only_v7(level.relid, attno, level.inh, level.catalog)
                {
                    return vec![node];
                }
                core::iter::once(node)
                    .chain(bound_conditions(c, level))
                    .collect()
            }
        }
    }
}

/// The (operator, bound function) pairs a condition becomes.
///
/// For objectid, conditions on the objectid itself that hold for exactly the rows the time
/// condition holds for (see `crate::kernel::time::first_at_or_after`). For uuid, conditions every
/// version-7 UUID satisfying the time condition satisfies (bounds of whole milliseconds); the
/// time condition stays next to them.
fn bounds(c: &TimeCondition, k: &Catalog) -> (Vec<(pg_sys::Oid, pg_sys::Oid)>, pg_sys::Oid) {
    match c.function {
        TimeFunction::ObjectId => {
            let (ge, le) = (k.objectid_ge, k.objectid_le);
            let pairs = match c.strategy {
                Strategy::GreaterEqual => vec![(ge, k.first_at_or_after)],
                Strategy::Greater => vec![(ge, k.first_after)],
                Strategy::LessEqual => vec![(le, k.last_at_or_before)],
                Strategy::Less => vec![(le, k.last_before)],
                Strategy::Equal => vec![(ge, k.first_at_or_after), (le, k.last_at_or_before)],
            };
            (pairs, k.objectid_type)
        }
        TimeFunction::Uuid => {
            let (ge, le) = (k.uuid_ge, k.uuid_le);
            let pairs = match c.strategy {
                Strategy::GreaterEqual | Strategy::Greater => vec![(ge, k.uuidv7_lower_bound)],
                Strategy::LessEqual => vec![(le, k.uuidv7_upper_bound)],
                Strategy::Less => vec![(le, k.uuidv7_upper_bound_before)],
                Strategy::Equal => vec![(ge, k.uuidv7_lower_bound), (le, k.uuidv7_upper_bound)],
            };
            (pairs, pg_sys::UUIDOID)
        }
    }
}

/// Whether the current user may run everything the rewritten condition calls (an
/// administrator may have revoked EXECUTE on a bound function), and everything the original
/// `node` calls that the rewrite may drop (`objectid_timestamp` and the comparison's function,
/// which the executor would otherwise refuse): the rewrite must neither fail where the original
/// runs nor run where it fails. (A version-7 uuid condition always stays as written.)
///
/// The answer holds for the current user only, so the plan is marked as depending on the role,
/// as `create_foreignscan_plan` (createplan.c) marks a plan that assumed who the current user
/// is: plancache.c then plans again for any other user (`planRoleId`, `CheckCachedPlan`)
/// instead of running a cached generic plan, made for one role, for another after SET ROLE, in
/// a SECURITY DEFINER function or behind a pooler that switches roles. GRANT and REVOKE are
/// caught by making the plan depend on the pg_proc row of every function checked here
/// (depends_on_function): a GRANT or REVOKE changes that row, and the plan is made again.
/// (Before 18, a SQL-language function keeps its plans for the transaction outside the plan
/// cache, whatever the role: PostgreSQL's own limitation, which docs/time-queries.md states.)
unsafe fn executable(node: *mut pg_sys::Node, c: &TimeCondition, level: &Level) -> bool {
    unsafe {
        (*(*level.root).glob).dependsOnRole = true;
        let mut functions = Vec::new();
        if c.function == TimeFunction::ObjectId {
            functions.push(level.catalog.objectid_timestamp);
            functions.push(pg_sys::get_opcode((*node.cast::<pg_sys::OpExpr>()).opno));
        }
        for (op, bound) in bounds(c, level.catalog).0 {
            functions.push(bound);
            functions.push(pg_sys::get_opcode(op));
        }
        // Every one is recorded, also after one that may not be called: a later GRANT of it
        // makes the plan again, now rewritten.
        let mut all = true;
        for f in functions {
            depends_on_function(level.root, f);
            all &= catalog::executable(f);
        }
        all
    }
}

/// Makes the plan depend on function `function`'s pg_proc row, as record_plan_function_dependency
/// (setrefs.c) does for the functions a plan calls, but for built-in ones too, which it leaves
/// out as never changing: a REVOKE of EXECUTE on one (the comparison the rewrite drops) changes
/// its row, and must make a plan the rewrite shaped for the old rights again.
unsafe fn depends_on_function(root: *mut pg_sys::PlannerInfo, function: pg_sys::Oid) {
    unsafe {
        let item = pg_sys::palloc0(core::mem::size_of::<pg_sys::PlanInvalItem>())
            .cast::<pg_sys::PlanInvalItem>();
        (*item).type_ = pg_sys::NodeTag::T_PlanInvalItem;
        (*item).cacheId = pg_sys::SysCacheIdentifier::PROCOID as core::ffi::c_int;
        (*item).hashValue = pg_sys::GetSysCacheHashValue(
            (*item).cacheId,
            pg_sys::Datum::from(function),
            pg_sys::Datum::from(0),
            pg_sys::Datum::from(0),
            pg_sys::Datum::from(0),
        );
        let glob = (*root).glob;
        (*glob).invalItems = pg_sys::lappend((*glob).invalItems, item.cast());
    }
}

/// The conditions on the key that `bounds` describes.
unsafe fn bound_conditions(c: &TimeCondition, level: &Level) -> Vec<*mut pg_sys::Node> {
    let (pairs, keytype) = bounds(c, level.catalog);
    pairs
        .into_iter()
        .map(|(op, bound)| unsafe { bound_condition(c, level, op, bound, keytype) })
        .collect()
}

/// `arg <op> bound(other)`, simplified as the level's other conditions already are (a bound of a
/// constant time becomes a constant id).
unsafe fn bound_condition(
    c: &TimeCondition,
    level: &Level,
    op: pg_sys::Oid,
    bound: pg_sys::Oid,
    keytype: pg_sys::Oid,
) -> *mut pg_sys::Node {
    unsafe {
        let call = pg_sys::makeFuncExpr(
            bound,
            keytype,
            list_of([pg_sys::copyObjectImpl(c.other.cast()).cast()]),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
            pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
        );
        let expr = pg_sys::make_opclause(
            op,
            pg_sys::BOOLOID,
            false,
            pg_sys::copyObjectImpl(c.arg.cast()).cast(),
            call.cast(),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
        );
        pg_sys::eval_const_expressions(level.root, expr.cast())
    }
}

/// One node for a list of conjuncts.
unsafe fn and_of(conjuncts: Vec<*mut pg_sys::Node>) -> *mut pg_sys::Node {
    unsafe {
        match conjuncts[..] {
            [single] => single,
            _ => pg_sys::make_andclause(list_of(conjuncts)).cast(),
        }
    }
}
