//! `objectid_internal.rekey_new_key(key, keys, new_keys)`: the new key a batch's rewrite gives a
//! column (src/kernel/key_map.rs). A batch's statement passes its arrays as parameters, which SPI's
//! one-shot plan folds into constants, so the mapping is built once per statement and kept in the
//! call's `fn_extra`, as PostgreSQL keeps a hashed `= ANY` array in its expression's state only
//! when the array is a `Const` (`convert_saop_to_hashed_saop`); the lookup of every row is then a
//! binary search. Any other argument is read again at each call: a PARAM_EXTERN parameter, which
//! fmgr's `get_fn_expr_arg_stable` counts as stable, can change between calls through the same
//! expression state (a PL/pgSQL variable in a simple expression), and a freed array's memory can
//! hold the next one at the same address.

use pgrx::datum::Uuid;
use pgrx::prelude::*;
use pgrx::{Array, FromDatum, PgMemoryContexts};

use crate::kernel::key_map::{Key, KeyMap, KeyMapError};
use crate::nodes::{is_a, list_ptrs};

/// The mapping built for one expression whose arrays are constants.
struct Cached {
    map: KeyMap,
}

/// Whether argument `argnum` of the call is a `Const` of the expression tree, which keeps its value
/// for as long as the FmgrInfo (and its fn_extra) lives.
///
/// # Safety
/// `flinfo` is the call's live FmgrInfo.
unsafe fn argument_is_const(flinfo: *mut pg_sys::FmgrInfo, argnum: usize) -> bool {
    // SAFETY: fn_expr, when set, is the FuncExpr (or another node) that made the call.
    unsafe {
        let expr = (*flinfo).fn_expr;
        is_a(expr, pg_sys::NodeTag::T_FuncExpr)
            && list_ptrs((*expr.cast::<pg_sys::FuncExpr>()).args)
                .nth(argnum)
                .is_some_and(|arg| is_a(arg.cast(), pg_sys::NodeTag::T_Const))
    }
}

/// Raises an ERROR with `code`: never returns.
fn refuse(code: PgSqlErrorCode, message: String) -> ! {
    ereport!(ERROR, code, message);
}

/// The elements of a `uuid[]` argument: an error (22004), not a wrong key, for a NULL element.
///
/// # Safety
/// `datum` is a non-null `uuid[]` Datum.
unsafe fn keys_of(datum: pg_sys::Datum, argument: &str) -> Vec<Key> {
    // SAFETY: the caller's promise; the array is detoasted into the current context.
    let array =
        unsafe { Array::<Uuid>::from_polymorphic_datum(datum, false, pg_sys::UUIDARRAYOID) }
            .unwrap_or_else(|| {
                refuse(
                    PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                    format!("rekey_new_key: {argument} is NULL"),
                )
            });
    // Reserved fallibly: an allocation Rust cannot make aborts the whole server, where
    // PostgreSQL's own would be an ERROR (any role may call this with an array of ~1 GB).
    let mut keys: Vec<Key> = Vec::new();
    if keys.try_reserve_exact(array.len()).is_err() {
        refuse(
            PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
            format!("rekey_new_key: no memory for {} {argument}", array.len()),
        );
    }
    for key in array.iter() {
        match key {
            Some(key) => keys.push(*key.as_bytes()),
            None => refuse(
                PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                format!("rekey_new_key: {argument} must not hold a NULL"),
            ),
        }
    }
    keys
}

/// The mapping of `keys` to `new_keys`, or the error (22023) that says why there is none.
///
/// # Safety
/// Both are non-null `uuid[]` Datums.
unsafe fn build(keys: pg_sys::Datum, new_keys: pg_sys::Datum) -> KeyMap {
    // SAFETY: the caller's promise.
    let (keys, new_keys) = unsafe { (keys_of(keys, "keys"), keys_of(new_keys, "new_keys")) };
    KeyMap::new(keys, new_keys).unwrap_or_else(|e| {
        let code = match e {
            KeyMapError::OutOfMemory { .. } => PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
            _ => PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        };
        refuse(
            code,
            format!("rekey_new_key: the keys and new keys make no mapping: {e}"),
        )
    })
}

/// The element of `new_keys` at the place of `key` in `keys`, or `key` itself when it is not
/// among them (SQL: STRICT, IMMUTABLE).
#[pg_extern(sql = false)]
fn rekey_new_key(fcinfo: pg_sys::FunctionCallInfo) -> Uuid {
    // SAFETY: the SQL function is STRICT with arguments (uuid, uuid[], uuid[]), so each is a
    // non-null Datum of its type; fn_extra belongs to this function's FmgrInfo, and what is
    // stored there lives in fn_mcxt, which outlives every call made through that FmgrInfo, whose
    // constant arguments are the same at every call.
    unsafe {
        let key: Key = *pgrx::fcinfo::pg_getarg_datum_raw(fcinfo, 0).cast_mut_ptr::<Key>();
        let keys = pgrx::fcinfo::pg_getarg_datum_raw(fcinfo, 1);
        let new_keys = pgrx::fcinfo::pg_getarg_datum_raw(fcinfo, 2);
        let flinfo = (*fcinfo).flinfo;
        let constant =
            !flinfo.is_null() && argument_is_const(flinfo, 1) && argument_is_const(flinfo, 2);
        if !constant {
            return Uuid::from_bytes(build(keys, new_keys).new_key(&key));
        }
        let mut cached = (*flinfo).fn_extra.cast::<Cached>();
        if cached.is_null() {
            let fresh = Cached {
                map: build(keys, new_keys),
            };
            cached = PgMemoryContexts::For((*flinfo).fn_mcxt).leak_and_drop_on_delete(fresh);
            (*flinfo).fn_extra = cached.cast();
        }
        Uuid::from_bytes((*cached).map.new_key(&key))
    }
}
