//! The extension itself across the cluster: Citus propagates CREATE and ALTER EXTENSION from the
//! coordinator, so the workers, where the shards and their indexes live, have the same objects.

use postgres::Client;

use crate::cluster::*;
use crate::common::*;

fn extversion(c: &mut Client) -> Option<String> {
    c.query_opt(
        "SELECT extversion FROM pg_extension WHERE extname = 'pg_objectid'",
        &[],
    )
    .unwrap()
    .map(|r| r.get(0))
}

/// The extension's member objects, by kind and identity: equal on two nodes only when the same
/// install and update scripts ran on both.
fn members(c: &mut Client) -> Vec<String> {
    let mut rows = sorted_rows(
        c,
        "SELECT (pg_identify_object(classid, objid, objsubid)).type, \
                (pg_identify_object(classid, objid, objsubid)).identity \
         FROM pg_depend \
         WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e' \
           AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid')",
    )
    .unwrap();
    rows.sort();
    rows
}

#[test]
fn create_extension_on_the_coordinator_reaches_every_worker() {
    let mut c = fresh_citus_database("t_citus_create_ext");
    for w in workers("t_citus_create_ext").iter_mut() {
        assert_eq!(extversion(w), None, "not there before CREATE EXTENSION");
    }
    c.batch_execute("CREATE EXTENSION pg_objectid").unwrap();
    let version = extversion(&mut c).expect("the extension on the coordinator");
    assert_eq!(
        version,
        one_string(
            &mut c,
            "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_objectid'"
        )
    );
    let expected = members(&mut c);
    assert!(expected.len() > 50, "{expected:?}");
    for (i, w) in workers("t_citus_create_ext").iter_mut().enumerate() {
        assert_eq!(
            extversion(w).as_deref(),
            Some(version.as_str()),
            "worker {}",
            i + 1
        );
        assert_eq!(members(w), expected, "worker {}: the same objects", i + 1);
        // And they work there, in the worker's own session.
        assert_eq!(
            one_string(
                w,
                "SELECT objectid_timestamp('507f1f77bcf86cd799439011')::text"
            ),
            "2012-10-17 21:13:27+00"
        );
    }
}

#[test]
fn alter_extension_update_on_the_coordinator_updates_every_worker() {
    let db = "t_citus_update_ext";
    let mut c = fresh_citus_database(db);
    c.batch_execute("CREATE EXTENSION pg_objectid VERSION '0.2.0'")
        .unwrap();
    let old = members(&mut c);
    for (i, w) in workers(db).iter_mut().enumerate() {
        assert_eq!(extversion(w).as_deref(), Some("0.2.0"), "worker {}", i + 1);
        assert_eq!(members(w), old, "worker {}: 0.2.0's objects", i + 1);
    }
    // A distributed table keyed by objectid, so that the update runs under existing shards.
    c.batch_execute(
        "CREATE TABLE t (id objectid PRIMARY KEY, n int); \
         SELECT create_distributed_table('t', 'id'); \
         INSERT INTO t SELECT gen_objectid(), i FROM generate_series(1, 100) i",
    )
    .unwrap();

    c.batch_execute("ALTER EXTENSION pg_objectid UPDATE")
        .unwrap();
    let default_version = one_string(
        &mut c,
        "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_objectid'",
    );
    assert_ne!(default_version, "0.2.0");
    assert_eq!(extversion(&mut c), Some(default_version.clone()));
    let new = members(&mut c);
    assert_ne!(new, old, "the update changed the extension's objects");
    for (i, w) in workers(db).iter_mut().enumerate() {
        assert_eq!(
            extversion(w),
            Some(default_version.clone()),
            "worker {}",
            i + 1
        );
        assert_eq!(members(w), new, "worker {}: the updated objects", i + 1);
    }
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM t WHERE objectid_timestamp(id) <= now()"
        ),
        100,
        "the distributed table still answers"
    );
}
