//! Text and binary I/O: `objectid_in`, `objectid_out`, `objectid_recv`, `objectid_send`.

use core::ffi::CStr;
use std::ffi::CString;

use pgrx::datum::Internal;
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::kernel::objectid::{ObjectId, ParseError, HEX_LEN, LEN};

/// Returns NULL only after reporting bad input softly (see `report_softly`).
#[pg_extern(sql = false)]
fn objectid_in(input: &CStr, fcinfo: pg_sys::FunctionCallInfo) -> Option<ObjectId> {
    let err = match ObjectId::parse_hex(input.to_bytes()) {
        Ok(id) => return Some(id),
        Err(err) => err,
    };
    let (message, detail) = invalid_text(input.to_bytes(), err);
    let code = PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION;
    if !report_softly(fcinfo, code, &message, &detail) {
        ereport!(ERROR, code, message, detail);
    }
    None
}

/// The message and detail of text that is not an objectid (ERRCODE_INVALID_TEXT_REPRESENTATION),
/// for the type's input function and for the jsonb cast alike.
pub(super) fn invalid_text(input: &[u8], err: ParseError) -> (String, String) {
    let message = format!(
        "invalid input syntax for type objectid: \"{}\"",
        quote(input)
    );
    let detail = match err {
        ParseError::Length(n) => {
            format!("An objectid has {HEX_LEN} hexadecimal digits; this input has {n} bytes.")
        }
        ParseError::Digit(at) => format!("Byte {} is not a hexadecimal digit.", at + 1),
    };
    (message, detail)
}

/// At most this many characters of bad input are quoted in an error message, followed by "...".
pub(super) const QUOTE_MAX: usize = 100;

/// The start of `input` for an error message. Only the bytes that `QUOTE_MAX` characters can take
/// are looked at, so that the message's size does not grow with the input: Rust's allocator
/// aborts the process when memory runs out, where PostgreSQL's palloc would raise an ERROR, and a
/// user can hand any function hundreds of megabytes.
pub(super) fn quote(input: &[u8]) -> String {
    let window = &input[..input.len().min(4 * QUOTE_MAX)];
    let text = String::from_utf8_lossy(window);
    match text.char_indices().nth(QUOTE_MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None if window.len() < input.len() => format!("{text}..."),
        None => text.into_owned(),
    }
}

#[cfg(any(feature = "pg16", feature = "pg17", feature = "pg18", feature = "pg19"))]
extern "C-unwind" {
    // Exported by the server; missing from pgrx's bindings.
    fn errcode(sqlerrcode: core::ffi::c_int) -> core::ffi::c_int;
}

/// From PostgreSQL 16 on, a caller such as `pg_input_is_valid()` or `COPY ... (ON_ERROR
/// ignore)` may pass an ErrorSaveContext and expect bad input to be recorded there rather than
/// thrown. Returns whether the error was recorded so.
#[cfg(any(feature = "pg16", feature = "pg17", feature = "pg18", feature = "pg19"))]
fn report_softly(
    fcinfo: pg_sys::FunctionCallInfo,
    code: PgSqlErrorCode,
    message: &str,
    detail: &str,
) -> bool {
    // SAFETY: fcinfo is the live call frame; its context, when set, is a Node.
    unsafe {
        let context = (*fcinfo).context;
        if context.is_null() || (*context).type_ != pg_sys::NodeTag::T_ErrorSaveContext {
            return false;
        }
        // errsave_start says whether the caller wants the details or only the fact.
        if pg_sys::errsave_start(context, core::ptr::null()) {
            let message = CString::new(message).unwrap_or_default();
            let detail = CString::new(detail).unwrap_or_default();
            errcode(code as core::ffi::c_int);
            pg_sys::errmsg_internal(c"%s".as_ptr(), message.as_ptr());
            pg_sys::errdetail_internal(c"%s".as_ptr(), detail.as_ptr());
            pg_sys::errsave_finish(
                context,
                c"src/objectid/io.rs".as_ptr(),
                line!() as core::ffi::c_int,
                c"objectid_in".as_ptr(),
            );
        }
    }
    true
}

#[cfg(not(any(feature = "pg16", feature = "pg17", feature = "pg18", feature = "pg19")))]
fn report_softly(_: pg_sys::FunctionCallInfo, _: PgSqlErrorCode, _: &str, _: &str) -> bool {
    false
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
