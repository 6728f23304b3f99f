//! Text and binary I/O: `objectid_in`, `objectid_out`, `objectid_recv`, `objectid_send`.

use core::ffi::CStr;
use std::ffi::CString;

use pgrx::datum::Internal;
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::core::objectid::{ObjectId, ParseError, HEX_LEN, LEN};

#[pg_extern(sql = false)]
fn objectid_in(input: &CStr) -> ObjectId {
    match ObjectId::parse_hex(input.to_bytes()) {
        Ok(id) => id,
        Err(err) => {
            let detail = match err {
                ParseError::Length(n) => {
                    format!(
                        "An objectid has {HEX_LEN} hexadecimal digits; this input has {n} bytes."
                    )
                }
                ParseError::Digit(at) => {
                    format!("Byte {} is not a hexadecimal digit.", at + 1)
                }
            };
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
                format!(
                    "invalid input syntax for type objectid: \"{}\"",
                    input.to_string_lossy()
                ),
                detail
            );
        }
    }
}

#[pg_extern(sql = false)]
fn objectid_out(id: &ObjectId) -> CString {
    let mut buf = [0u8; HEX_LEN];
    id.encode_hex(&mut buf);
    // Hex digits are never NUL.
    CString::new(buf.to_vec()).expect("hex digits contain no NUL")
}

/// Binary input is the 12 raw bytes, exactly BSON's ObjectId payload; anything else is refused
/// rather than truncated or padded.
#[pg_extern(sql = false)]
fn objectid_recv(mut buf: Internal) -> ObjectId {
    // SAFETY: PostgreSQL calls a type's receive function with a StringInfo.
    let buf = unsafe { buf.get_mut::<pg_sys::StringInfoData>() }
        .expect("objectid_recv is called with a message buffer");
    let remaining = usize::try_from(buf.len - buf.cursor).unwrap_or(0);
    if remaining != LEN {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_BINARY_REPRESENTATION,
            format!("invalid binary length for type objectid: {remaining} bytes, expected {LEN}")
        );
    }
    // SAFETY: the buffer holds `remaining` == LEN readable bytes from the cursor on.
    let bytes =
        unsafe { core::slice::from_raw_parts(buf.data.add(buf.cursor as usize).cast::<u8>(), LEN) };
    buf.cursor += LEN as i32;
    ObjectId::from_slice(bytes).expect("slice is LEN bytes")
}

#[pg_extern(sql = false)]
fn objectid_send(id: &ObjectId) -> &[u8] {
    id.as_bytes()
}
