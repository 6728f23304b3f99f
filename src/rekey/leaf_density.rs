//! The key index's average leaf density for `rekey_assess`, from the pgstattuple extension when it
//! is installed. Its `pgstatindex(regclass)` is found by OID, as a member of that extension, and
//! called directly: a call by name would reach whatever function of that name and signature the
//! owner of pgstattuple's schema (the database owner, for `public`) put there after renaming it.

use pgrx::prelude::*;

/// pgstattuple's `pgstatindex(regclass)`, or None when the extension is not installed.
fn pgstatindex() -> Option<pg_sys::Oid> {
    Spi::connect(|client| {
        let rows = client.select(
            "SELECT p.oid FROM pg_catalog.pg_proc p
               JOIN pg_catalog.pg_depend d
                 ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
                AND d.objid OPERATOR(pg_catalog.=) p.oid
                AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog.char
               JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
              WHERE e.extname OPERATOR(pg_catalog.=) 'pgstattuple'::pg_catalog.name
                AND p.proname OPERATOR(pg_catalog.=) 'pgstatindex'::pg_catalog.name
                AND p.proargtypes OPERATOR(pg_catalog.=) '2205'::pg_catalog.oidvector",
            Some(1),
            &[],
        )?;
        if rows.is_empty() {
            Ok(None)
        } else {
            rows.first().get_one::<pg_sys::Oid>()
        }
    })
    .unwrap_or_else(|e: pgrx::spi::Error| error!("cannot look for pgstattuple: {e}"))
}

/// The average leaf density of a btree index in percent, as pgstattuple's `pgstatindex` reports
/// it, with the caller's privileges (EXECUTE on it: by default superusers and
/// `pg_stat_scan_tables`); NULL when pgstattuple is not installed.
#[pg_extern(sql = false)]
fn rekey_leaf_density(index: pg_sys::Oid) -> Option<f64> {
    let function = pgstatindex()?;
    // Called by OID, the function skips fmgr's EXECUTE check, which is all that guards
    // pgstattuple 1.5's pgstatindex (REVOKE ... FROM PUBLIC): make it here.
    let allowed = Spi::get_one_with_args::<bool>(
        "SELECT pg_catalog.has_function_privilege($1, 'EXECUTE'::pg_catalog.text)",
        &[function.into()],
    )
    .unwrap_or_else(|e| error!("cannot check the privilege on pgstatindex: {e}"));
    if allowed != Some(true) {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "permission denied for function pgstatindex"
        );
    }
    // SAFETY: pgstatindex(regclass) takes one regclass (an OID) and returns a composite datum,
    // which from_composite_datum reads by its type's descriptor.
    let tuple = unsafe {
        let datum = pg_sys::OidFunctionCall1Coll(function, pg_sys::InvalidOid, index.into());
        PgHeapTuple::from_composite_datum(datum)
    };
    tuple
        .get_by_name::<f64>("avg_leaf_density")
        .unwrap_or_else(|e| error!("pgstatindex returned no avg_leaf_density: {e}"))
}
