//! The catalog objects the planner code recognises and builds with, by OID.
//!
//! Everything is matched by OID: the extension's own objects are looked up in the extension's
//! schema with their exact argument types and then checked to belong to the extension
//! (`pg_depend`), so a function or operator a user creates under the same name, in any schema,
//! is never taken for ours. PostgreSQL's own objects are matched by their fixed OIDs or through
//! their built-in operator families.
//!
//! Looking the extension up reads `pg_extension`, which has no cache, so the answer is kept per
//! backend and dropped whenever `pg_proc`, `pg_type` or `pg_opclass` changes (a syscache
//! invalidation callback): `CREATE`/`DROP`/`ALTER EXTENSION` always touch `pg_proc`.

use core::ffi::CStr;
use core::ptr;
use std::cell::Cell;

use pgrx::pg_sys;

/// OIDs of the extension's objects in the current database.
#[derive(Clone, Copy)]
pub(crate) struct Catalog {
    pub objectid_type: pg_sys::Oid,
    pub objectid_timestamp: pg_sys::Oid,
    /// `>=` and `<=` of the extension's btree operator family for objectid.
    pub objectid_ge: pg_sys::Oid,
    pub objectid_le: pg_sys::Oid,
    /// The exact bounds (see `crate::kernel::time::first_at_or_after`).
    pub first_at_or_after: pg_sys::Oid,
    pub first_after: pg_sys::Oid,
    pub last_at_or_before: pg_sys::Oid,
    pub last_before: pg_sys::Oid,
    pub uuid_extract_timestamp: pg_sys::Oid,
    pub uuid_extract_version: pg_sys::Oid,
    /// `>=` and `<=` of PostgreSQL's `uuid_ops`.
    pub uuid_ge: pg_sys::Oid,
    pub uuid_le: pg_sys::Oid,
    /// Bounds implied by a v7's time (not exact: the planner keeps the condition with them).
    pub uuidv7_lower_bound: pg_sys::Oid,
    pub uuidv7_upper_bound: pg_sys::Oid,
    pub uuidv7_upper_bound_before: pg_sys::Oid,
}

#[derive(Clone, Copy)]
enum Cached {
    Unknown,
    /// The extension is not installed here, or not completely (mid-update to a version with
    /// objects this library expects).
    Absent,
    Present(Catalog),
}

thread_local! {
    static CACHE: Cell<Cached> = const { Cell::new(Cached::Unknown) };
}

/// Registers the invalidation callbacks; from `_PG_init`.
pub(crate) fn init() {
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn forget(_arg: pg_sys::Datum, _cache: i32, _hash: u32) {
        CACHE.with(|c| c.set(Cached::Unknown));
    }
    for cache in [
        pg_sys::SysCacheIdentifier::PROCOID,
        pg_sys::SysCacheIdentifier::TYPEOID,
        pg_sys::SysCacheIdentifier::CLAOID,
    ] {
        // SAFETY: registering a plain function with no argument, as PostgreSQL's own modules do.
        unsafe { register_syscache_callback(cache as i32, forget) };
    }
}

type Callback = unsafe extern "C-unwind" fn(pg_sys::Datum, i32, u32);

#[cfg(not(feature = "pg13"))]
unsafe fn register_syscache_callback(cache: i32, callback: Callback) {
    unsafe {
        pg_sys::CacheRegisterSyscacheCallback(cache, Some(callback), pg_sys::Datum::from(0usize))
    }
}

/// pgrx's bindings for 13 leave out utils/inval.h; the function is the same in every version.
#[cfg(feature = "pg13")]
unsafe fn register_syscache_callback(cache: i32, callback: Callback) {
    unsafe extern "C-unwind" {
        fn CacheRegisterSyscacheCallback(cacheid: i32, func: Option<Callback>, arg: pg_sys::Datum);
    }
    unsafe { CacheRegisterSyscacheCallback(cache, Some(callback), pg_sys::Datum::from(0usize)) }
}

/// The extension's objects, if it is installed in the current database.
pub(crate) fn get() -> Option<Catalog> {
    let cached = CACHE.with(Cell::get);
    let found = match cached {
        Cached::Present(c) => return Some(c),
        Cached::Absent => return None,
        // SAFETY: catalog reads inside a transaction, which planning always is.
        Cached::Unknown => match unsafe { look_up() } {
            Some(c) => Cached::Present(c),
            None => Cached::Absent,
        },
    };
    CACHE.with(|c| c.set(found));
    match found {
        Cached::Present(c) => Some(c),
        _ => None,
    }
}

unsafe fn look_up() -> Option<Catalog> {
    unsafe {
        let extension = pg_sys::get_extension_oid(c"pg_objectid".as_ptr(), true);
        if extension == pg_sys::InvalidOid {
            return None;
        }
        let schema = extension_schema(extension)?;
        let ours = |class: pg_sys::Oid, oid: pg_sys::Oid| {
            (oid != pg_sys::InvalidOid && pg_sys::getExtensionOfObject(class, oid) == extension)
                .then_some(oid)
        };
        // Belonging to the extension is not enough: the owner of a trusted extension, who need
        // not be a superuser, can add functions of their own to it (ALTER EXTENSION … ADD), for
        // instance ones an older version lacks. Only a superuser can create a C function, so
        // each must also be a C function of this library with the expected symbol and signature.
        let function = |name: &CStr, arg: pg_sys::Oid, ret: pg_sys::Oid| {
            let qualified = qualified_name(schema, name);
            let oid = pg_sys::LookupFuncName(qualified, 1, &arg, true);
            ours(pg_sys::ProcedureRelationId, oid)
                .filter(|&f| is_library_function(f, name, &[arg], ret))
        };
        let objectid_type = ours(
            pg_sys::TypeRelationId,
            pg_sys::GetSysCacheOid(
                pg_sys::SysCacheIdentifier::TYPENAMENSP as i32,
                pg_sys::Anum_pg_type_oid as pg_sys::AttrNumber,
                pg_sys::Datum::from(c"objectid".as_ptr()),
                pg_sys::Datum::from(schema),
                pg_sys::Datum::from(0usize),
                pg_sys::Datum::from(0usize),
            ),
        )
        .filter(|&t| pg_sys::get_typtype(t) == pg_sys::TYPTYPE_BASE as core::ffi::c_char)?;
        let objectid_family = pg_sys::get_opclass_family(ours(
            pg_sys::OperatorClassRelationId,
            pg_sys::get_opclass_oid(
                pg_sys::BTREE_AM_OID,
                qualified_name(schema, c"objectid_ops"),
                true,
            ),
        )?);
        let uuid_opclass = pg_sys::get_opclass_oid(
            pg_sys::BTREE_AM_OID,
            qualified_name(pg_sys::Oid::from(pg_sys::PG_CATALOG_NAMESPACE), c"uuid_ops"),
            true,
        );
        if uuid_opclass == pg_sys::InvalidOid {
            return None;
        }
        let uuid_family = pg_sys::get_opclass_family(uuid_opclass);
        let member = |family: pg_sys::Oid, typ: pg_sys::Oid, strategy: u32| {
            let oid = pg_sys::get_opfamily_member(family, typ, typ, strategy as i16);
            (oid != pg_sys::InvalidOid).then_some(oid)
        };
        // The objectid operators' functions, checked like the functions above.
        let objectid_operator = |strategy: u32, symbol: &CStr| {
            member(objectid_family, objectid_type, strategy).filter(|&op| {
                is_library_function(
                    pg_sys::get_opcode(op),
                    symbol,
                    &[objectid_type, objectid_type],
                    pg_sys::BOOLOID,
                )
            })
        };
        let ts = pg_sys::TIMESTAMPTZOID;
        Some(Catalog {
            objectid_type,
            objectid_timestamp: function(c"objectid_timestamp", objectid_type, ts)?,
            objectid_ge: objectid_operator(pg_sys::BTGreaterEqualStrategyNumber, c"objectid_ge")?,
            objectid_le: objectid_operator(pg_sys::BTLessEqualStrategyNumber, c"objectid_le")?,
            first_at_or_after: function(c"objectid_first_at_or_after", ts, objectid_type)?,
            first_after: function(c"objectid_first_after", ts, objectid_type)?,
            last_at_or_before: function(c"objectid_last_at_or_before", ts, objectid_type)?,
            last_before: function(c"objectid_last_before", ts, objectid_type)?,
            uuid_extract_timestamp: function(c"uuid_extract_timestamp", pg_sys::UUIDOID, ts)?,
            uuid_extract_version: function(
                c"uuid_extract_version",
                pg_sys::UUIDOID,
                pg_sys::INT2OID,
            )?,
            uuid_ge: member(
                uuid_family,
                pg_sys::UUIDOID,
                pg_sys::BTGreaterEqualStrategyNumber,
            )?,
            uuid_le: member(
                uuid_family,
                pg_sys::UUIDOID,
                pg_sys::BTLessEqualStrategyNumber,
            )?,
            uuidv7_lower_bound: function(c"uuidv7_lower_bound", ts, pg_sys::UUIDOID)?,
            uuidv7_upper_bound: function(c"uuidv7_upper_bound", ts, pg_sys::UUIDOID)?,
            uuidv7_upper_bound_before: function(c"uuidv7_upper_bound_before", ts, pg_sys::UUIDOID)?,
        })
    }
}

/// Where the install script's `MODULE_PATHNAME` points (the control file's `module_pathname`).
const LIBRARY: &CStr = c"$libdir/pg_objectid";
/// pg_language's OID of C (`ClanguageId`, fixed in pg_language.dat).
const C_LANGUAGE: pg_sys::Oid = pg_sys::Oid::from_u32(13);

/// Whether function `oid` is this library's `name` (symbol `name_wrapper`, as pgrx exports it):
/// a C function in `LIBRARY`, immutable, strict, not returning a set, taking `args` and
/// returning `ret`.
unsafe fn is_library_function(
    oid: pg_sys::Oid,
    name: &CStr,
    args: &[pg_sys::Oid],
    ret: pg_sys::Oid,
) -> bool {
    unsafe {
        let tuple = pg_sys::SearchSysCache1(
            pg_sys::SysCacheIdentifier::PROCOID as i32,
            pg_sys::Datum::from(oid),
        );
        if tuple.is_null() {
            return false;
        }
        let form = pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_proc>(tuple);
        let text_column = |column: u32| {
            let mut isnull = true;
            let datum = pg_sys::SysCacheGetAttr(
                pg_sys::SysCacheIdentifier::PROCOID as i32,
                tuple,
                column as pg_sys::AttrNumber,
                &mut isnull,
            );
            (!isnull)
                .then(|| CStr::from_ptr(pg_sys::text_to_cstring(datum.cast_mut_ptr())).to_owned())
        };
        let symbol = format!("{}_wrapper", name.to_string_lossy());
        let f = &*form;
        let ok = f.prolang == C_LANGUAGE
            && f.provolatile == pg_sys::PROVOLATILE_IMMUTABLE as core::ffi::c_char
            && f.proisstrict
            && !f.proretset
            && f.prorettype == ret
            && usize::try_from(f.pronargs).ok() == Some(args.len())
            && args
                .iter()
                .enumerate()
                .all(|(i, &a)| *f.proargtypes.values.as_ptr().add(i) == a)
            && text_column(pg_sys::Anum_pg_proc_probin).as_deref() == Some(LIBRARY)
            && text_column(pg_sys::Anum_pg_proc_prosrc)
                .is_some_and(|s| s.to_bytes() == symbol.as_bytes());
        pg_sys::ReleaseSysCache(tuple);
        ok
    }
}

/// Whether the current user may call function `oid`: a query rewritten to call our bound
/// functions must not fail where the original would have run.
pub(crate) unsafe fn executable(oid: pg_sys::Oid) -> bool {
    unsafe {
        #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
        let result = pg_sys::pg_proc_aclcheck(
            oid,
            pg_sys::GetUserId(),
            pg_sys::ACL_EXECUTE as pg_sys::AclMode,
        );
        #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
        let result = pg_sys::object_aclcheck(
            pg_sys::ProcedureRelationId,
            oid,
            pg_sys::GetUserId(),
            pg_sys::ACL_EXECUTE as pg_sys::AclMode,
        );
        result == pg_sys::AclResult::ACLCHECK_OK
    }
}

/// `schema.name` as the List of String nodes name lookups take.
unsafe fn qualified_name(schema: pg_sys::Oid, name: &CStr) -> *mut pg_sys::List {
    unsafe {
        let schema_name = pg_sys::get_namespace_name(schema);
        let mut list = pg_sys::lappend(ptr::null_mut(), pg_sys::makeString(schema_name).cast());
        list = pg_sys::lappend(
            list,
            pg_sys::makeString(pg_sys::pstrdup(name.as_ptr())).cast(),
        );
        list
    }
}

/// The schema of extension `extension`, read from `pg_extension` as `get_extension_schema`
/// (extension.c) does; that function is exported only from PostgreSQL 16 on.
unsafe fn extension_schema(extension: pg_sys::Oid) -> Option<pg_sys::Oid> {
    let mut schema = None;
    unsafe {
        scan_catalog(
            pg_sys::ExtensionRelationId,
            pg_sys::ExtensionOidIndexId,
            pg_sys::Anum_pg_extension_oid,
            extension,
            |tuple, _| {
                schema = Some(
                    (*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_extension>(tuple))
                        .extnamespace,
                )
            },
        )
    };
    schema
}

/// pg_language's OID of SQL (`SQLlanguageId`, fixed in pg_language.dat).
pub(crate) const SQL_LANGUAGE: pg_sys::Oid = pg_sys::Oid::from_u32(14);

/// The language function `oid` is written in (pg_proc.prolang), if it exists.
pub(crate) unsafe fn function_language(oid: pg_sys::Oid) -> Option<pg_sys::Oid> {
    unsafe {
        let tuple = pg_sys::SearchSysCache1(
            pg_sys::SysCacheIdentifier::PROCOID as i32,
            pg_sys::Datum::from(oid),
        );
        if tuple.is_null() {
            return None;
        }
        let language = (*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_proc>(tuple)).prolang;
        pg_sys::ReleaseSysCache(tuple);
        Some(language)
    }
}

/// Calls `each` with every row of the system catalog `relation` whose oid column `column`
/// equals `key`, found through that column's index `index`, as `systable_beginscan` callers in
/// PostgreSQL do.
pub(crate) unsafe fn scan_catalog(
    relation: pg_sys::Oid,
    index: u32,
    column: u32,
    key: pg_sys::Oid,
    mut each: impl FnMut(pg_sys::HeapTuple, pg_sys::TupleDesc),
) {
    unsafe {
        let rel = pg_sys::table_open(relation, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let mut scankey: pg_sys::ScanKeyData = core::mem::zeroed();
        pg_sys::ScanKeyInit(
            &mut scankey,
            column as pg_sys::AttrNumber,
            pg_sys::BTEqualStrategyNumber as pg_sys::StrategyNumber,
            pg_sys::RegProcedure::from(pg_sys::F_OIDEQ),
            pg_sys::Datum::from(key),
        );
        let scan = pg_sys::systable_beginscan(
            rel,
            pg_sys::Oid::from(index),
            true,
            ptr::null_mut(),
            1,
            &mut scankey,
        );
        loop {
            let tuple = pg_sys::systable_getnext(scan);
            if tuple.is_null() {
                break;
            }
            each(tuple, (*rel).rd_att);
        }
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    }
}
