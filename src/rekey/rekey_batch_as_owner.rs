//! `objectid_internal.rekey_batch_as_owner`: one batch's statements, each as the owner of the
//! tables it changes in a security-restricted operation (as_owner.rs), with the AFTER triggers of
//! other owners' statements fired as those owners once the key owner's statement has made the new
//! keys.

use pgrx::datum::{DatumWithOid, TimestampWithTimeZone, Uuid};
use pgrx::prelude::*;

use super::as_owner::{
    acting_owner, array_column, execute, guarded, server_text, set_at_this_level, within_restricted,
};
use super::implied_checks::{arm, implied_checks, set_last, verify};

/// Fires the AFTER triggers queued at the query level that `AfterTriggerBeginQuery` opened, in the
/// current user and security context, as PostgreSQL does where it opens such a level outside the
/// executor (`ExecuteTruncateGuts` in tablecmds.c, `CopyFrom` in copyfrom.c): a fresh EState,
/// `AfterTriggerEndQuery`, then the relations it opened closed (`ExecCleanUpTriggerState` on 13,
/// `ExecCloseResultRelations` from 14 on) and the EState freed.
unsafe fn fire_queued_after_triggers() {
    // SAFETY: the caller opened the level with AfterTriggerBeginQuery in this subtransaction; on
    // an error its abort closes the level, the relations and the memory.
    unsafe {
        let estate = pg_sys::CreateExecutorState();
        pg_sys::AfterTriggerEndQuery(estate);
        #[cfg(feature = "pg13")]
        pg_sys::ExecCleanUpTriggerState(estate);
        #[cfg(not(feature = "pg13"))]
        pg_sys::ExecCloseResultRelations(estate);
        pg_sys::ExecResetTupleTable((*estate).es_tupleTable, false);
        pg_sys::FreeExecutorState(estate);
    }
}

/// The elements of an array a batch's statement returned, which are never NULL when the statements
/// are rekey_statements'; an error, not a panic, when a caller's own statement returns one.
fn no_nulls<T>(array: Vec<Option<T>>, what: &str) -> Vec<T> {
    array
        .into_iter()
        .map(|e| {
            e.unwrap_or_else(|| {
                ereport!(
                    ERROR,
                    PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                    format!("{what} of a rekey batch holds a NULL element")
                );
            })
        })
        .collect()
}

/// Every trigger (internal ones too: a foreign key made adds them) and rule on the tables that
/// change with `relid`'s key and the partitions below them (pg_partition_tree lists no plain
/// table), each with what decides when and what it runs (function, type, columns, condition,
/// deferrability), in order: what must not change while the batch runs, since a table owner's
/// code could otherwise attach code that a later statement, or the firing of another owner's
/// queued triggers, would run as someone else.
fn set_triggers(relid: pg_sys::Oid) -> Vec<String> {
    Spi::get_one_with_args::<Vec<String>>(
        // The tables as an array, not a set joined: the planner's guess for the two set-returning
        // functions (a thousand rows each, a million together) sized a hash table of a million
        // entries for their UNION, allocated, cleared and freed three times a batch, which took
        // most of a small batch's time wherever another owner's table follows the key.
        "WITH x AS (SELECT ARRAY(SELECT c.relid::pg_catalog.oid FROM objectid_internal.rekey_columns($1::pg_catalog.regclass) c
                                UNION ALL
                                SELECT p.relid::pg_catalog.oid FROM objectid_internal.rekey_columns($1::pg_catalog.regclass) c,
                                       LATERAL pg_catalog.pg_partition_tree(c.relid) p) AS relids)
         SELECT coalesce(pg_catalog.array_agg(d ORDER BY d), '{}')
           FROM (SELECT pg_catalog.concat_ws(' ', 'trigger', t.oid, t.tgrelid, t.tgfoid, t.tgenabled, t.tgtype,
                                             t.tgattr::pg_catalog.text, t.tgdeferrable, t.tginitdeferred,
                                             t.tgconstraint, pg_catalog.md5(COALESCE(t.tgqual::pg_catalog.text, ''))) AS d
                   FROM x JOIN pg_catalog.pg_trigger t ON t.tgrelid OPERATOR(pg_catalog.=) ANY (x.relids)
                 UNION ALL
                 SELECT pg_catalog.concat_ws(' ', 'rule', w.oid, w.ev_class, w.ev_type, w.ev_enabled,
                                             pg_catalog.md5(w.ev_action::pg_catalog.text))
                   FROM x JOIN pg_catalog.pg_rewrite w ON w.ev_class OPERATOR(pg_catalog.=) ANY (x.relids)) e",
        &[relid.into()],
    )
    .unwrap_or_else(|e| error!("cannot read the triggers of the tables that change: {e}"))
    .unwrap_or_default()
}

/// Refuses (42501) when the triggers of the tables that change are no longer `before`.
fn triggers_unchanged(relid: pg_sys::Oid, before: &[String]) {
    if set_triggers(relid) != before {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "a table owner's code changed the triggers, rules or foreign keys of the tables that change during the batch",
            "What it attached could run as another owner; the batch is refused."
        );
    }
}

/// One batch's reads and writes on the tables of the set, each as its owner in a
/// security-restricted operation: the window of keys after `after` (at most `batch_size`), the
/// lock of its version-4 keys with their mapping (with `fallback_time` and the batch number), as
/// the owner of `relid`; then the rewrite of the columns of other owners' tables (`other_queries`,
/// each as the owner of the table at the same place in `other_tables`); then the rewrite of the key
/// and every referencing column of `relid`'s owner's tables. Returns the window's last key (NULL: no
/// key left in this pass), the keys locked and mapped (NULL: none in the window), and the rows
/// changed per table: those of the rewrite, then those of each of other_queries.
///
/// The other owners' statements fire their AFTER triggers once the last statement has rewritten
/// the key, each as its own owner: a child's new values find their parent rows only then. That
/// last statement's own checks (the parent's NO ACTION, the key owner's children) fire at its end,
/// when every other owner's rows have their new values already. Each statement takes its
/// parameters as `rekey_batch_statements` describes them.
// pgrx's macro reads the result's columns from the literal tuple, so no type alias.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
#[pg_extern(sql = false)]
fn rekey_batch_as_owner(
    relid: pg_sys::Oid,
    window_query: &[u8],
    map_query: &[u8],
    rewrite_query: &[u8],
    other_tables: Vec<Option<pg_sys::Oid>>,
    other_queries: pgrx::datum::Array<&[u8]>,
    after: Uuid,
    batch_size: i32,
    fallback_time: TimestampWithTimeZone,
    batch: i64,
) -> TableIterator<
    'static,
    (
        name!(window_end, Option<Uuid>),
        name!(keys, Option<Vec<Uuid>>),
        name!(changed, Option<Vec<i64>>),
    ),
> {
    let window_query = server_text(window_query, "the window query");
    let map_query = server_text(map_query, "the map query");
    let rewrite_query = server_text(rewrite_query, "the rewrite");
    let other_queries: Vec<Option<&[u8]>> = other_queries.iter().collect();
    if other_tables.len() != other_queries.len() {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "a rekey batch needs one table for each of its other statements, not {} tables for {} statements",
                other_tables.len(),
                other_queries.len()
            )
        );
    }
    let others: Vec<(pg_sys::Oid, &str)> = no_nulls(other_tables, "other_tables")
        .into_iter()
        .zip(
            no_nulls(other_queries, "other_queries")
                .into_iter()
                .map(|q| server_text(q, "a rewrite")),
        )
        .collect();
    // A batch touches a few thousand rows of tables of any size: always through their indexes.
    // The planner, seeing 10,000 keys in an array, would otherwise read whole tables for every
    // batch. And always with the batch's keys as constants in the plan (a custom plan, whatever
    // the session's plan_cache_mode): rekey_new_key keeps its mapping for a statement only when
    // its arrays are constants, and would build it again for every row of a generic plan.
    // Undone with the rest of each operation's settings.
    // SAFETY: sets settings at the operation's own nest level.
    let batch_settings = || unsafe {
        set_at_this_level("enable_seqscan", "off");
        set_at_this_level("plan_cache_mode", "force_custom_plan");
    };
    // Every statement of the batch in one subtransaction (guarded), each in the restricted
    // operation of the owner of the tables it changes. Each other owner's statement queues its
    // AFTER triggers (its foreign keys' checks, its deferrable constraints' rechecks, its own
    // triggers) at a query level of its own, opened for it here as PostgreSQL opens one outside
    // the executor; the levels are fired once the key owner's statement has made the new keys,
    // each as the owner whose statement queued it, in a restricted operation: every trigger
    // function runs as the current user, and PostgreSQL's foreign-key code runs its queries as
    // the owner of the table it reads, keeping the restriction.
    let (window_end, keys, changed) = guarded("the owners of the tables that change", || {
        let key_owner = acting_owner(relid);
        // Read before any of the batch's statements runs a table owner's code.
        let implied = implied_checks(relid, window_query, map_query, rewrite_query);
        set_last(None);
        let (window_end, mapped) = within_restricted(key_owner, || {
            batch_settings();
            Spi::connect_mut(|_client| {
                let window: Option<Vec<Option<Uuid>>> = execute(
                    window_query,
                    &[DatumWithOid::from(after), DatumWithOid::from(batch_size)],
                    false,
                    true,
                    // SAFETY: the row execute gives, while SPI holds it.
                    |_, row| unsafe { array_column(&row, 0, pg_sys::UUIDARRAYOID, window_query) },
                );
                let Some(window) = window.filter(|w| !w.is_empty()) else {
                    return (None, None);
                };
                let window = no_nulls(window, "the window query's result");
                let window_end = window[window.len() - 1];
                let (keys, new_keys): (Option<Vec<Option<Uuid>>>, Option<Vec<Option<Uuid>>>) =
                    execute(
                        map_query,
                        &[
                            DatumWithOid::from(window),
                            DatumWithOid::from(fallback_time),
                            DatumWithOid::from(batch),
                        ],
                        false,
                        true,
                        // SAFETY: the row execute gives, while SPI holds it.
                        |_, row| unsafe {
                            (
                                array_column(&row, 0, pg_sys::UUIDARRAYOID, map_query),
                                array_column(&row, 1, pg_sys::UUIDARRAYOID, map_query),
                            )
                        },
                    );
                let Some(keys) = keys.filter(|k| !k.is_empty()) else {
                    return (Some(window_end), None);
                };
                let keys = no_nulls(keys, "the map query's result");
                let new_keys = no_nulls(new_keys.unwrap_or_default(), "the map query's result");
                if new_keys.len() != keys.len() {
                    ereport!(
                        ERROR,
                        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                        format!(
                            "the map query of a rekey batch returned {} new keys for {} keys",
                            new_keys.len(),
                            keys.len()
                        )
                    );
                }
                (Some(window_end), Some((keys, new_keys)))
            })
        });
        let Some((keys, new_keys)) = mapped else {
            return (window_end, None, None);
        };
        let other_owners: Vec<pg_sys::Oid> = others
            .iter()
            .map(|(table, _)| acting_owner(*table))
            .collect();
        // With the key owner's tables alone, what its code attaches runs as that owner anyway.
        let triggers = if others.is_empty() {
            Vec::new()
        } else {
            set_triggers(relid)
        };
        let other_changed: Vec<i64> = others
            .iter()
            .zip(&other_owners)
            .map(|((_, query), owner)| {
                // SAFETY: closed by fire_queued_after_triggers below, in reverse order, or by the
                // subtransaction's abort.
                unsafe { pg_sys::AfterTriggerBeginQuery() };
                within_restricted(*owner, || {
                    batch_settings();
                    Spi::connect_mut(|_client| {
                        execute(
                            query,
                            &[
                                DatumWithOid::from(keys.clone()),
                                DatumWithOid::from(new_keys.clone()),
                            ],
                            false,
                            false,
                            |processed, _| processed as i64,
                        )
                    })
                })
            })
            .collect();
        if !others.is_empty() {
            triggers_unchanged(relid, &triggers);
        }
        set_last(Some(implied.fast_path.clone()));
        let changed = within_restricted(key_owner, || {
            batch_settings();
            let armed = arm(rewrite_query, implied.triggers.clone());
            let changed: Option<Vec<Option<i64>>> = Spi::connect_mut(|_client| {
                execute(
                    rewrite_query,
                    &[
                        DatumWithOid::from(keys.clone()),
                        DatumWithOid::from(new_keys.clone()),
                    ],
                    false,
                    true,
                    // SAFETY: the row execute gives, while SPI holds it.
                    |_, row| unsafe { array_column(&row, 0, pg_sys::INT8ARRAYOID, rewrite_query) },
                )
            });
            drop(armed);
            verify(&implied, &keys, &new_keys);
            changed.map(|c| no_nulls(c, "the rewrite's result"))
        });
        if !others.is_empty() {
            triggers_unchanged(relid, &triggers);
        }
        for owner in other_owners.iter().rev() {
            // SAFETY: closes the innermost level opened above, in this subtransaction.
            within_restricted(*owner, || unsafe { fire_queued_after_triggers() });
        }
        let changed = changed.map(|mut c| {
            c.extend(other_changed);
            c
        });
        (window_end, Some(keys), changed)
    });
    TableIterator::once((window_end, keys, changed))
}
