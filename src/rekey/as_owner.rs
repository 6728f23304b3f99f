//! Running a table's owner's code on a more privileged caller's behalf: every statement the rekey
//! toolkit runs against a table of the set (planning included, which constant-folds the owner's
//! IMMUTABLE index expressions) runs here, as the table's owner, inside a security-restricted
//! operation.
//!
//! Mirrors what PostgreSQL's own maintenance commands do around the owner's code, the same on
//! every supported version (13-18): `ExecRefreshMatView` (matview.c), `vacuum_rel` (vacuum.c),
//! `reindex_index` (index.c) and, on 16 and later, `SwitchToUntrustedUser` (usercontext.c):
//! - `SetUserIdAndSecContext(owner, save_sec_context | SECURITY_RESTRICTED_OPERATION)`: the owner's
//!   code cannot `SET ROLE`, `SET SESSION AUTHORIZATION`, create temporary objects, open a cursor
//!   WITH HOLD or queue a deferred trigger that would run later as the caller;
//! - `NewGUCNestLevel()`, so that settings the owner's code makes, even non-local ones, are undone
//!   by `AtEOXact_GUC(false, nest_level)` when the operation ends;
//! - `search_path = pg_catalog, pg_temp` at that level, as `RestrictSearchPath()` sets it on 17
//!   and later (set here by hand, the same way, on every version);
//! - then `SetUserIdAndSecContext(save_userid, save_sec_context)`.
//!
//! On an error none of this is undone here: the (sub)transaction's abort restores the user and
//! security context it started with and every setting of a nest level above it, exactly as for
//! the maintenance commands.
//!
//! Only a caller who may already act as the owner (`has_privs_of_role`, what PostgreSQL's
//! ownership checks use, and on 16 and later `member_can_set_role` too: a superuser, or a member
//! of the owner's role that inherits it and may SET ROLE to it) may run anything here, so the
//! functions grant nothing their caller could not do as the owner.

use std::ffi::CString;
use std::panic::AssertUnwindSafe;

use pgrx::datum::{DatumWithOid, TimestampWithTimeZone, Uuid};
use pgrx::prelude::*;
use pgrx::JsonB;

/// The owner of the relation, or an error naming it when there is no such relation.
fn relation_owner(relid: pg_sys::Oid) -> pg_sys::Oid {
    let owner = Spi::get_one_with_args::<pg_sys::Oid>(
        "SELECT (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1)",
        &[relid.into()],
    )
    .unwrap_or_else(|e| error!("cannot read the owner of relation {}: {e}", relid.to_u32()));
    let Some(owner) = owner else {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
            format!("relation with OID {} does not exist", relid.to_u32())
        );
    };
    owner
}

/// The session's temporary schema (0 when it has none yet) and how many objects are in it, by
/// their dependencies on it (every object in a schema records one).
fn temporary_objects() -> (pg_sys::Oid, i64) {
    Spi::connect(|client| {
        let row = client
            .select(
                "SELECT pg_catalog.pg_my_temp_schema() AS nsp,
                        (SELECT pg_catalog.count(*) FROM pg_catalog.pg_depend d
                          WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass
                            AND d.refobjid OPERATOR(pg_catalog.=) pg_catalog.pg_my_temp_schema()) AS n",
                Some(1),
                &[],
            )?
            .first();
        Ok::<_, pgrx::spi::Error>((
            row.get::<pg_sys::Oid>(1)?.unwrap_or(pg_sys::InvalidOid),
            row.get::<i64>(2)?.unwrap_or(0),
        ))
    })
    .unwrap_or_else(|e| error!("cannot read the temporary schema: {e}"))
}

/// The session's advisory locks, each as `classid objid objsubid mode`, in order: the owner's code
/// may take or release them (neither a setting nor an object), and a session-level lock outlives
/// the operation.
fn advisory_locks() -> Vec<String> {
    Spi::get_one::<Vec<String>>(
        "SELECT coalesce(pg_catalog.array_agg(pg_catalog.concat_ws(' ', l.classid, l.objid, l.objsubid, l.mode)
                                          ORDER BY l.classid, l.objid, l.objsubid, l.mode), '{}')
           FROM pg_catalog.pg_locks l
          WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'::pg_catalog.text
            AND l.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid() AND l.granted",
    )
    .unwrap_or_else(|e| error!("cannot read the session's advisory locks: {e}"))
    .unwrap_or_default()
}

/// The names of the session's open cursors: a cursor the owner's code declares outlives the
/// operation until the transaction ends, and runs its query as whoever fetches from it.
fn cursors() -> Vec<String> {
    Spi::get_one::<Vec<String>>(
        "SELECT coalesce(pg_catalog.array_agg(c.name::pg_catalog.text ORDER BY c.name), '{}') FROM pg_catalog.pg_cursors c",
    )
    .unwrap_or_else(|e| error!("cannot read the session's cursors: {e}"))
    .unwrap_or_default()
}

/// The SQL that calls `function` (`pg_advisory_unlock`, `pg_try_advisory_lock`, their `_shared`
/// forms chosen here by the lock's mode) on the advisory lock `lock` (`classid objid objsubid mode`,
/// from advisory_locks); None for a lock not written so.
fn advisory_lock_call(function: &str, lock: &str) -> Option<String> {
    let parts: Vec<&str> = lock.split(' ').collect();
    let [classid, objid, objsubid, mode] = parts[..] else {
        return None;
    };
    let shared = if mode == "ShareLock" { "_shared" } else { "" };
    let key = if objsubid == "1" {
        format!("(({classid}::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32) OPERATOR(pg_catalog.|) {objid}::pg_catalog.int8)")
    } else {
        // Two int4 keys, shown as OIDs: the low 32 bits, sign-extended.
        format!(
            "((({classid}::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32) OPERATOR(pg_catalog.>>) 32)::pg_catalog.int4, \
             (({objid}::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32) OPERATOR(pg_catalog.>>) 32)::pg_catalog.int4)"
        )
    };
    // A call that finds nothing to do warns (an unlock of a lock not held at session level): not
    // worth showing.
    Some(format!(
        "SELECT pg_catalog.set_config('client_min_messages', 'error', true),
                pg_catalog.{function}{shared}({key})"
    ))
}

/// Releases the session-level advisory locks in `taken` that the owner's code took (`classid objid
/// objsubid mode`, from advisory_locks): they would outlive the error that refuses its operation.
/// Transaction-level ones go with the transaction.
fn release_advisory_locks(taken: &[&String]) {
    for lock in taken {
        let Some(sql) = advisory_lock_call("pg_advisory_unlock", lock) else {
            continue;
        };
        // Held at session level as many times as it was taken; transaction-level holds make the
        // function return false.
        for _ in 0..1000 {
            match Spi::connect_mut(|client| {
                client
                    .update(sql.as_str(), None, &[])?
                    .first()
                    .get::<bool>(2)
            }) {
                Ok(Some(true)) => continue,
                _ => break,
            }
        }
    }
}

/// What the owner's code could leave in the caller's session that outlives PostgreSQL's
/// security-restricted operation, compared before and after each one here; any change is an error
/// (42501), which rolls it back with the rest:
/// - objects in the caller's temporary schema: PostgreSQL refuses temporary tables there
///   (DefineRelation) but not every other kind, and that schema comes first when the session later
///   looks up a type name (a domain named `uuid`, with a CHECK of the owner's, would run as the
///   caller);
/// - the session's advisory locks: a session-level one outlives the transaction, so those taken
///   are also released before the error;
/// - the session's cursors: one declared inside runs its query as whoever fetches from it later.
#[derive(PartialEq)]
struct SessionState {
    temporary: (pg_sys::Oid, i64),
    locks: Vec<String>,
    cursors: Vec<String>,
}

impl SessionState {
    fn now() -> Self {
        SessionState {
            temporary: temporary_objects(),
            locks: advisory_locks(),
            cursors: cursors(),
        }
    }

    /// Puts the session's advisory locks back as `self` found them, after an error: the
    /// subtransaction's abort undid the temporary objects and cursors, but session-level advisory
    /// locks outlive it. A lock released meanwhile is taken again only if no one else took it.
    fn restore_advisory_locks(&self) {
        let now = advisory_locks();
        let taken: Vec<&String> = now.iter().filter(|l| !self.locks.contains(l)).collect();
        release_advisory_locks(&taken);
        for lock in self.locks.iter().filter(|l| !now.contains(l)) {
            if let Some(sql) = advisory_lock_call("pg_try_advisory_lock", lock) {
                // Best effort: nothing else is left to do when another session has it now.
                let _ =
                    Spi::connect_mut(|client| client.update(sql.as_str(), None, &[]).map(|_| ()));
            }
        }
    }

    /// Refuses, naming `whose` code ran, when the session is no longer as `self` found it.
    fn must_be_unchanged(&self, whose: &str) {
        let now = SessionState::now();
        if now == *self {
            return;
        }
        let taken: Vec<&String> = now
            .locks
            .iter()
            .filter(|l| !self.locks.contains(l))
            .collect();
        release_advisory_locks(&taken);
        let what = if now.locks != self.locks {
            "took or released advisory locks of your session"
        } else if now.cursors != self.cursors {
            "opened or closed cursors of your session"
        } else {
            "created an object in your session's temporary schema"
        };
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("the code of {whose} {what}"),
            "Advisory locks, cursors and temporary objects outlive the operation that ran the code; \
             the rekey toolkit runs none of a table owner's code that leaves any."
        );
    }
}

/// Refuses when a partition below `relid` (at any level) has another owner than `owner`: reading
/// or writing the partitioned table runs the partitions' code too (index and statistics
/// expressions while planning, triggers and constraints while writing), which must not run with
/// the rights of the table's owner.
fn one_owner(relid: pg_sys::Oid, owner: pg_sys::Oid) {
    let other = Spi::get_one_with_args::<String>(
        "SELECT pg_catalog.string_agg(pg_catalog.format('%s (owned by %s)', c.oid::pg_catalog.regclass,
                                                       c.relowner::pg_catalog.regrole), ', ')
           FROM pg_catalog.pg_partition_tree($1) t
           JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid
          WHERE c.relowner OPERATOR(pg_catalog.<>) $2",
        &[relid.into(), owner.into()],
    )
    .unwrap_or_else(|e| error!("cannot read the partitions of relation {}: {e}", relid.to_u32()));
    if let Some(other) = other {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "partitions of relation {} belong to another owner than the table's: {other}",
                relid.to_u32()
            )
        );
    }
}

/// Refuses while the session has an open cursor that is not running: the owner's code could
/// FETCH from it (reading rows its query read with the caller's rights) or move, close and reopen
/// it under the same name with a query of its own that the caller would then run. The cursors that
/// are running (the statement that called the toolkit) refuse FETCH and CLOSE themselves. The
/// toolkit's own loops never hold a cursor while they call the owner's code.
fn no_idle_cursors() {
    let names = cursors();
    for name in names {
        let Ok(c_name) = CString::new(name.as_str()) else {
            continue;
        };
        // SAFETY: looks a portal up by name in the session's portal table; the pointer is only
        // read, at once.
        let idle = unsafe {
            let portal = pg_sys::GetPortalByName(c_name.as_ptr());
            !portal.is_null() && (*portal).status != pg_sys::PortalStatus::PORTAL_ACTIVE
        };
        if idle {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("cannot run a table owner's code while cursor \"{name}\" is open"),
                "The owner's code could read or replace it. Close your cursors (or leave the loop over one) first."
            );
        }
    }
}

/// Runs `f`, which runs a table owner's code, in a subtransaction of its own, as PL/pgSQL runs a
/// block with an exception handler (exec_stmt_block in pl_exec.c), after no_idle_cursors; then
/// refuses what it left in the caller's session (SessionState), naming `whose` code ran. On an
/// error the subtransaction's abort undoes everything the code did in the database and the
/// session but the session-level advisory locks it took or released, which are put back before
/// the error goes on: an error is never a way to leave something behind.
fn guarded<R>(whose: &str, f: impl FnOnce() -> R) -> R {
    no_idle_cursors();
    let before = SessionState::now();
    // SAFETY: exec_stmt_block's sequence: the subtransaction begins here and is released or rolled
    // back here, with the caller's memory context and resource owner put back after each step.
    unsafe {
        let context = pg_sys::CurrentMemoryContext;
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::CurrentMemoryContext = context;
        let saved = AssertUnwindSafe((context, owner, &before));
        let result = PgTryBuilder::new(AssertUnwindSafe(|| {
            let result = f();
            before.must_be_unchanged(whose);
            result
        }))
        .catch_others(move |error| {
            let (context, owner, before) = *saved;
            pg_sys::CurrentMemoryContext = context;
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
            pg_sys::CurrentMemoryContext = context;
            pg_sys::CurrentResourceOwner = owner;
            before.restore_advisory_locks();
            error.rethrow()
        })
        .execute();
        pg_sys::ReleaseCurrentSubTransaction();
        pg_sys::CurrentMemoryContext = context;
        pg_sys::CurrentResourceOwner = owner;
        result
    }
}

/// Runs `f` as `owner` inside a security-restricted operation (see the module's comment), guarded
/// (above); `whose` names whose code ran.
fn restricted<R>(owner: pg_sys::Oid, whose: &str, f: impl FnOnce() -> R) -> R {
    guarded(whose, || within_restricted(owner, f))
}

/// Runs `f` as `owner` inside a security-restricted operation, in the caller's (sub)transaction:
/// for several owners' operations inside one guarded subtransaction.
fn within_restricted<R>(owner: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
    let mut save_userid = pg_sys::InvalidOid;
    let mut save_sec_context: std::ffi::c_int = 0;
    // SAFETY: these read and set backend-local state, as the maintenance commands named above
    // do; the strings outlive the calls that copy them. On an error the subtransaction's abort
    // puts the user, security context and settings back.
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut save_userid, &mut save_sec_context);
        pg_sys::SetUserIdAndSecContext(
            owner,
            save_sec_context | pg_sys::SECURITY_RESTRICTED_OPERATION as std::ffi::c_int,
        );
        let nest_level = pg_sys::NewGUCNestLevel();
        set_at_this_level("search_path", "pg_catalog, pg_temp");
        let result = f();
        pg_sys::AtEOXact_GUC(false, nest_level);
        pg_sys::SetUserIdAndSecContext(save_userid, save_sec_context);
        result
    }
}

/// Whether `caller` may run code as `role`: has its privileges and, from PostgreSQL 16 on, may
/// SET ROLE to it (a member granted INHERIT but not SET has the privileges, not the role's
/// attributes, such as BYPASSRLS or CREATEROLE, which code running as the role would get). The
/// test logical replication's apply worker makes before it runs as a table's owner
/// (SwitchToUntrustedUser uses member_can_set_role).
unsafe fn may_act_as(caller: pg_sys::Oid, role: pg_sys::Oid) -> bool {
    // SAFETY: catalog lookups.
    unsafe {
        #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
        {
            pg_sys::has_privs_of_role(caller, role)
        }
        #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
        {
            pg_sys::has_privs_of_role(caller, role) && pg_sys::member_can_set_role(caller, role)
        }
    }
}

/// The owner of `relid`, after checking that the caller has that owner's privileges and that the
/// partitions below it, if any, are the same owner's.
fn acting_owner(relid: pg_sys::Oid) -> pg_sys::Oid {
    let owner = relation_owner(relid);
    // SAFETY: reads backend-local state.
    let caller = unsafe { pg_sys::GetUserId() };
    // SAFETY: catalog lookups.
    if !unsafe { may_act_as(caller, owner) } {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "permission denied: only the owner of relation {} or a member of its role may rekey it",
                relid.to_u32()
            )
        );
    }
    one_owner(relid, owner);
    owner
}

/// Runs `f` as the owner of `relid` inside a security-restricted operation (acting_owner).
fn as_owner<R>(relid: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
    let owner = acting_owner(relid);
    restricted(
        owner,
        &format!("the owner of relation {}", relid.to_u32()),
        f,
    )
}

/// Fires the AFTER triggers queued at the query level that `AfterTriggerBeginQuery` opened, in the
/// current user and security context, as PostgreSQL does where it opens such a level outside the
/// executor (`ExecuteTruncateGuts` in tablecmds.c, `CopyFrom` in copyfrom.c): a fresh EState,
/// `AfterTriggerEndQuery`, then the relations it opened closed (`ExecCleanUpTriggerState` on 13,
/// `ExecCloseResultRelations` from 14 on) and the EState freed.
unsafe fn fire_queued_after_triggers() {
    // SAFETY: the caller opened the level with AfterTriggerBeginQuery in this subtransaction; on
    // an error its abort closes the level, the relations and the memory.
    unsafe {
        let estate = pg_sys::CreateExecutorState();
        pg_sys::AfterTriggerEndQuery(estate);
        #[cfg(feature = "pg13")]
        pg_sys::ExecCleanUpTriggerState(estate);
        #[cfg(not(feature = "pg13"))]
        pg_sys::ExecCloseResultRelations(estate);
        pg_sys::ExecResetTupleTable((*estate).es_tupleTable, false);
        pg_sys::FreeExecutorState(estate);
    }
}

/// Sets a setting at the current GUC nest level, as `RestrictSearchPath()` does: undone when the
/// level ends.
unsafe fn set_at_this_level(name: &str, value: &str) {
    let name = CString::new(name).expect("no NUL in a setting's name");
    let value = CString::new(value).expect("no NUL in a setting's value");
    // SAFETY: both strings live across the call, which copies them.
    unsafe {
        pg_sys::set_config_option(
            name.as_ptr(),
            value.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            0,
            false,
        );
    }
}

/// Runs `query` with `args` through SPI, the way PostgreSQL's foreign-key triggers run theirs
/// (`ri_PerformCheck` in ri_triggers.c, with `SPI_execute_snapshot`), and gives `read` the rows
/// it processed and the first column of its first row, if any, before SPI frees them:
/// - `read_only`: a read, under exactly the snapshot of the statement that called (as
///   `SPI_execute_snapshot` does with a snapshot and read_only), refused if it writes; several
///   reads made by one statement therefore see the database in one state;
/// - without `fire_triggers`, the AFTER triggers the statement queues (its foreign keys' checks)
///   fire when the statement that called ends, not when this one does, as for the updates a
///   foreign key's ON UPDATE CASCADE makes.
///
/// Must be called inside an SPI connection.
fn execute<T>(
    query: &str,
    args: &[DatumWithOid],
    read_only: bool,
    fire_triggers: bool,
    read: impl FnOnce(u64, Option<(pg_sys::Datum, bool)>) -> T,
) -> T {
    let c_query =
        CString::new(query).unwrap_or_else(|_| error!("a rekey statement holds a NUL character"));
    let mut types: Vec<pg_sys::Oid> = args.iter().map(|a| a.oid()).collect();
    let mut values: Vec<pg_sys::Datum> = args
        .iter()
        .map(|a| {
            a.datum()
                .map_or(pg_sys::Datum::from(0usize), |d| d.sans_lifetime())
        })
        .collect();
    let nulls: Vec<std::ffi::c_char> = args
        .iter()
        .map(|a| if a.datum().is_some() { b' ' } else { b'n' } as std::ffi::c_char)
        .collect();
    // SAFETY: SPI is connected (the caller's contract); the arrays outlive the calls, and the
    // tuple table is read before the plan is freed and before SPI's memory goes.
    unsafe {
        let plan = pg_sys::SPI_prepare(c_query.as_ptr(), types.len() as i32, types.as_mut_ptr());
        if plan.is_null() {
            let code = std::ptr::addr_of!(pg_sys::SPI_result).read();
            error!("cannot prepare a rekey statement: SPI error {code}");
        }
        let snapshot = if read_only && pg_sys::ActiveSnapshotSet() {
            pg_sys::GetActiveSnapshot()
        } else {
            std::ptr::null_mut()
        };
        let status = pg_sys::SPI_execute_snapshot(
            plan,
            values.as_mut_ptr(),
            nulls.as_ptr(),
            snapshot,
            std::ptr::null_mut(),
            read_only,
            fire_triggers,
            0,
        );
        if status < 0 {
            error!("a rekey statement failed: SPI error {status}");
        }
        let processed = pg_sys::SPI_processed;
        let table = pg_sys::SPI_tuptable;
        let first = if table.is_null() || processed == 0 || (*(*table).tupdesc).natts < 1 {
            None
        } else {
            let mut isnull = false;
            let datum = pg_sys::SPI_getbinval(*(*table).vals, (*table).tupdesc, 1, &mut isnull);
            Some((datum, isnull))
        };
        let result = read(processed, first);
        pg_sys::SPI_freeplan(plan);
        result
    }
}

/// Runs a query that returns one row, as the owner of `relid` in a security-restricted operation,
/// and returns that row as `jsonb` (`to_jsonb` of the row: one key per column). The toolkit reads
/// the tables of a set this way: counts, versions, joins, `row_security_active`. A read, under
/// the snapshot of the statement that called (execute): the calls one statement makes, for the
/// tables of several owners, count them all in one state of the database. The query may not
/// write (the owner's code it calls may, as the owner).
#[pg_extern(sql = false)]
fn rekey_read_as_owner(relid: pg_sys::Oid, query: &str) -> Option<JsonB> {
    let wrapped = format!("SELECT pg_catalog.to_jsonb(q.*) FROM ({query}) q");
    as_owner(relid, || {
        Spi::connect(|_client| {
            execute(&wrapped, &[], true, true, |processed, first| {
                if processed > 1 {
                    error!("a rekey read returned more than one row");
                }
                // SAFETY: the first column of the wrapped query is jsonb.
                first.and_then(|(datum, isnull)| unsafe { JsonB::from_datum(datum, isnull) })
            })
        })
    })
}

/// The elements of an array a batch's statement returned, which are never NULL when the statements
/// are rekey_statements'; an error, not a panic, when a caller's own statement returns one.
fn no_nulls<T>(array: Vec<Option<T>>, statement: &str) -> Vec<T> {
    array
        .into_iter()
        .map(|e| {
            e.unwrap_or_else(|| {
                error!("the {statement} query of a rekey batch returned a NULL element")
            })
        })
        .collect()
}

/// Every trigger (internal ones too: a foreign key made adds them) on the tables that change with
/// `relid`'s key and the partitions below them (pg_partition_tree lists no plain table), each as
/// `oid table enabled type`, in order: what must not change while the batch runs, since a table
/// owner's code could otherwise attach code that a later statement, or the firing of another
/// owner's queued triggers, would run as someone else.
fn set_triggers(relid: pg_sys::Oid) -> Vec<String> {
    Spi::get_one_with_args::<Vec<String>>(
        "SELECT coalesce(pg_catalog.array_agg(pg_catalog.concat_ws(' ', t.oid, t.tgrelid, t.tgenabled, t.tgtype)
                                          ORDER BY t.oid), '{}')
           FROM (SELECT c.relid::pg_catalog.oid AS relid FROM objectid_internal.rekey_columns($1::pg_catalog.regclass) c
                 UNION
                 SELECT p.relid::pg_catalog.oid FROM objectid_internal.rekey_columns($1::pg_catalog.regclass) c,
                        LATERAL pg_catalog.pg_partition_tree(c.relid) p) x
           JOIN pg_catalog.pg_trigger t ON t.tgrelid OPERATOR(pg_catalog.=) x.relid",
        &[relid.into()],
    )
    .unwrap_or_else(|e| error!("cannot read the triggers of the tables that change: {e}"))
    .unwrap_or_default()
}

/// Refuses (42501) when the triggers of the tables that change are no longer `before`.
fn triggers_unchanged(relid: pg_sys::Oid, before: &[String]) {
    if set_triggers(relid) != before {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "a table owner's code changed the triggers or foreign keys of the tables that change during the batch",
            "What it attached could run as another owner; the batch is refused."
        );
    }
}

/// One batch's reads and writes on the tables of the set, each as its owner in a
/// security-restricted operation: the window of keys after `after` (at most `batch_size`), the
/// lock of its version-4 keys with their mapping (with `fallback_time` and the batch number), as
/// the owner of `relid`; then the rewrite of the columns of other owners' tables (`other_queries`,
/// each as the owner of the table at the same place in `other_tables`); then the rewrite of the key
/// and every referencing column of `relid`'s owner's tables. Returns the window's last key (NULL: no
/// key left in this pass), the keys locked and mapped (NULL: none in the window), and the rows
/// changed per table: those of the rewrite, then those of each of other_queries.
///
/// The other owners' statements fire their AFTER triggers once the last statement has rewritten
/// the key, each as its own owner: a child's new values find their parent rows only then. That
/// last statement's own checks (the parent's NO ACTION, the key owner's children) fire at its end,
/// when every other owner's rows have their new values already. Each statement takes its
/// parameters as `rekey_batch_statements` describes them.
// pgrx's macro reads the result's columns from the literal tuple, so no type alias.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
#[pg_extern(sql = false)]
fn rekey_batch_as_owner(
    relid: pg_sys::Oid,
    window_query: &str,
    map_query: &str,
    rewrite_query: &str,
    other_tables: Vec<Option<pg_sys::Oid>>,
    other_queries: Vec<Option<String>>,
    after: Uuid,
    batch_size: i32,
    fallback_time: TimestampWithTimeZone,
    batch: i64,
) -> TableIterator<
    'static,
    (
        name!(window_end, Option<Uuid>),
        name!(keys, Option<Vec<Uuid>>),
        name!(changed, Option<Vec<i64>>),
    ),
> {
    if other_tables.len() != other_queries.len() {
        error!("a rekey batch needs one table for each of its other statements");
    }
    let others: Vec<(pg_sys::Oid, String)> = no_nulls(other_tables, "other tables")
        .into_iter()
        .zip(no_nulls(other_queries, "other"))
        .collect();
    // A batch touches a few thousand rows of tables of any size: always through their indexes.
    // The planner, seeing 10,000 keys in an array, would otherwise read whole tables for every
    // batch. Undone with the rest of each operation's settings.
    // SAFETY: sets a setting at the operation's own nest level.
    let indexes_only = || unsafe { set_at_this_level("enable_seqscan", "off") };
    let (window_end, mapped) = as_owner(relid, || {
        indexes_only();
        Spi::connect_mut(|client| {
            let window: Option<Vec<Option<Uuid>>> = client
                .update(
                    window_query,
                    None,
                    &[DatumWithOid::from(after), DatumWithOid::from(batch_size)],
                )
                .and_then(|t| t.first().get_one())
                .unwrap_or_else(|e| error!("{e}"));
            let Some(window) = window.filter(|w| !w.is_empty()) else {
                return (None, None);
            };
            let window = no_nulls(window, "window");
            let window_end = window[window.len() - 1];
            let (keys, new_keys): (Option<Vec<Option<Uuid>>>, Option<Vec<Option<Uuid>>>) = client
                .update(
                    map_query,
                    None,
                    &[
                        DatumWithOid::from(window),
                        DatumWithOid::from(fallback_time),
                        DatumWithOid::from(batch),
                    ],
                )
                .and_then(|t| t.first().get_two())
                .unwrap_or_else(|e| error!("{e}"));
            let Some(keys) = keys.filter(|k| !k.is_empty()) else {
                return (Some(window_end), None);
            };
            let keys = no_nulls(keys, "map");
            let new_keys = no_nulls(new_keys.unwrap_or_default(), "map");
            if new_keys.len() != keys.len() {
                error!(
                    "the map query of a rekey batch returned {} new keys for {} keys",
                    new_keys.len(),
                    keys.len()
                );
            }
            (Some(window_end), Some((keys, new_keys)))
        })
    });
    let Some((keys, new_keys)) = mapped else {
        return TableIterator::once((window_end, None, None));
    };
    // The other owners' statements and the rewrite in one subtransaction. Each other owner's
    // statement queues its AFTER triggers (its foreign keys' checks, its deferrable constraints'
    // rechecks, its own triggers) at a query level of its own, opened for it here as PostgreSQL
    // opens one outside the executor; the levels are fired once the key owner's statement has
    // made the new keys, each as the owner whose statement queued it, in a restricted operation:
    // every trigger function runs as the current user, and PostgreSQL's foreign-key code runs its
    // queries as the owner of the table it reads, keeping the restriction.
    let (changed, other_changed) = guarded("the owners of the tables that change", || {
        let key_owner = acting_owner(relid);
        let other_owners: Vec<pg_sys::Oid> = others
            .iter()
            .map(|(table, _)| acting_owner(*table))
            .collect();
        // With the key owner's tables alone, what its code attaches runs as that owner anyway.
        let triggers = if others.is_empty() {
            Vec::new()
        } else {
            set_triggers(relid)
        };
        let other_changed: Vec<i64> = others
            .iter()
            .zip(&other_owners)
            .map(|((_, query), owner)| {
                // SAFETY: closed by fire_queued_after_triggers below, in reverse order, or by the
                // subtransaction's abort.
                unsafe { pg_sys::AfterTriggerBeginQuery() };
                within_restricted(*owner, || {
                    indexes_only();
                    Spi::connect_mut(|_client| {
                        execute(
                            query,
                            &[
                                DatumWithOid::from(keys.clone()),
                                DatumWithOid::from(new_keys.clone()),
                            ],
                            false,
                            false,
                            |processed, _| processed as i64,
                        )
                    })
                })
            })
            .collect();
        if !others.is_empty() {
            triggers_unchanged(relid, &triggers);
        }
        let changed = within_restricted(key_owner, || {
            indexes_only();
            let changed: Option<Vec<Option<i64>>> = Spi::connect_mut(|client| {
                client
                    .update(rewrite_query, None, &[DatumWithOid::from(keys.clone())])
                    .and_then(|t| t.first().get_one())
                    .unwrap_or_else(|e| error!("{e}"))
            });
            changed.map(|c| no_nulls(c, "rewrite"))
        });
        if !others.is_empty() {
            triggers_unchanged(relid, &triggers);
        }
        for owner in other_owners.iter().rev() {
            // SAFETY: closes the innermost level opened above, in this subtransaction.
            within_restricted(*owner, || unsafe { fire_queued_after_triggers() });
        }
        (changed, other_changed)
    });
    let changed = changed.map(|mut c| {
        c.extend(other_changed);
        c
    });
    TableIterator::once((window_end, Some(keys), changed))
}

/// The new key of `old_key` in the mapping table `mapping`, for rekey_translate: read as the
/// mapping table's owner in a security-restricted operation, after checking that the caller may
/// read its two columns. Whatever the owner attached to the table since rekey_translate checked
/// it (an index or statistics expression the planner folds) then runs as the owner, never as the
/// application's role or a superuser that translates.
#[pg_extern(sql = false)]
fn rekey_translate_read(mapping: pg_sys::Oid, old_key: Uuid) -> Option<Uuid> {
    // Read as the owner, row-level security would not apply: a table with it is no mapping table
    // (rekey_mapping_problem refuses it too), and this function may be called on any table.
    let may_read = Spi::get_one_with_args::<bool>(
        "SELECT pg_catalog.has_column_privilege($1, 'old_key'::pg_catalog.text, 'SELECT'::pg_catalog.text)
            AND pg_catalog.has_column_privilege($1, 'new_key'::pg_catalog.text, 'SELECT'::pg_catalog.text)
            AND (SELECT c.relkind OPERATOR(pg_catalog.=) 'r'::\"char\" AND NOT c.relrowsecurity
                   FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1)",
        &[mapping.into()],
    )
    .unwrap_or_else(|e| error!("cannot check the privileges on the mapping table: {e}"));
    if may_read != Some(true) {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "permission denied for the mapping table (OID {}): you need SELECT on old_key and new_key of a plain table without row-level security",
                mapping.to_u32()
            )
        );
    }
    let name = Spi::get_one_with_args::<String>(
        "SELECT objectid_internal.rekey_name($1)",
        &[mapping.into()],
    )
    .unwrap_or_else(|e| error!("cannot name the mapping table: {e}"))
    .unwrap_or_else(|| error!("the mapping table (OID {}) is gone", mapping.to_u32()));
    let owner = relation_owner(mapping);
    let query =
        format!("SELECT m.new_key FROM ONLY {name} m WHERE m.old_key OPERATOR(pg_catalog.=) $1");
    restricted(owner, "the owner of the mapping table", || {
        Spi::connect(|client| {
            let rows = client.select(query.as_str(), Some(1), &[DatumWithOid::from(old_key)])?;
            if rows.is_empty() {
                Ok(None)
            } else {
                rows.first().get_one::<Uuid>()
            }
        })
        .unwrap_or_else(|e: pgrx::spi::Error| error!("{e}"))
    })
}

/// REFRESH MATERIALIZED VIEW of `matview`, for rekey_run, refused (42501) when the view's query,
/// which PostgreSQL runs as the view's owner in a security-restricted operation, left advisory
/// locks, cursors or temporary objects in the caller's session (SessionState).
#[pg_extern(sql = false)]
fn rekey_refresh_materialized_view(matview: pg_sys::Oid) {
    let name = Spi::get_one_with_args::<String>(
        "SELECT objectid_internal.rekey_name($1)",
        &[matview.into()],
    )
    .unwrap_or_else(|e| error!("cannot name the materialized view: {e}"))
    .unwrap_or_else(|| error!("the materialized view (OID {}) is gone", matview.to_u32()));
    guarded(&format!("the owner of materialized view {name}"), || {
        Spi::connect_mut(|client| {
            client
                .update(
                    format!("REFRESH MATERIALIZED VIEW {name}").as_str(),
                    None,
                    &[],
                )
                .map(|_| ())
        })
        .unwrap_or_else(|e| error!("{e}"))
    });
}
