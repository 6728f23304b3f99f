//! `objectid_internal.rekey_new_key(key, keys, new_keys)`: the new key a batch's rewrite gives a
//! column (src/core/key_map.rs). Its arrays are the same for every row of a statement (the batch's
//! parameters), so the mapping is built once per statement and kept in the call's `fn_extra`, as
//! PostgreSQL keeps a hashed `= ANY` array in its expression's state (`ExecEvalHashedScalarArrayOp`);
//! the lookup of every row is then a binary search. Built again for each call where an argument
//! can change from row to row (`get_fn_expr_arg_stable`, as fmgr.c offers it for such caches).

use pgrx::datum::Uuid;
use pgrx::prelude::*;
use pgrx::{Array, FromDatum, PgMemoryContexts};

use crate::core::key_map::{Key, KeyMap};

/// The mapping built for one statement, with the two arrays it was built from.
struct Cached {
    keys: pg_sys::Datum,
    new_keys: pg_sys::Datum,
    map: KeyMap,
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
            .unwrap_or_else(|| error!("rekey_new_key: {argument} is NULL"));
    array
        .iter()
        .map(|key| match key {
            Some(key) => *key.as_bytes(),
            None => refuse(
                PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                format!("rekey_new_key: {argument} must not hold a NULL"),
            ),
        })
        .collect()
}

/// The mapping of `keys` to `new_keys`, or the error (22023) that says why there is none.
///
/// # Safety
/// Both are non-null `uuid[]` Datums.
unsafe fn build(keys: pg_sys::Datum, new_keys: pg_sys::Datum) -> KeyMap {
    // SAFETY: the caller's promise.
    let (keys, new_keys) = unsafe { (keys_of(keys, "keys"), keys_of(new_keys, "new_keys")) };
    KeyMap::new(keys, new_keys).unwrap_or_else(|e| {
        refuse(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
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
    // stored there lives in fn_mcxt, which outlives every call made through that FmgrInfo.
    unsafe {
        let key: Key = *pgrx::fcinfo::pg_getarg_datum_raw(fcinfo, 0).cast_mut_ptr::<Key>();
        let keys = pgrx::fcinfo::pg_getarg_datum_raw(fcinfo, 1);
        let new_keys = pgrx::fcinfo::pg_getarg_datum_raw(fcinfo, 2);
        let flinfo = (*fcinfo).flinfo;
        let stable = !flinfo.is_null()
            && pg_sys::get_fn_expr_arg_stable(flinfo, 1)
            && pg_sys::get_fn_expr_arg_stable(flinfo, 2);
        if !stable {
            return Uuid::from_bytes(build(keys, new_keys).new_key(&key));
        }
        let cached = (*flinfo).fn_extra.cast::<Cached>();
        let cached =
            if !cached.is_null() && (*cached).keys == keys && (*cached).new_keys == new_keys {
                cached
            } else {
                let fresh = Cached {
                    keys,
                    new_keys,
                    map: build(keys, new_keys),
                };
                let stored =
                    PgMemoryContexts::For((*flinfo).fn_mcxt).leak_and_drop_on_delete(fresh);
                (*flinfo).fn_extra = stored.cast();
                stored
            };
        Uuid::from_bytes((*cached).map.new_key(&key))
    }
}
