//! The foreign-key checks and actions that a batch's rewrite satisfies by construction, left out
//! of that one statement (`pg_objectid.rekey_implied_checks`, on by default).
//!
//! PostgreSQL runs a query per changed key and foreign key (`RI_FKey_noaction_upd`,
//! `RI_FKey_cascade_upd`, …, on the key's table) and one per changed referencing row
//! (`RI_FKey_check_upd`), whatever changed them. The rewrite statement changes every key of the
//! batch and every row referencing one of them to the same new key, so those queries can only
//! find what the statement made; they cost about as much as the naive cascading UPDATE's whole
//! cascade (docs/benchmarks.md, section 8). Left out only where the construction holds:
//!
//! - foreign keys whose referenced column is the key itself (depth 1), made on the key owner's
//!   tables, which the rewrite statement changes (another owner's tables are rewritten in
//!   statements of their own and keep every check), with their partitions' clones of them;
//! - at READ COMMITTED: the statement's snapshot is taken after the batch's keys are locked FOR
//!   UPDATE (the map query), and every row that comes to reference a key takes FOR KEY SHARE on
//!   it first (its own check, `RI_FKey_check`), so every reference to a batch key that was
//!   committed is visible to the rewrite, and every later one waits for the batch and then fails
//!   (23503, or 40001 under REPEATABLE READ). With a transaction snapshot the rewrite could miss
//!   references committed after it: PostgreSQL's checks are kept;
//! - where nothing of the owner's can change what the statement stores or sees, decided per table
//!   as PostgreSQL decides what runs (rekey_fast_path.sql from the catalogs before the batch, and
//!   `leave_out` on the executor's own relations and copy of the triggers, so that nothing
//!   attached after this was decided goes unseen): row-level security that applies to the owner,
//!   who runs the statement (`check_enable_rls`), could hide a row from it, and a rule for UPDATE
//!   rewrite it, so either keeps every check (and both are refused before the batch anyway); a
//!   BEFORE row trigger that fires (`TriggerEnabled`: its events, its UPDATE OF columns) could
//!   store another value than the new key or keep the row from changing, so its table keeps its
//!   per-row checks (`RI_FKey_check_upd`: the value it now holds is a key), and the check after the
//!   statement catches a row left with an old key; an AFTER trigger, a policy for other roles, a
//!   trigger that does not fire change nothing the checks look at;
//! - and checked after the statement, set-based: the owner's code can still run inside it (a
//!   function in a constraint or an index, a type's support functions) and write the owner's
//!   tables mid-statement, so one query per foreign key, right after the rewrite, looks for a
//!   referencing row that holds one of the batch's old or new keys without its key row, which is
//!   what PostgreSQL's own checks of those keys would have refused (left out in turn where the
//!   tables hold nothing of their owner's that an UPDATE could run: see `implied_checks`);
//! - when the mapping table is unique on old_key, so that what the batch recorded names one new key
//!   per key (the rewrite itself takes every column's new key from the batch's own arrays, through
//!   `rekey_new_key`, which refuses a key given twice);
//! - decided before any statement of the batch runs, so that a foreign key made by code that runs
//!   during the batch keeps its checks (its triggers are not among those decided on);
//! - for the toolkit's own statements only: `rekey_batch_as_owner` can be called by anyone with
//!   statements of their own, so they are compared with those of the rekey's trusted record;
//! - in the rewrite's own executor only: not one started while any planning is under way (the
//!   planner folds the owner's functions) or inside the rewrite's own ExecutorStart, where the
//!   owner's code could run a statement of the very same text.
//!
//! The key's table rows really became their new keys is checked by the batch itself (its count,
//! rekey_batch.sql). Mirrors nothing in PostgreSQL, which has no statement that changes both
//! sides of a foreign key; the triggers are dropped from the executor's copy of each result
//! relation's trigger list (`InitResultRelInfo` copies it from the relation cache), so that the
//! queries the statement itself runs — a table owner's functions — keep all of theirs.

use std::cell::RefCell;
use std::ffi::{c_int, CStr, CString};

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

static IMPLIED_CHECKS: GucSetting<bool> = GucSetting::<bool>::new(true);

static mut PREV_EXECUTOR_START_HOOK: pg_sys::ExecutorStart_hook_type = None;
static mut PREV_PLANNER_HOOK: pg_sys::planner_hook_type = None;
static mut HOOK_INSTALLED: bool = false;
/// How many plannings are under way in this backend: an executor started while one is (by a
/// function the planner folds, say) is never the armed statement's own, whatever its text.
static mut PLANNING: u32 = 0;

/// The statement whose executor drops `triggers`, until its executor has started.
struct Armed {
    query: CString,
    triggers: Vec<pg_sys::Oid>,
}

/// What `implied_checks` read last (catalog_epoch.rs), for a table and its three statements.
/// The rekey's record can change without an invalidation (it is a table's rows), but an answer
/// kept stays true: it says that these very statements are ones the toolkit wrote for this table,
/// and what they rely on (the tables, foreign keys and mapping table the catalogs describe) has
/// not changed.
type Derived = super::catalog_epoch::Kept<(pg_sys::Oid, [String; 3]), Implied>;

thread_local! {
    static ARMED: RefCell<Option<Armed>> = const { RefCell::new(None) };
    static DERIVED: RefCell<Option<Derived>> = const { RefCell::new(None) };
    /// Whether the last batch's rewrite took the fast path (`Implied::fast_path`, or what its
    /// executor kept beyond it), for `rekey_last_fast_path`.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Records what a batch decided (None: no rewrite yet), before its rewrite runs.
pub(super) fn set_last(fast_path: Option<String>) {
    LAST.with(|l| *l.borrow_mut() = fast_path);
}

/// Whether the rewrite of the last rekey batch this session ran took the fast path, and if not
/// (or not on every table) why; NULL before any batch rewrote keys. rekey_batch records it.
#[pg_extern(sql = false)]
fn rekey_last_fast_path() -> Option<String> {
    LAST.with(|l| l.borrow().clone())
}

pub(super) fn init() {
    GucRegistry::define_bool_guc(
        c"pg_objectid.rekey_implied_checks",
        c"Lets a rekey batch leave out the foreign-key checks that its rewrite satisfies by construction.",
        c"When on, the statement that rewrites a batch's keys and the columns referencing them \
          does not run PostgreSQL's per-key and per-row checks of the foreign keys it keeps \
          consistent itself (see docs/migration.md). When off, PostgreSQL runs them all.",
        &IMPLIED_CHECKS,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// The checks a batch's rewrite may leave out, and the set-based checks that replace them.
#[derive(Clone)]
pub(super) struct Implied {
    /// The triggers to leave out of the rewrite statement's executor.
    pub triggers: Vec<pg_sys::Oid>,
    /// One query per foreign key whose triggers are left out, run right after the rewrite with
    /// $1 the batch's old and new keys: a row naming the foreign key when a referencing row holds
    /// one of those keys without a key row for it (each key's row probed first: most have one).
    /// Empty where the tables have nothing the owner could run inside the statement.
    pub verify: Vec<String>,
    /// Whether the rewrite takes the fast path, and if not (or not on every table) why, as
    /// rekey_fast_path says it: what rekey_status shows of the batch.
    pub fast_path: String,
}

impl Implied {
    fn none(why: impl Into<String>) -> Self {
        Implied {
            triggers: Vec::new(),
            verify: Vec::new(),
            fast_path: why.into(),
        }
    }
}

/// What `rewrite_query` may leave out: nothing when the setting is off, the transaction uses one
/// snapshot throughout, the three statements are not exactly the batch's (rekey_statements from
/// the rekey's trusted record: anyone may call rekey_batch_as_owner, and the construction holds
/// only for the window, lock and mapping, and rewrite that the toolkit writes), rekey_fast_path
/// says off (row-level security that applies to the owner, a rule for UPDATE, the mapping table
/// not unique on old_key: the owner may drop the key the toolkit made it with, and what the
/// mapping records must name one new key per key); and not the per-row checks of a table where a
/// BEFORE row trigger fires (rekey_fired_triggers: a partition that only receives moved rows is
/// opened by the executor after it starts, so the executor's own look cannot see it).
///
/// The owner's code can still run inside the statement (a function in a constraint, an index, a
/// type's support functions: the catalogs cannot name every way) and write the owner's tables
/// mid-statement; `verify` catches what it could leave behind, as PostgreSQL's checks would. It
/// is empty only where no such code can run at all: every table of the set (and partition) a
/// plain or partitioned table with no constraint but keys and NOT NULL, only plain btree indexes
/// of built-in operator classes, only columns of built-in types (below FirstNormalObjectId, so no
/// domain, range or composite of the owner's) and none generated, no statistics object with
/// expressions, no partition key with an expression or an operator class of its own: what such an
/// UPDATE runs is PostgreSQL's own code.
pub(super) fn implied_checks(
    relid: pg_sys::Oid,
    window_query: &str,
    map_query: &str,
    rewrite_query: &str,
) -> Implied {
    // SAFETY: reads a backend-local variable.
    let one_snapshot =
        unsafe { pg_sys::XactIsoLevel } >= pg_sys::XACT_REPEATABLE_READ as std::ffi::c_int;
    if !IMPLIED_CHECKS.get() {
        return Implied::none("off: pg_objectid.rekey_implied_checks is off");
    }
    if one_snapshot {
        return Implied::none("off: the transaction is REPEATABLE READ or SERIALIZABLE, whose one snapshot could miss a reference committed during the batch");
    }
    super::catalog_epoch::kept(
        &DERIVED,
        (
            relid,
            [window_query, map_query, rewrite_query].map(String::from),
        ),
        || derive(relid, window_query, map_query, rewrite_query),
    )
}

/// What `implied_checks` answers, read from the catalogs and the rekey's trusted record.
fn derive(relid: pg_sys::Oid, window_query: &str, map_query: &str, rewrite_query: &str) -> Implied {
    // Statistics objects on expressions exist from 14 on.
    #[cfg(feature = "pg13")]
    let statistics_with_expressions = "false";
    #[cfg(not(feature = "pg13"))]
    let statistics_with_expressions = "EXISTS (SELECT FROM pg_catalog.pg_statistic_ext e
                                                WHERE e.stxrelid OPERATOR(pg_catalog.=) x.relid AND e.stxexprs IS NOT NULL)";
    let query = format!("WITH RECURSIVE st AS (SELECT s.* FROM objectid_internal.rekey_state_of($1::pg_catalog.regclass) s
                                WHERE s.relid IS NOT NULL AND s.finished_at IS NULL),
              cols AS MATERIALIZED (SELECT ARRAY(SELECT c FROM objectid_internal.rekey_columns($1::pg_catalog.regclass) c) AS a),
              statements AS (SELECT objectid_internal.rekey_statements($1::pg_catalog.regclass, st.time_column, st.time_zone,
                                                                         objectid_internal.rekey_name(st.mapping_table), cols.a) AS s
                               FROM st, cols),
              tables AS (SELECT c.relid::pg_catalog.oid AS relid FROM cols, pg_catalog.unnest(cols.a) c
                         UNION
                         SELECT p.relid::pg_catalog.oid FROM cols, pg_catalog.unnest(cols.a) c,
                                LATERAL pg_catalog.pg_partition_tree(c.relid) p),
              key AS (SELECT a.attname FROM pg_catalog.pg_attribute a
                       WHERE a.attrelid OPERATOR(pg_catalog.=) $1
                         AND a.attname OPERATOR(pg_catalog.=) objectid_internal.rekey_key_column($1::pg_catalog.regclass)),
              roots AS (
                  SELECT c.oid, c.conname, c.conrelid, r.attname AS column_name
                    FROM pg_catalog.pg_constraint c
                    JOIN pg_catalog.pg_class t ON t.oid OPERATOR(pg_catalog.=) c.conrelid
                    JOIN pg_catalog.pg_class k ON k.oid OPERATOR(pg_catalog.=) c.confrelid
                    JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) k.oid
                    JOIN key ON key.attname OPERATOR(pg_catalog.=) a.attname
                    JOIN pg_catalog.pg_attribute r ON r.attrelid OPERATOR(pg_catalog.=) c.conrelid
                     AND r.attnum OPERATOR(pg_catalog.=) c.conkey[1]
                   WHERE c.contype OPERATOR(pg_catalog.=) 'f' AND c.conparentid OPERATOR(pg_catalog.=) 0::pg_catalog.oid
                     AND c.confrelid OPERATOR(pg_catalog.=) $1
                     AND pg_catalog.cardinality(c.confkey) OPERATOR(pg_catalog.=) 1
                     AND c.confkey[1] OPERATOR(pg_catalog.=) a.attnum
                     AND t.relowner OPERATOR(pg_catalog.=) k.relowner),
              fk (oid) AS (
                  SELECT roots.oid FROM roots
                  UNION ALL
                  SELECT c.oid FROM fk JOIN pg_catalog.pg_constraint c ON c.conparentid OPERATOR(pg_catalog.=) fk.oid),
              fast AS (SELECT objectid_internal.rekey_fast_path($1::pg_catalog.regclass, st.mapping_table, cols.a) AS path
                         FROM st, cols),
              allowed AS (
                  SELECT FROM statements
                   WHERE (statements.s).window_query OPERATOR(pg_catalog.=) $2
                     AND (statements.s).map_query OPERATOR(pg_catalog.=) $3
                     AND (statements.s).rewrite_query OPERATOR(pg_catalog.=) $4
                     AND (SELECT fast.path FROM fast) LIKE 'on%'),
              -- The tables where a BEFORE row trigger fires on the rewrite: their own per-row
              -- checks (that what the row holds now is a key) stay.
              before AS (SELECT f.relid::pg_catalog.oid AS relid FROM cols, objectid_internal.rekey_fired_triggers(cols.a) f
                          WHERE f.before)
         SELECT EXISTS (SELECT FROM allowed),
                coalesce((SELECT pg_catalog.array_agg(t.oid ORDER BY t.oid) FROM pg_catalog.pg_trigger t
                           WHERE t.tgisinternal AND t.tgconstraint IN (SELECT fk.oid FROM fk)
                             AND t.tgfoid IN ($5, $6, $7, $8, $9, $10)
                             AND NOT (t.tgfoid OPERATOR(pg_catalog.=) $5 AND t.tgrelid IN (SELECT before.relid FROM before))), '{{}}'),
                coalesce((SELECT pg_catalog.array_agg(pg_catalog.encode(pg_catalog.convert_to(pg_catalog.format(
                                 'SELECT %L::pg_catalog.text WHERE EXISTS (SELECT FROM pg_catalog.unnest($1) k (v)'
                                 ' WHERE NOT EXISTS (SELECT FROM %s p WHERE p.%I OPERATOR(pg_catalog.=) k.v)'
                                 ' AND EXISTS (SELECT FROM %s c WHERE c.%I OPERATOR(pg_catalog.=) k.v))',
                                 pg_catalog.format('%I on %s', roots.conname, objectid_internal.rekey_name(roots.conrelid)),
                                 objectid_internal.rekey_relation($1), key.attname,
                                 objectid_internal.rekey_relation(roots.conrelid), roots.column_name),
                                 pg_catalog.getdatabaseencoding()), 'hex')
                                 ORDER BY roots.oid)
                            FROM roots, key
                           WHERE EXISTS (SELECT FROM tables x JOIN pg_catalog.pg_class k ON k.oid OPERATOR(pg_catalog.=) x.relid
                                          WHERE k.relkind NOT IN ('r', 'p')
                                             OR EXISTS (SELECT FROM pg_catalog.pg_trigger u
                                                         WHERE u.tgrelid OPERATOR(pg_catalog.=) x.relid
                                                           AND NOT u.tgisinternal AND u.tgenabled OPERATOR(pg_catalog.<>) 'D')
                                             OR EXISTS (SELECT FROM pg_catalog.pg_constraint c
                                                         WHERE c.conrelid OPERATOR(pg_catalog.=) x.relid
                                                           AND c.contype NOT IN ('p', 'u', 'f', 'n'))
                                             OR EXISTS (SELECT FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic
                                                                ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid
                                                          JOIN pg_catalog.pg_am am ON am.oid OPERATOR(pg_catalog.=) ic.relam
                                                         WHERE i.indrelid OPERATOR(pg_catalog.=) x.relid
                                                           AND (i.indexprs IS NOT NULL OR i.indpred IS NOT NULL
                                                                OR am.amname OPERATOR(pg_catalog.<>) 'btree'
                                                                OR EXISTS (SELECT FROM pg_catalog.unnest(i.indclass) o
                                                                            WHERE o OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid)))
                                             OR EXISTS (SELECT FROM pg_catalog.pg_attribute a
                                                         WHERE a.attrelid OPERATOR(pg_catalog.=) x.relid AND a.attnum OPERATOR(pg_catalog.>) 0
                                                           AND NOT a.attisdropped
                                                           AND (a.atttypid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
                                                                OR a.attgenerated OPERATOR(pg_catalog.<>) ''))
                                             OR {statistics_with_expressions}
                                             OR EXISTS (SELECT FROM pg_catalog.pg_partitioned_table pt
                                                         WHERE pt.partrelid OPERATOR(pg_catalog.=) x.relid
                                                           AND (pt.partexprs IS NOT NULL
                                                                OR EXISTS (SELECT FROM pg_catalog.unnest(pt.partclass) o
                                                                            WHERE o OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid))))), '{{}}'),
                pg_catalog.encode(pg_catalog.convert_to(fast.path, pg_catalog.getdatabaseencoding()), 'hex')
           FROM fast");
    let args = [
        relid.into(),
        window_query.into(),
        map_query.into(),
        rewrite_query.into(),
        pg_sys::Oid::from(pg_sys::F_RI_FKEY_CHECK_UPD).into(),
        pg_sys::Oid::from(pg_sys::F_RI_FKEY_NOACTION_UPD).into(),
        pg_sys::Oid::from(pg_sys::F_RI_FKEY_RESTRICT_UPD).into(),
        pg_sys::Oid::from(pg_sys::F_RI_FKEY_CASCADE_UPD).into(),
        pg_sys::Oid::from(pg_sys::F_RI_FKEY_SETNULL_UPD).into(),
        pg_sys::Oid::from(pg_sys::F_RI_FKEY_SETDEFAULT_UPD).into(),
    ];
    // Read with a snapshot of its own (not the calling statement's), taken after implied_checks
    // read the invalidation count: whatever was committed before that count was read is seen,
    // and whatever is committed after it is counted before the answer is used again.
    type Row = (
        Option<bool>,
        Option<Vec<pg_sys::Oid>>,
        Option<Vec<String>>,
        Option<String>,
    );
    let (allowed, triggers, verify, fast_path): Row = Spi::connect_mut(|client| {
        let table = client.update(&query, None, &args)?;
        let row = table.first();
        Ok((row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?))
    })
    .unwrap_or_else(|e| match e {
        // No row: no rekey of the table is under way.
        pgrx::spi::SpiError::InvalidPosition => (None, None, None, None),
        e => error!("cannot read the foreign keys of the key: {e}"),
    });
    // Names come as the database encoding's bytes (hex), as they may be outside ASCII in a
    // database whose encoding is not UTF-8, which pgrx cannot read as text: then no check is left
    // out, and PostgreSQL's own checks run.
    let text = |hex_text: String| {
        hex::decode(hex_text)
            .ok()
            .and_then(|b| super::as_owner::readable(&b).map(str::to_owned))
    };
    let Some(fast_path) = fast_path else {
        return Implied::none("off: no rekey of the table is under way");
    };
    let fast_path =
        text(fast_path).unwrap_or_else(|| "off: a name is not readable in this encoding".into());
    if allowed != Some(true) {
        return Implied::none(if fast_path.starts_with("on") {
            "off: the batch's statements are not the ones its rekey's record makes".into()
        } else {
            fast_path
        });
    }
    let verify: Option<Vec<String>> = verify.and_then(|v| v.into_iter().map(text).collect());
    match (triggers, verify) {
        (Some(triggers), Some(verify)) if !triggers.is_empty() => Implied {
            triggers,
            verify,
            fast_path,
        },
        (_, None) => Implied::none("off: a name in the checks is not readable in this encoding"),
        _ => Implied::none("off: none of the foreign-key checks can be left out"),
    }
}

/// Runs `implied.verify` with the batch's old and new keys, right after the rewrite, in the
/// rewrite's user and security context: an error (23503) naming the foreign key when a
/// referencing row holds one of them without its key row, as PostgreSQL's own check would have
/// refused the statement.
pub(super) fn verify(
    implied: &Implied,
    keys: &[pgrx::datum::Uuid],
    new_keys: &[pgrx::datum::Uuid],
) {
    if implied.verify.is_empty() {
        return;
    }
    let all: Vec<pgrx::datum::Uuid> = keys.iter().chain(new_keys).copied().collect();
    // A probe of each key's row and of its references, through their indexes: a join that reads
    // a whole table per batch (hash or merge) would cost more than the checks it replaces.
    // SAFETY: at the caller's operation's own nest level, undone with the rest of its settings.
    unsafe {
        super::as_owner::set_at_this_level("enable_hashjoin", "off");
        super::as_owner::set_at_this_level("enable_mergejoin", "off");
    }
    for query in &implied.verify {
        let broken =
            Spi::get_one_with_args::<String>(query, &[all.clone().into()]).unwrap_or_else(|e| {
                match e {
                    pgrx::spi::SpiError::InvalidPosition => None,
                    e => error!("cannot check the rekey batch's foreign keys: {e}"),
                }
            });
        if let Some(fk) = broken {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_FOREIGN_KEY_VIOLATION,
                format!("the rekey batch would leave rows without their key row: foreign key {fk}"),
                "Code that ran during the batch made a reference to a key the batch rewrote; the batch is rolled back."
            );
        }
    }
}

/// Disarms on drop, so that no later statement of the session is ever matched.
pub(super) struct ArmedGuard(());

impl Drop for ArmedGuard {
    fn drop(&mut self) {
        ARMED.with(|a| a.borrow_mut().take());
    }
}

/// Makes the next executor started for exactly `query` leave out `triggers`, for as long as the
/// guard lives (one statement: the first match disarms).
pub(super) fn arm(query: &str, triggers: Vec<pg_sys::Oid>) -> ArmedGuard {
    if !triggers.is_empty() {
        let query = CString::new(query)
            .unwrap_or_else(|_| error!("a rekey batch's statement holds a NUL character"));
        // SAFETY: chaining the hook is the documented protocol; installed once per backend, when
        // first needed, and never removed: the library stays loaded, and a hook installed after
        // ours may have saved it as the one to call.
        unsafe {
            if !HOOK_INSTALLED {
                PREV_EXECUTOR_START_HOOK = pg_sys::ExecutorStart_hook;
                pg_sys::ExecutorStart_hook = Some(executor_start);
                PREV_PLANNER_HOOK = pg_sys::planner_hook;
                pg_sys::planner_hook = Some(planner);
                HOOK_INSTALLED = true;
            }
        }
        ARMED.with(|a| *a.borrow_mut() = Some(Armed { query, triggers }));
    }
    ArmedGuard(())
}

/// Counts the plannings under way (PLANNING), around the planner.
#[cfg(not(feature = "pg19"))]
#[pg_guard]
unsafe extern "C-unwind" fn planner(
    parse: *mut pg_sys::Query,
    query_string: *const std::ffi::c_char,
    cursor_options: c_int,
    bound_params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    // SAFETY: the planner's own entry point, or the hook installed before ours.
    counting_plannings(|| unsafe {
        match PREV_PLANNER_HOOK {
            Some(prev) => pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| {
                prev(parse, query_string, cursor_options, bound_params)
            }),
            None => pg_sys::standard_planner(parse, query_string, cursor_options, bound_params),
        }
    })
}

/// The same for 19, whose planner is also passed the EXPLAIN under way, if any (commit c83ac02).
#[cfg(feature = "pg19")]
#[pg_guard]
unsafe extern "C-unwind" fn planner(
    parse: *mut pg_sys::Query,
    query_string: *const std::ffi::c_char,
    cursor_options: c_int,
    bound_params: pg_sys::ParamListInfo,
    es: *mut pg_sys::ExplainState,
) -> *mut pg_sys::PlannedStmt {
    // SAFETY: as above.
    counting_plannings(|| unsafe {
        match PREV_PLANNER_HOOK {
            Some(prev) => pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| {
                prev(parse, query_string, cursor_options, bound_params, es)
            }),
            None => pg_sys::standard_planner(parse, query_string, cursor_options, bound_params, es),
        }
    })
}

fn counting_plannings<R>(plan: impl FnOnce() -> R) -> R {
    /// Counts down however the planning ends (an error unwinds through it).
    struct Planning;
    impl Drop for Planning {
        fn drop(&mut self) {
            // SAFETY: backend-local, counted up below.
            unsafe { PLANNING -= 1 };
        }
    }
    // SAFETY: backend-local.
    unsafe { PLANNING += 1 };
    let _planning = Planning;
    plan()
}

#[pg_guard]
unsafe extern "C-unwind" fn executor_start(query_desc: *mut pg_sys::QueryDesc, eflags: c_int) {
    // SAFETY: the executor's own entry point and state.
    unsafe {
        // Decided, and disarmed, before the executor starts: code that runs while the armed
        // statement is planned (a function the planner folds) or while its executor starts
        // could run a statement of the same text, which must not be taken for it.
        let source = (*query_desc).sourceText;
        let matched = if source.is_null() || PLANNING > 0 {
            None
        } else {
            ARMED.with(|a| {
                let mut a = a.borrow_mut();
                if a.as_ref()
                    .is_some_and(|armed| CStr::from_ptr(source) == armed.query.as_c_str())
                {
                    a.take()
                } else {
                    None
                }
            })
        };
        match PREV_EXECUTOR_START_HOOK {
            Some(prev) => {
                pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| prev(query_desc, eflags))
            }
            None => pg_sys::standard_ExecutorStart(query_desc, eflags),
        }
        if let Some(armed) = matched {
            if (*(*query_desc).plannedstmt).commandType == pg_sys::CmdType::CMD_SELECT {
                if let Some(note) = leave_out((*query_desc).estate, &armed.triggers) {
                    LAST.with(|l| *l.borrow_mut() = Some(note));
                }
            }
        }
    }
}

/// The result relations the executor opened for the statement.
unsafe fn result_relations(estate: *mut pg_sys::EState) -> Vec<*mut pg_sys::ResultRelInfo> {
    // SAFETY: the executor's own lists, right after ExecutorStart filled them.
    unsafe {
        #[cfg(feature = "pg13")]
        {
            let mut all = Vec::new();
            for (array, n) in [
                (
                    (*estate).es_result_relations,
                    (*estate).es_num_result_relations,
                ),
                (
                    (*estate).es_root_result_relations,
                    (*estate).es_num_root_result_relations,
                ),
            ] {
                for i in 0..n.max(0) as usize {
                    all.push(array.add(i));
                }
            }
            all
        }
        #[cfg(not(feature = "pg13"))]
        {
            pgrx::PgList::<pg_sys::ResultRelInfo>::from_pg((*estate).es_opened_result_relations)
                .iter_ptr()
                .collect()
        }
    }
}

/// Whether `trigger` fires AFTER each row an UPDATE changes (TRIGGER_TYPE_MATCHES in trigger.h).
fn after_row_update(trigger: &pg_sys::Trigger) -> bool {
    let t = trigger.tgtype as u32;
    t & pg_sys::TRIGGER_TYPE_ROW != 0
        && t & (pg_sys::TRIGGER_TYPE_BEFORE | pg_sys::TRIGGER_TYPE_INSTEAD) == 0
        && t & pg_sys::TRIGGER_TYPE_UPDATE != 0
}

/// Whether `trigger`, a user trigger on the result relation `rri`, fires before the statement's
/// rows are stored, as TriggerEnabled (trigger.c) decides for an UPDATE: a BEFORE or INSTEAD OF
/// row trigger, enabled, of UPDATE with no columns or one the statement changes (generated ones
/// counted, ExecGetAllUpdatedCols), or of INSERT or DELETE on a partition, where a row moving
/// between partitions fires them. A WHEN condition counts as true.
unsafe fn fires_before_row(
    trigger: &pg_sys::Trigger,
    rri: *mut pg_sys::ResultRelInfo,
    estate: *mut pg_sys::EState,
) -> bool {
    let t = trigger.tgtype as u32;
    if trigger.tgisinternal
        || trigger.tgenabled == pg_sys::TRIGGER_DISABLED as i8
        || t & pg_sys::TRIGGER_TYPE_ROW == 0
        || t & (pg_sys::TRIGGER_TYPE_BEFORE | pg_sys::TRIGGER_TYPE_INSTEAD) == 0
    {
        return false;
    }
    // SAFETY: the executor's own relation and state, after ExecutorStart.
    unsafe {
        if t & (pg_sys::TRIGGER_TYPE_INSERT | pg_sys::TRIGGER_TYPE_DELETE) != 0
            && (*(*(*rri).ri_RelationDesc).rd_rel).relispartition
        {
            return true;
        }
        if t & pg_sys::TRIGGER_TYPE_UPDATE == 0 {
            return false;
        }
        if trigger.tgnattr <= 0 || trigger.tgattr.is_null() {
            return true;
        }
        let changed = pg_sys::ExecGetAllUpdatedCols(rri, estate);
        std::slice::from_raw_parts(trigger.tgattr, trigger.tgnattr as usize)
            .iter()
            .any(|&a| {
                pg_sys::bms_is_member(
                    a as c_int - pg_sys::FirstLowInvalidHeapAttributeNumber,
                    changed,
                )
            })
    }
}

/// Replaces each result relation's copy of its triggers with one without `triggers`, but for
/// what the statement can really run, decided again on the executor's own relations and triggers
/// (rekey_fast_path decided it from the catalogs before the batch; this sees what code run
/// since attached): a rule for UPDATE, or row-level security that applies to the statement's user
/// (check_enable_rls), keeps every check; a BEFORE row trigger that fires keeps its relation's
/// per-row checks. Returns what was kept that the catalogs did not say, for rekey_status.
unsafe fn leave_out(estate: *mut pg_sys::EState, triggers: &[pg_sys::Oid]) -> Option<String> {
    // SAFETY: the executor's own state; the new lists live in its memory, as the copies did.
    unsafe {
        let relations = result_relations(estate);
        let lists = |rri: *mut pg_sys::ResultRelInfo| -> &[pg_sys::Trigger] {
            let desc = (*rri).ri_TrigDesc;
            if desc.is_null() || (*desc).numtriggers <= 0 {
                &[]
            } else {
                std::slice::from_raw_parts((*desc).triggers, (*desc).numtriggers as usize)
            }
        };
        let name = |rri: *mut pg_sys::ResultRelInfo| {
            CStr::from_ptr((*(*(*rri).ri_RelationDesc).rd_rel).relname.data.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        for &rri in &relations {
            let rel = (*rri).ri_RelationDesc;
            let rules = (*rel).rd_rules;
            let update_rule = !rules.is_null()
                && (0..(*rules).numLocks.max(0) as usize)
                    .any(|i| (**(*rules).rules.add(i)).event == pg_sys::CmdType::CMD_UPDATE);
            if update_rule {
                return Some(format!("off: {} has a rule for UPDATE", name(rri)));
            }
            if pg_sys::check_enable_rls((*rel).rd_id, pg_sys::InvalidOid, true)
                == pg_sys::CheckEnableRlsResult::RLS_ENABLED as c_int
            {
                return Some(format!(
                    "off: row-level security applies to the rewrite of {}",
                    name(rri)
                ));
            }
        }
        let mut left_out = 0;
        let mut kept_for = Vec::new();
        for &rri in &relations {
            let all = lists(rri);
            let before = all.iter().any(|t| fires_before_row(t, rri, estate));
            let drop = |t: &pg_sys::Trigger| {
                triggers.contains(&t.tgoid)
                    && !(before && t.tgfoid == pg_sys::Oid::from(pg_sys::F_RI_FKEY_CHECK_UPD))
            };
            if before && all.iter().any(|t| triggers.contains(&t.tgoid) && !drop(t)) {
                kept_for.push(name(rri));
            }
            if !all.iter().any(drop) {
                continue;
            }
            let kept: Vec<pg_sys::Trigger> = all.iter().filter(|t| !drop(t)).copied().collect();
            let cxt = (*estate).es_query_cxt;
            let desc = pg_sys::MemoryContextAlloc(cxt, size_of::<pg_sys::TriggerDesc>())
                as *mut pg_sys::TriggerDesc;
            *desc = *(*rri).ri_TrigDesc;
            let array =
                pg_sys::MemoryContextAlloc(cxt, size_of::<pg_sys::Trigger>() * kept.len().max(1))
                    as *mut pg_sys::Trigger;
            std::ptr::copy_nonoverlapping(kept.as_ptr(), array, kept.len());
            (*desc).triggers = array;
            (*desc).numtriggers = kept.len() as c_int;
            // As SetTriggerFlags would: no old row kept for AFTER triggers that are not there.
            (*desc).trig_update_after_row = kept.iter().any(after_row_update);
            (*rri).ri_TrigDesc = desc;
            left_out += all.len() - kept.len();
        }
        debug1!(
            "the rekey batch's rewrite leaves out {left_out} foreign-key triggers of {} result relations",
            relations.len()
        );
        (!kept_for.is_empty()).then(|| {
            format!(
                "on, but for the per-row checks of {}, where a BEFORE trigger made during the batch fires",
                kept_for.join(", ")
            )
        })
    }
}
