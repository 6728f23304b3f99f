//! Explicit casts between `objectid` and `jsonb` in MongoDB Extended JSON: `{"$oid": "…"}`, as
//! `mongoexport` writes an ObjectId (`src/kernel/extjson.rs` decides what converts).
//!
//! Only casts to `jsonb` are declared, never to `json`: `to_jsonb()` and `to_json()` of a row
//! look for a cast to `json` (jsonb.c's `jsonb_categorize_type`, json.c's
//! `json_categorize_type`), so they keep writing an objectid as its plain 24-hex string.

use pgrx::prelude::*;
use pgrx::{pg_sys, JsonB};

use crate::kernel::extjson::{self, FromJsonError, Json, Kind, Scalar, OID_KEY};
use crate::kernel::objectid::ObjectId;

/// `{"$oid": "<24 hex digits>"}`. Named after the target type, as PostgreSQL names cast
/// functions.
#[pg_extern(sql = false)]
fn jsonb(id: &ObjectId) -> JsonB {
    JsonB(serde_json::json!({ OID_KEY: id.to_hex() }))
}

/// The cast from jsonb (see sql/objectid_json.sql for its name). Mirrors jsonb.c's scalar casts (`jsonb_numeric`
/// and its siblings): a JSON null gives SQL NULL, as from PostgreSQL 18 on; any other kind that
/// holds no ObjectId raises ERRCODE_INVALID_PARAMETER_VALUE with their message.
#[pg_extern(sql = false)]
fn objectid_from_jsonb(fcinfo: pg_sys::FunctionCallInfo) -> Option<ObjectId> {
    // SAFETY: the SQL function is STRICT with one jsonb argument, so argument 0 is a non-null
    // jsonb Datum; detoasting yields a palloc'd (or the original) Jsonb that lives until the
    // call returns, and every pointer taken below points into it.
    unsafe {
        let raw = pgrx::fcinfo::pg_getarg_datum_raw(fcinfo, 0);
        let jsonb = pg_sys::pg_detoast_datum(raw.cast_mut_ptr()).cast::<pg_sys::Jsonb>();
        let root = &raw mut (*jsonb).root;
        let mut value: pg_sys::JsonbValue = core::mem::zeroed();
        let found = if pg_sys::JsonbExtractScalar(root, &mut value) {
            match value.type_ {
                pg_sys::jbvType::jbvString => Json::String(string_bytes(&value)),
                other => Json::Other(scalar_kind(other)),
            }
        } else if (*root).header & pg_sys::JB_FOBJECT != 0 {
            let keys = ((*root).header & pg_sys::JB_CMASK) as usize;
            let mut oid: pg_sys::JsonbValue = core::mem::zeroed();
            let hit = pg_sys::getKeyJsonValueFromContainer(
                root,
                OID_KEY.as_ptr().cast(),
                OID_KEY.len() as i32,
                &mut oid,
            );
            let oid = (!hit.is_null()).then(|| match oid.type_ {
                pg_sys::jbvType::jbvString => Scalar::String(string_bytes(&oid)),
                pg_sys::jbvType::jbvBinary => Scalar::Other(container_kind(&oid)),
                other => Scalar::Other(scalar_kind(other)),
            });
            Json::Object { keys, oid }
        } else {
            Json::Other(Kind::Array)
        };
        extjson::from_json(found).unwrap_or_else(|err| report(err, found, jsonb))
    }
}

/// The bytes of a jbvString, which point into the jsonb (hence a lifetime of the caller's
/// choosing: the argument's) and are not NUL-terminated.
unsafe fn string_bytes<'a>(value: &pg_sys::JsonbValue) -> &'a [u8] {
    let string = unsafe { value.val.string };
    match usize::try_from(string.len) {
        Ok(len) if len > 0 => unsafe { core::slice::from_raw_parts(string.val.cast(), len) },
        _ => &[],
    }
}

fn scalar_kind(kind: pg_sys::jbvType::Type) -> Kind {
    match kind {
        pg_sys::jbvType::jbvNull => Kind::Null,
        pg_sys::jbvType::jbvString => Kind::String,
        pg_sys::jbvType::jbvNumeric => Kind::Numeric,
        pg_sys::jbvType::jbvBool => Kind::Boolean,
        pg_sys::jbvType::jbvArray => Kind::Array,
        _ => Kind::Object,
    }
}

/// A nested array or object comes back from a key lookup as jbvBinary, a pointer to its
/// container; the container's header says which it is.
unsafe fn container_kind(value: &pg_sys::JsonbValue) -> Kind {
    let header = unsafe { (*value.val.binary.data).header };
    if header & pg_sys::JB_FOBJECT != 0 {
        Kind::Object
    } else {
        Kind::Array
    }
}

fn report(err: FromJsonError, found: Json<'_>, jsonb: *mut pg_sys::Jsonb) -> ! {
    let code = PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE;
    match err {
        FromJsonError::Hex(parse) => {
            // Quote the string itself, as the text input would: it is what failed to parse.
            let text = match found {
                Json::String(text)
                | Json::Object {
                    oid: Some(Scalar::String(text)),
                    ..
                } => text,
                _ => &[],
            };
            let (message, detail) = super::io::invalid_text(text, parse);
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
                message,
                detail
            );
        }
        FromJsonError::Kind(kind) => {
            ereport!(
                ERROR,
                code,
                format!("cannot cast jsonb {} to type objectid", kind.name()),
                format!("The value is {}.", quoted(jsonb))
            );
        }
        FromJsonError::NotWrapper { keys, has_oid } => {
            ereport!(
                ERROR,
                code,
                "cannot cast jsonb object to type objectid",
                format!(
                    "An object converts only in MongoDB Extended JSON, {{\"{OID_KEY}\": \"<24 \
                 hexadecimal digits>\"}}, with no other key; this one has {keys} key{}{}: {}.",
                    if keys == 1 { "" } else { "s" },
                    if has_oid { "" } else { " and no \"$oid\"" },
                    quoted(jsonb)
                )
            );
        }
        FromJsonError::OidNotString(kind) => {
            ereport!(
                ERROR,
                code,
                "cannot cast jsonb object to type objectid",
                format!(
                    "\"{OID_KEY}\" holds a jsonb {}, not a string of 24 hexadecimal digits: {}.",
                    kind.name(),
                    quoted(jsonb)
                )
            );
        }
    }
}

/// The input as jsonb prints it, cut short if long (see `io::quote`): a bad key in a large
/// document must not fill the log with the document, nor copy it to Rust's heap.
fn quoted(jsonb: *mut pg_sys::Jsonb) -> String {
    // SAFETY: jsonb is the detoasted argument; JsonbToCString returns a NUL-terminated palloc'd
    // string (its length argument only sizes the first allocation), freed once quoted.
    unsafe {
        let out = pg_sys::JsonbToCString(
            core::ptr::null_mut(),
            &raw mut (*jsonb).root,
            pgrx::varsize_any_exhdr(jsonb.cast()) as i32,
        );
        let text = super::io::quote(core::ffi::CStr::from_ptr(out).to_bytes());
        pg_sys::pfree(out.cast());
        text
    }
}
