//! The UUIDv4 → UUIDv7 rekey toolkit (`rekey_*`, docs/migration.md). Its logic is SQL and
//! PL/pgSQL in `sql/rekey/`: it reads the catalogs, and its batch loop must be a procedure
//! that commits, which only PL/pgSQL can be. What SQL cannot do is done here: tell whether that
//! procedure may commit at all, run the owner's code in a security-restricted operation
//! (`as_owner`, with `session_state` what it checks around it and `rekey_batch_as_owner` a batch
//! of several owners' statements), keep what a batch reads from the catalogs until a catalog
//! changes (`catalog_epoch`, `rekey_batch_catalog`), call pgstattuple by OID (`leaf_density`),
//! look a batch's new keys up from arrays built once per statement (`rekey_new_key`), and leave
//! out the foreign-key checks a batch's rewrite satisfies by construction (`implied_checks`).

use pgrx::prelude::*;

mod as_owner;
mod catalog_epoch;
mod implied_checks;
mod leaf_density;
mod rekey_batch_as_owner;
mod rekey_batch_catalog;
mod rekey_new_key;
mod session_state;

pub(crate) fn init() {
    catalog_epoch::init();
    implied_checks::init();
}

/// Whether the procedure that calls this can COMMIT: true only inside a procedure invoked by a
/// top-level CALL outside a transaction block, and not inside a block with an exception handler.
/// Mirrors `SPI_inside_nonatomic_context()` of PostgreSQL 14 and later (spi.c), which is what
/// `_SPI_commit()` decides by; 13's version lacks the subtransaction test, so it is made here.
/// PL/pgSQL evaluates the call on the procedure's own SPI connection, opened nonatomic exactly
/// when the CALL was (plpgsql_call_handler).
#[pg_extern(sql = false)]
fn rekey_can_commit() -> bool {
    // SAFETY: both only read backend-local state.
    unsafe { pg_sys::SPI_inside_nonatomic_context() && !pg_sys::IsSubTransaction() }
}

/// The toolkit's SQL: one routine (or table, type, view) per file under `sql/rekey/`, `internal/`
/// for `objectid_internal` and `api/` for the documented functions in `@extschema@`, joined in
/// this fixed order, each file after everything it uses (SQL function bodies are checked when they
/// are created).
mod install {
    /// One `extension_sql_file!` per file, each requiring the one before it.
    macro_rules! in_order {
        ($previous:literal;) => {};
        ($previous:literal; $path:literal => $name:literal $(, $paths:literal => $names:literal)* $(,)?) => {
            ::pgrx::extension_sql_file!($path, name = $name, requires = [$previous]);
            in_order!($name; $($paths => $names),*);
        };
    }

    in_order!("uuid_functions";
        "../../sql/rekey/internal/objectid_internal.sql" => "rekey_internal_objectid_internal",
        "../../sql/rekey/internal/uuid_extract_version.sql" => "rekey_internal_uuid_extract_version",
        "../../sql/rekey/internal/uuid_extract_timestamp.sql" => "rekey_internal_uuid_extract_timestamp",
        "../../sql/rekey/internal/uuidv7_at.sql" => "rekey_internal_uuidv7_at",
        "../../sql/rekey/internal/rekey_can_commit.sql" => "rekey_internal_rekey_can_commit",
        "../../sql/rekey/internal/rekey_read_as_owner.sql" => "rekey_internal_rekey_read_as_owner",
        "../../sql/rekey/internal/rekey_batch_as_owner.sql" => "rekey_internal_rekey_batch_as_owner",
        "../../sql/rekey/internal/rekey_last_fast_path.sql" => "rekey_internal_rekey_last_fast_path",
        "../../sql/rekey/internal/rekey_new_key.sql" => "rekey_internal_rekey_new_key",
        "../../sql/rekey/internal/rekey_translate_read.sql" => "rekey_internal_rekey_translate_read",
        "../../sql/rekey/internal/rekey_refresh_materialized_view.sql" => "rekey_internal_rekey_refresh_materialized_view",
        "../../sql/rekey/internal/rekey_leaf_density.sql" => "rekey_internal_rekey_leaf_density",
        "../../sql/rekey/internal/rekey_api_schema.sql" => "rekey_internal_rekey_api_schema",
        "../../sql/rekey/internal/rekey_uuidv7_functions.sql" => "rekey_internal_rekey_uuidv7_functions",
        "../../sql/rekey/internal/rekey_reads_every_row.sql" => "rekey_internal_rekey_reads_every_row",
        "../../sql/rekey/internal/rekey_state.sql" => "rekey_internal_rekey_state",
        "../../sql/rekey/internal/rekey_snapshot.sql" => "rekey_internal_rekey_snapshot",
        "../../sql/rekey/internal/rekey_name.sql" => "rekey_internal_rekey_name",
        "../../sql/rekey/internal/rekey_relation.sql" => "rekey_internal_rekey_relation",
        "../../sql/rekey/internal/rekey_call.sql" => "rekey_internal_rekey_call",
        "../../sql/rekey/internal/rekey_runner.sql" => "rekey_internal_rekey_runner",
        "../../sql/rekey/internal/rekey_key_column.sql" => "rekey_internal_rekey_key_column",
        "../../sql/rekey/internal/rekey_column.sql" => "rekey_internal_rekey_column",
        "../../sql/rekey/internal/rekey_columns.sql" => "rekey_internal_rekey_columns",
        "../../sql/rekey/internal/rekey_tables.sql" => "rekey_internal_rekey_tables",
        "../../sql/rekey/internal/rekey_fired_triggers.sql" => "rekey_internal_rekey_fired_triggers",
        "../../sql/rekey/internal/rekey_fast_path.sql" => "rekey_internal_rekey_fast_path",
        "../../sql/rekey/internal/rekey_readable.sql" => "rekey_internal_rekey_readable",
        "../../sql/rekey/internal/rekey_column_indexed.sql" => "rekey_internal_rekey_column_indexed",
        "../../sql/rekey/internal/rekey_references.sql" => "rekey_internal_rekey_references",
        "../../sql/rekey/internal/rekey_time_expression.sql" => "rekey_internal_rekey_time_expression",
        "../../sql/rekey/internal/rekey_mapping_name.sql" => "rekey_internal_rekey_mapping_name",
        "../../sql/rekey/internal/rekey_mapping_comment.sql" => "rekey_internal_rekey_mapping_comment",
        "../../sql/rekey/internal/rekey_mapping_problem.sql" => "rekey_internal_rekey_mapping_problem",
        "../../sql/rekey/internal/rekey_state_of.sql" => "rekey_internal_rekey_state_of",
        "../../sql/rekey/internal/rekey_usable_time.sql" => "rekey_internal_rekey_usable_time",
        "../../sql/rekey/internal/rekey_batch_statements.sql" => "rekey_internal_rekey_batch_statements",
        "../../sql/rekey/internal/rekey_batch_size.sql" => "rekey_internal_rekey_batch_size",
        "../../sql/rekey/internal/rekey_statements.sql" => "rekey_internal_rekey_statements",
        "../../sql/rekey/internal/rekey_default_is_v7.sql" => "rekey_internal_rekey_default_is_v7",
        "../../sql/rekey/internal/rekey_problems.sql" => "rekey_internal_rekey_problems",
        "../../sql/rekey/internal/rekey_time_columns.sql" => "rekey_internal_rekey_time_columns",
        "../../sql/rekey/internal/rekey_materialized_views.sql" => "rekey_internal_rekey_materialized_views",
        "../../sql/rekey/internal/rekey_assess.sql" => "rekey_internal_rekey_assess",
        "../../sql/rekey/api/rekey_assess.sql" => "rekey_api_rekey_assess",
        "../../sql/rekey/api/rekey_references.sql" => "rekey_api_rekey_references",
        "../../sql/rekey/api/rekey_assess_schema.sql" => "rekey_api_rekey_assess_schema",
        "../../sql/rekey/api/rekey_plan.sql" => "rekey_api_rekey_plan",
        "../../sql/rekey/api/rekey_switch_default.sql" => "rekey_api_rekey_switch_default",
        "../../sql/rekey/internal/rekey_start.sql" => "rekey_internal_rekey_start",
        "../../sql/rekey/internal/rekey_counts_query.sql" => "rekey_internal_rekey_counts_query",
        "../../sql/rekey/internal/rekey_batch_catalog_type.sql" => "rekey_internal_rekey_batch_catalog_type",
        "../../sql/rekey/internal/rekey_batch_catalog_read.sql" => "rekey_internal_rekey_batch_catalog_read",
        "../../sql/rekey/internal/rekey_batch_catalog.sql" => "rekey_internal_rekey_batch_catalog",
        "../../sql/rekey/internal/rekey_batch.sql" => "rekey_internal_rekey_batch",
        "../../sql/rekey/internal/rekey_run_end.sql" => "rekey_internal_rekey_run_end",
        "../../sql/rekey/api/rekey_run.sql" => "rekey_api_rekey_run",
        "../../sql/rekey/internal/rekey_status_rows.sql" => "rekey_internal_rekey_status_rows",
        "../../sql/rekey/api/rekey_status.sql" => "rekey_api_rekey_status",
        "../../sql/rekey/api/rekey_translate.sql" => "rekey_api_rekey_translate",
        "../../sql/rekey/api/rekey_verify.sql" => "rekey_api_rekey_verify",
        "../../sql/rekey/api/rekey_forget.sql" => "rekey_api_rekey_forget",
    );
}
