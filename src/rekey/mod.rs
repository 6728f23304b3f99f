//! The UUIDv4 → UUIDv7 rekey toolkit (`rekey_*`, docs/migration.md). Its logic is SQL and
//! PL/pgSQL in `sql/rekey.sql`: it reads the catalogs, and its batch loop must be a procedure
//! that commits, which only PL/pgSQL can be. What SQL cannot do is done here: tell whether that
//! procedure may commit at all, run the owner's code in a security-restricted operation
//! (`as_owner`), and call pgstattuple by OID (`leaf_density`).

use pgrx::prelude::*;

mod as_owner;
mod leaf_density;

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

mod install {
    use pgrx::prelude::*;

    extension_sql_file!(
        "../../sql/rekey.sql",
        name = "rekey",
        requires = ["uuid_functions"]
    );
}
