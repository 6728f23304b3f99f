//! `objectid_internal.rekey_batch_catalog`: what a rekey batch derives from the system catalogs
//! (`rekey_batch_catalog_read`: the tables to lock, the problems that stop it, its deferrable
//! constraints and its statements), kept in the backend across batches until a catalog may have
//! changed (catalog_epoch.rs). Read for every batch, it cost a 1,000-key batch about as much as
//! rewriting 300 more keys.
//!
//! Nothing is kept that a caller supplies: the answer is always `rekey_batch_catalog_read`'s own,
//! for exactly the arguments, user and security context it was read with, so a table owner's code
//! that calls this inside a batch (in a security-restricted operation, as the owner) reads and
//! keeps an answer of its own, which the batch never takes for its own.

use std::cell::RefCell;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;

use super::catalog_epoch;

#[derive(PartialEq)]
struct Key {
    tbl: pg_sys::Oid,
    time_column: String,
    time_zone: String,
    mapping_table: pg_sys::Oid,
    fire_triggers: bool,
}

thread_local! {
    static KEPT: RefCell<Option<catalog_epoch::Kept<Key, Option<String>>>> = const { RefCell::new(None) };
}

/// `rekey_batch_catalog_read(tbl, time_column, time_zone, mapping_table, fire_triggers)` as text:
/// the one read last when no catalog invalidation has been processed since, for the same
/// arguments, user and security context; read again otherwise.
#[pg_extern(sql = false)]
fn rekey_batch_catalog(
    tbl: pg_sys::Oid,
    time_column: &[u8],
    time_zone: &[u8],
    mapping_table: pg_sys::Oid,
    fire_triggers: bool,
) -> Option<String> {
    let time_column = super::as_owner::server_text(time_column, "the time column");
    let time_zone = super::as_owner::server_text(time_zone, "the time zone");
    let key = Key {
        tbl,
        time_column: time_column.to_owned(),
        time_zone: time_zone.to_owned(),
        mapping_table,
        fire_triggers,
    };
    catalog_epoch::kept(&KEPT, key, || {
        read(tbl, time_column, time_zone, mapping_table, fire_triggers)
    })
}

/// `rekey_batch_catalog_read`'s answer now, as text.
fn read(
    tbl: pg_sys::Oid,
    time_column: &str,
    time_zone: &str,
    mapping_table: pg_sys::Oid,
    fire_triggers: bool,
) -> Option<String> {
    // Read with a snapshot of its own (not the calling statement's), taken after the count was
    // read: whatever was committed before the count was read is seen, and whatever is committed
    // after it is counted before the answer is used again.
    // As the database encoding's bytes (hex), read by server_text: the names in it (a table renamed
    // during the rekey, say) may be outside ASCII in a database whose encoding is not UTF-8,
    // which pgrx cannot read as text.
    let hex = Spi::connect_mut(|client| {
        client
            .update(
                "SELECT pg_catalog.encode(pg_catalog.convert_to(
                            objectid_internal.rekey_batch_catalog_read($1::pg_catalog.regclass, $2::pg_catalog.name,
                                                                       $3, $4, $5)::pg_catalog.text,
                            pg_catalog.getdatabaseencoding()), 'hex')",
                None,
                &[
                    DatumWithOid::from(tbl),
                    DatumWithOid::from(time_column),
                    DatumWithOid::from(time_zone),
                    DatumWithOid::from(mapping_table),
                    DatumWithOid::from(fire_triggers),
                ],
            )
            .and_then(|t| t.first().get_one::<String>())
    })
    .unwrap_or_else(|e| error!("cannot read what the rekey batch needs from the catalogs: {e}"));
    hex.map(|hex| {
        let bytes = hex::decode(hex).unwrap_or_default();
        super::as_owner::server_text(&bytes, "the tables of the rekey").to_owned()
    })
}
