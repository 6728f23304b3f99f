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
        "SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
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
    guarded(whose, || {
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
    })
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

/// Runs `f` as the owner of `relid` inside a security-restricted operation, after checking that
/// the caller has that owner's privileges and that the partitions below it, if any, are the same
/// owner's.
fn as_owner<R>(relid: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
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
    restricted(
        owner,
        &format!("the owner of relation {}", relid.to_u32()),
        f,
    )
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

/// Runs a query that returns one row, as the owner of `relid` in a security-restricted operation,
/// and returns that row as `jsonb` (`to_jsonb` of the row: one key per column). The toolkit reads
/// the tables of a set this way: counts, versions, joins, `row_security_active`. Read-only: the
/// query may not write (the owner's code it calls may, as the owner).
#[pg_extern(sql = false)]
fn rekey_read_as_owner(relid: pg_sys::Oid, query: &str) -> Option<JsonB> {
    let wrapped = format!("SELECT pg_catalog.to_jsonb(q.*) FROM ({query}) q");
    as_owner(relid, || {
        Spi::connect(|client| {
            let rows = client
                .select(wrapped.as_str(), Some(2), &[])
                .unwrap_or_else(|e| error!("{e}"));
            if rows.len() > 1 {
                error!("a rekey read returned more than one row");
            }
            if rows.is_empty() {
                return None;
            }
            rows.first()
                .get_one::<JsonB>()
                .unwrap_or_else(|e| error!("{e}"))
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

/// One batch's reads and writes on the tables of the set, as their owner in a security-restricted
/// operation: the window of keys after `after` (at most `batch_size`), the lock of its version-4
/// keys with their mapping (with `fallback_time` and the batch number), and the rewrite of the key
/// and every referencing column. Returns the window's last key (NULL: no key left in this pass), the
/// keys locked and mapped (NULL: none in the window), and the rows the rewrite changed per table.
/// Each statement takes its parameters as `rekey_batch_statements` describes them.
// pgrx's macro reads the result's columns from the literal tuple, so no type alias.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
#[pg_extern(sql = false)]
fn rekey_batch_as_owner(
    relid: pg_sys::Oid,
    window_query: &str,
    map_query: &str,
    rewrite_query: &str,
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
    let row = as_owner(relid, || {
        // A batch touches a few thousand rows of tables of any size: always through their
        // indexes. The planner, seeing 10,000 keys in an array, would otherwise read whole tables
        // for every batch. Undone with the rest of the operation's settings.
        // SAFETY: sets a setting at the operation's own nest level.
        unsafe { set_at_this_level("enable_seqscan", "off") };
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
                return (None, None, None);
            };
            let window = no_nulls(window, "window");
            let window_end = window[window.len() - 1];
            let keys: Option<Vec<Option<Uuid>>> = client
                .update(
                    map_query,
                    None,
                    &[
                        DatumWithOid::from(window),
                        DatumWithOid::from(fallback_time),
                        DatumWithOid::from(batch),
                    ],
                )
                .and_then(|t| t.first().get_one())
                .unwrap_or_else(|e| error!("{e}"));
            let Some(keys) = keys.filter(|k| !k.is_empty()) else {
                return (Some(window_end), None, None);
            };
            let keys = no_nulls(keys, "map");
            let changed: Option<Vec<Option<i64>>> = client
                .update(rewrite_query, None, &[DatumWithOid::from(keys.clone())])
                .and_then(|t| t.first().get_one())
                .unwrap_or_else(|e| error!("{e}"));
            (
                Some(window_end),
                Some(keys),
                changed.map(|c| no_nulls(c, "rewrite")),
            )
        })
    });
    TableIterator::once(row)
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
