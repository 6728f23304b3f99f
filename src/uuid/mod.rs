//! PostgreSQL 18's UUID functions for every version: `uuidv7()`, `uuidv7(interval)`, `uuidv4()`,
//! `uuid_extract_timestamp()`, `uuid_extract_version()`, and the time helpers `uuidv7_from_time()`
//! and `uuidv7_at()`, over the built-in `uuid` type. The layouts live in `crate::kernel::uuidv7`.

mod extract;
mod generate;

use pgrx::prelude::*;

/// 22008, datetime_field_overflow: what PostgreSQL 18.6 raises for a time a v7 cannot carry.
fn timestamp_out_of_range() -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
        "timestamp out of range for UUID version 7",
        "UUID version 7 supports timestamps from 1970-01-01 to approximately year 10889."
    );
}

mod install {
    use pgrx::prelude::*;

    extension_sql_file!("../../sql/uuid_functions.sql", name = "uuid_functions");
}
