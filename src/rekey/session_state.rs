//! What a table owner's code could leave in the caller's session that outlives PostgreSQL's
//! security-restricted operation (objects in the temporary schema, advisory locks, cursors),
//! read before and after each operation of as_owner.rs, and the cursors that must not be open
//! while the owner's code runs.

use std::ffi::CString;

use pgrx::prelude::*;

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
pub(super) struct SessionState {
    temporary: (pg_sys::Oid, i64),
    locks: Vec<String>,
    cursors: Vec<String>,
}

impl SessionState {
    pub(super) fn now() -> Self {
        SessionState {
            temporary: temporary_objects(),
            locks: advisory_locks(),
            cursors: cursors(),
        }
    }

    /// Puts the session's advisory locks back as `self` found them, after an error: the
    /// subtransaction's abort undid the temporary objects and cursors, but session-level advisory
    /// locks outlive it. A lock released meanwhile is taken again only if no one else took it.
    pub(super) fn restore_advisory_locks(&self) {
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
    pub(super) fn must_be_unchanged(&self, whose: &str) {
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

/// Refuses while the session has an open cursor that is not running: the owner's code could
/// FETCH from it (reading rows its query read with the caller's rights) or move, close and reopen
/// it under the same name with a query of its own that the caller would then run. The cursors that
/// are running (the statement that called the toolkit) refuse FETCH and CLOSE themselves. The
/// toolkit's own loops never hold a cursor while they call the owner's code.
pub(super) fn no_idle_cursors() {
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
