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

use pgrx::datum::{DatumWithOid, Uuid};
use pgrx::prelude::*;
use pgrx::JsonB;

use super::session_state::SessionState;

/// The owner of the relation, or an error naming it when there is no such relation.
fn relation_owner(relid: pg_sys::Oid) -> pg_sys::Oid {
    // SAFETY: a syscache lookup, its tuple read and released at once.
    let owner = unsafe {
        let tuple = pg_sys::SearchSysCache1(
            pg_sys::SysCacheIdentifier::RELOID as i32,
            pg_sys::Datum::from(relid),
        );
        if tuple.is_null() {
            None
        } else {
            let owner =
                (*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_class>(tuple)).relowner;
            pg_sys::ReleaseSysCache(tuple);
            Some(owner)
        }
    };
    let Some(owner) = owner else {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
            format!("relation with OID {} does not exist", relid.to_u32())
        );
    };
    owner
}

/// Refuses when a partition below `relid` (at any level) has another owner than `owner`: reading
/// or writing the partitioned table runs the partitions' code too (index and statistics
/// expressions while planning, triggers and constraints while writing), which must not run with
/// the rights of the table's owner.
fn one_owner(relid: pg_sys::Oid, owner: pg_sys::Oid) {
    // Only a partitioned table has partitions below it (pg_partition_tree lists no plain table's
    // inheritance children).
    // SAFETY: a syscache lookup.
    if unsafe { pg_sys::get_rel_relkind(relid) } as u8 != pg_sys::RELKIND_PARTITIONED_TABLE {
        return;
    }
    // As the database encoding's bytes (hex): the names may be outside ASCII in a database whose
    // encoding is not UTF-8, which pgrx cannot read as text.
    let other = Spi::get_one_with_args::<String>(
        "SELECT pg_catalog.encode(pg_catalog.convert_to(pg_catalog.format(
                    'partitions of %s (owned by %s) have other owners: %s', $1::pg_catalog.regclass,
                    $2::pg_catalog.regrole,
                    pg_catalog.string_agg(pg_catalog.format('%s (owned by %s)', c.oid::pg_catalog.regclass,
                                                            c.relowner::pg_catalog.regrole), ', ')),
                    pg_catalog.getdatabaseencoding()), 'hex')
           FROM pg_catalog.pg_partition_tree($1) t
           JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid
          WHERE c.relowner OPERATOR(pg_catalog.<>) $2
         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0",
        &[relid.into(), owner.into()],
    )
    .unwrap_or_else(|e| match e {
        pgrx::spi::SpiError::InvalidPosition => None,
        e => error!("cannot read the partitions of relation {}: {e}", relid.to_u32()),
    });
    if let Some(other) = other {
        let other = shown(&hex::decode(other).unwrap_or_default());
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            other,
            "Each partition's code would run as the table's owner; give the partitions the table's owner first."
        );
    }
}

/// Runs `f`, which runs a table owner's code, in a subtransaction of its own, as PL/pgSQL runs a
/// block with an exception handler (exec_stmt_block in pl_exec.c), after
/// SessionState::no_idle_cursors, no_large_objects and no_dblink; then refuses what it left in the caller's session
/// (SessionState), naming `whose` code ran. On an
/// error the subtransaction's abort undoes everything the code did in the database and the
/// session but the session-level advisory locks it took or released, which are put back before
/// the error goes on: an error is never a way to leave something behind. The caller's advisory
/// locks are pinned meanwhile (SessionState::pin_advisory_locks): the code can release the
/// caller's holds, and is refused for it, but no other session can take the lock in between.
pub(super) fn guarded<R>(whose: &str, f: impl FnOnce() -> R) -> R {
    let before = SessionState::now();
    before.no_idle_cursors();
    before.no_large_objects();
    SessionState::no_dblink();
    // SAFETY: exec_stmt_block's sequence: the subtransaction begins here and is released or rolled
    // back here, with the caller's memory context and resource owner put back after each step.
    // The pins are taken in the caller's resource owner, outside the subtransaction, and released
    // in it on both ways out (or with the caller's (sub)transaction, if anything here fails).
    unsafe {
        let context = pg_sys::CurrentMemoryContext;
        let owner = pg_sys::CurrentResourceOwner;
        before.pin_advisory_locks();
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
            before.unpin_advisory_locks();
            error.rethrow()
        })
        .execute();
        pg_sys::ReleaseCurrentSubTransaction();
        pg_sys::CurrentMemoryContext = context;
        pg_sys::CurrentResourceOwner = owner;
        before.unpin_advisory_locks();
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
pub(super) fn within_restricted<R>(owner: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
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
pub(super) fn acting_owner(relid: pg_sys::Oid) -> pg_sys::Oid {
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

/// Sets a setting at the current GUC nest level, as `RestrictSearchPath()` does: undone when the
/// level ends.
pub(super) unsafe fn set_at_this_level(name: &str, value: &str) {
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

/// `objectid_internal.rekey_name(relid)`, the relation's qualified and quoted name, or None when
/// there is no such relation: read as the database encoding's bytes and refused (server_text)
/// where pgrx could not read it as text.
fn relation_name(relid: pg_sys::Oid, what: &str) -> Option<String> {
    Spi::get_one_with_args::<String>(
        "SELECT pg_catalog.encode(pg_catalog.convert_to(objectid_internal.rekey_name($1),
                                                        pg_catalog.getdatabaseencoding()), 'hex')",
        &[relid.into()],
    )
    .unwrap_or_else(|e| error!("cannot name {what}: {e}"))
    .map(|name| {
        let bytes = hex::decode(name).unwrap_or_default();
        server_text(&bytes, what).to_owned()
    })
}

/// Text of the database's encoding as Rust text, where it reads the same: any in a UTF-8
/// database, and elsewhere ASCII only.
pub(super) fn readable(bytes: &[u8]) -> Option<&str> {
    // SAFETY: reads the database's encoding, fixed for the session.
    let utf8 =
        unsafe { pg_sys::GetDatabaseEncoding() } == pg_sys::pg_enc::PG_UTF8 as std::ffi::c_int;
    std::str::from_utf8(bytes)
        .ok()
        .filter(|_| utf8 || bytes.is_ascii())
}

/// Text of the database's encoding to show in a message: as it is where readable, otherwise with
/// its bytes outside ASCII escaped.
pub(super) fn shown(bytes: &[u8]) -> String {
    readable(bytes).map_or_else(|| bytes.escape_ascii().to_string(), str::to_owned)
}

/// A text argument of the toolkit's (a statement, a name) as Rust text: any text in a UTF-8
/// database, and elsewhere only text in ASCII, which reads the same in every server encoding. A
/// table's or column's name with other characters, in a database of another encoding, is refused
/// here (0A000, the text quoted with its other bytes escaped) rather than by pgrx's conversion,
/// whose refusal is a panic's message: not supported yet.
pub(super) fn server_text<'a>(bytes: &'a [u8], what: &str) -> &'a str {
    match readable(bytes) {
        Some(text) => text,
        _ => {
            // SAFETY: the encoding's name, a static string.
            let encoding = unsafe { std::ffi::CStr::from_ptr(pg_sys::GetDatabaseEncodingName()) };
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!(
                    "the rekey toolkit does not yet support names with characters outside ASCII in a database of encoding {}: {what} \"{}\"",
                    encoding.to_string_lossy(),
                    bytes.escape_ascii()
                ),
                "Rename the tables and columns involved, or rekey in a UTF8 database."
            );
        }
    }
}

/// The columns of the first row a statement returned (none when it returned no row), each as its
/// value, whether it is NULL, and its type: valid only until SPI frees the statement's rows.
pub(super) type FirstRow = Vec<(pg_sys::Datum, bool, pg_sys::Oid)>;

/// Column `column` (from 0) of `row` as an array of `T`, whose array type is `array_type`: NULL
/// when the row or the value is missing, an error (42804) quoting `query` when the column has
/// another type, as reading another type's value as this one would crash the server.
///
/// # Safety
/// `row` is the FirstRow that execute gave its `read`, still held by SPI.
pub(super) unsafe fn array_column<T>(
    row: &FirstRow,
    column: usize,
    array_type: pg_sys::Oid,
    query: &str,
) -> Option<Vec<Option<T>>>
where
    Vec<Option<T>>: FromDatum,
{
    let (datum, isnull, type_oid) = *row.get(column)?;
    if type_oid != array_type {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
            format!(
                "column {} of a rekey statement's result is of type OID {}, not {}: \"{query}\"",
                column + 1,
                type_oid.to_u32(),
                array_type.to_u32()
            )
        );
    }
    // SAFETY: a value of the array type checked above, still held by SPI (the caller's contract).
    unsafe { Vec::<Option<T>>::from_polymorphic_datum(datum, isnull, type_oid) }
}

/// Runs `query` with `args` through SPI, the way PostgreSQL's foreign-key triggers run theirs
/// (`ri_PerformCheck` in ri_triggers.c, with `SPI_execute_snapshot`), and gives `read` the rows
/// it processed and the columns of its first row (FirstRow), before SPI frees them. `query` must be a single command: SPI would run each of
/// several and show only the last one's rows, whatever the caller wrapped around the first.
/// - `read_only`: a read, under exactly the snapshot of the statement that called (as
///   `SPI_execute_snapshot` does with a snapshot and read_only), refused if it writes; several
///   reads made by one statement therefore see the database in one state;
/// - without `fire_triggers`, the AFTER triggers the statement queues (its foreign keys' checks)
///   fire when the statement that called ends, not when this one does, as for the updates a
///   foreign key's ON UPDATE CASCADE makes.
///
/// Must be called inside an SPI connection.
pub(super) fn execute<T>(
    query: &str,
    args: &[DatumWithOid],
    read_only: bool,
    fire_triggers: bool,
    read: impl FnOnce(u64, FirstRow) -> T,
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
        let sources = pg_sys::SPI_plan_get_plan_sources(plan);
        if sources.is_null() || (*sources).length != 1 {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_SYNTAX_ERROR,
                format!("a rekey statement must be a single command: \"{query}\"")
            );
        }
        // A query, not a utility command (SELECT INTO, COPY, DO, CALL, DDL): what the rekey runs
        // is a read or a write of rows, and a utility command's rows SPI would not show.
        let source = pgrx::PgList::<pg_sys::CachedPlanSource>::from_pg(sources)
            .get_ptr(0)
            .expect("one plan source");
        let utility = pgrx::PgList::<pg_sys::Query>::from_pg((*source).query_list)
            .iter_ptr()
            .any(|q| (*q).commandType == pg_sys::CmdType::CMD_UTILITY);
        if utility {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_SYNTAX_ERROR,
                format!("a rekey statement must be a query, not a utility command: \"{query}\"")
            );
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
        let first = if table.is_null() || processed == 0 {
            Vec::new()
        } else {
            (1..=(*(*table).tupdesc).natts)
                .map(|column| {
                    let mut isnull = false;
                    let datum = pg_sys::SPI_getbinval(
                        *(*table).vals,
                        (*table).tupdesc,
                        column,
                        &mut isnull,
                    );
                    (
                        datum,
                        isnull,
                        pg_sys::SPI_gettypeid((*table).tupdesc, column),
                    )
                })
                .collect()
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
fn rekey_read_as_owner(relid: pg_sys::Oid, query: &[u8]) -> Option<JsonB> {
    let query = server_text(query, "a read");
    let wrapped = format!("SELECT pg_catalog.to_jsonb(q.*) FROM ({query}) q");
    as_owner(relid, || {
        Spi::connect(|_client| {
            execute(&wrapped, &[], true, true, |processed, first| {
                if processed > 1 {
                    ereport!(
                        ERROR,
                        PgSqlErrorCode::ERRCODE_CARDINALITY_VIOLATION,
                        format!("a rekey read returned more than one row: \"{query}\"")
                    );
                }
                first.first().copied().and_then(|(datum, isnull, type_oid)| {
                    // The wrapper makes it jsonb; checked all the same, as reading any other
                    // type's value as a jsonb pointer would crash the server.
                    if type_oid != pg_sys::JSONBOID {
                        ereport!(
                            ERROR,
                            PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                            format!("a rekey read returned a column of type OID {}, not jsonb: \"{query}\"", type_oid.to_u32())
                        );
                    }
                    // SAFETY: a jsonb value, checked above, read while SPI still holds it.
                    unsafe { JsonB::from_datum(datum, isnull) }
                })
            })
        })
    })
}

/// Refuses a relation that no longer exists (or never did), as PostgreSQL refuses a name it
/// cannot find.
fn gone(relid: pg_sys::Oid, what: &str) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
        format!("the {what} (OID {}) does not exist", relid.to_u32())
    );
}

/// The new key of `old_key` in the mapping table `mapping`, for rekey_translate: read as the
/// mapping table's owner in a security-restricted operation, after checking that the caller may
/// translate with it. Whatever the owner attached to the table since rekey_translate checked it
/// (an index or statistics expression the planner folds) then runs as the owner, never as the
/// application's role or a superuser that translates.
///
/// Who may translate does not depend on who made the mapping table (the rekey's runner, whose
/// default privileges it got): whoever may read every row of the key column of the table it maps
/// (SELECT on that column, and no row-level security applying to the caller there, whatever its
/// policies show, which cannot be told; or a member of the owner's role), as such a role can read
/// every key and the creation time each
/// carries anyway; or whoever was granted SELECT on the mapping table's old_key and new_key. The
/// table it maps is the one its comment binds it to (rekey_mapping_comment, which only the mapping
/// table's owner can set), of the same owner: a comment that names another role's table binds
/// nothing.
#[pg_extern(sql = false)]
fn rekey_translate_read(mapping: pg_sys::Oid, old_key: Uuid) -> Option<Uuid> {
    let name = relation_name(mapping, "the mapping table")
        .unwrap_or_else(|| gone(mapping, "mapping table"));
    // Read as the owner, row-level security would not apply: a table with it is no mapping table
    // (rekey_mapping_problem refuses it too), and this function may be called on any table.
    let may_read = Spi::get_one_with_args::<bool>(
        "WITH m AS (SELECT c.relowner, pg_catalog.obj_description(c.oid, 'pg_class'::pg_catalog.name) AS comment
                      FROM pg_catalog.pg_class c
                     WHERE c.oid OPERATOR(pg_catalog.=) $1 AND c.relkind OPERATOR(pg_catalog.=) 'r'::\"char\"
                       AND NOT c.relrowsecurity),
              mapped AS (SELECT t.oid, t.relowner FROM m, pg_catalog.pg_class t
                          WHERE t.oid OPERATOR(pg_catalog.=) (SELECT CASE WHEN x.n OPERATOR(pg_catalog.<) 4294967296::pg_catalog.numeric
                                                                          THEN x.n::pg_catalog.int8::pg_catalog.oid END
                                                                FROM (SELECT pg_catalog.substring(m.comment,
                                                                        '^pg_objectid rekey mapping: old -> new keys of relation ([0-9]{1,10}) '::pg_catalog.text)::pg_catalog.numeric AS n) x)
                            AND t.relowner OPERATOR(pg_catalog.=) m.relowner
                            AND m.comment OPERATOR(pg_catalog.=) objectid_internal.rekey_mapping_comment(t.oid::pg_catalog.regclass))
         SELECT (pg_catalog.has_column_privilege($1, 'old_key'::pg_catalog.text, 'SELECT'::pg_catalog.text)
                 AND pg_catalog.has_column_privilege($1, 'new_key'::pg_catalog.text, 'SELECT'::pg_catalog.text))
                OR coalesce((SELECT pg_catalog.has_column_privilege(mapped.oid, k.conkey[1], 'SELECT'::pg_catalog.text)
                                    AND (NOT pg_catalog.row_security_active(mapped.oid)
                                         OR pg_catalog.pg_has_role(mapped.relowner, 'USAGE'::pg_catalog.text))
                               FROM mapped JOIN pg_catalog.pg_constraint k ON k.conrelid OPERATOR(pg_catalog.=) mapped.oid
                              WHERE k.contype OPERATOR(pg_catalog.=) 'p'::\"char\"), false)
           FROM m",
        &[mapping.into()],
    )
    .unwrap_or_else(|e| match e {
        pgrx::spi::SpiError::InvalidPosition => None,
        e => error!("cannot check the privileges on the mapping table: {e}"),
    });
    if may_read != Some(true) {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied to translate keys through the mapping table {name}"),
            "Keys are translated by whoever may read every row of the key column of the table the mapping table was made for, or has SELECT on its old_key and new_key; it must be a plain table without row-level security."
        );
    }
    // The new key is read as a uuid: a column of another type is refused here, as
    // rekey_mapping_problem refuses it for rekey_translate, not left to the conversion.
    let uuid_columns = Spi::get_one_with_args::<i64>(
        "SELECT pg_catalog.count(*) FROM pg_catalog.pg_attribute a
          WHERE a.attrelid OPERATOR(pg_catalog.=) $1
            AND a.attname OPERATOR(pg_catalog.=) ANY ('{old_key,new_key}'::pg_catalog.name[])
            AND a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.uuid'::pg_catalog.regtype
            AND NOT a.attisdropped",
        &[mapping.into()],
    )
    .unwrap_or_else(|e| error!("cannot read the mapping table's columns: {e}"));
    if uuid_columns != Some(2) {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
            format!("the mapping table {name} needs old_key and new_key of type uuid")
        );
    }
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
    let name = relation_name(matview, "the materialized view")
        .unwrap_or_else(|| gone(matview, "materialized view"));
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
