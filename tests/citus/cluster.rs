//! The three nodes, and a database of one test's own on each.

use postgres::{Client, NoTls};

fn dsn(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set: run these tests through scripts/citus_test.sh, which starts a \
             Citus coordinator and two workers with pg_objectid installed"
        )
    })
}

fn connect(var: &str, dbname: &str) -> Client {
    Client::connect(&format!("{} dbname={dbname}", dsn(var)), NoTls)
        .unwrap_or_else(|e| panic!("cannot connect to database {dbname} through {var}: {e}"))
}

pub fn coordinator(dbname: &str) -> Client {
    connect("PG_OBJECTID_CITUS_COORDINATOR", dbname)
}

/// One connection per worker, in the order of their ports.
pub fn workers(dbname: &str) -> Vec<Client> {
    ["PG_OBJECTID_CITUS_WORKER1", "PG_OBJECTID_CITUS_WORKER2"]
        .iter()
        .map(|var| connect(var, dbname))
        .collect()
}

/// A new database named `name` on every node, with Citus in each and the workers registered in
/// the coordinator's metadata, as the cluster's `postgres` database has them; no pg_objectid.
///
/// Node metadata is per database in Citus, so each new database repeats the cluster setup.
/// `citus.enable_create_database_propagation` (off by default) makes CREATE and DROP DATABASE on
/// the coordinator reach the workers; CREATE EXTENSION citus is not propagated, so it is run on
/// each worker, before the coordinator adds them.
pub fn fresh_citus_database(name: &str) -> Client {
    let mut admin = coordinator("postgres");
    let nodes: Vec<(String, i32, bool)> = admin
        .query(
            "SELECT nodename::text, nodeport, groupid = 0 FROM pg_dist_node ORDER BY groupid",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(nodes.len(), 3, "a coordinator and two workers: {nodes:?}");
    // DROP and CREATE DATABASE refuse to run in a transaction, which a multi-statement simple
    // query would be; hence one statement per call.
    admin
        .batch_execute("SET citus.enable_create_database_propagation = on")
        .unwrap();
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    for mut worker in workers(name) {
        worker.batch_execute("CREATE EXTENSION citus").unwrap();
    }
    let mut c = coordinator(name);
    c.batch_execute("CREATE EXTENSION citus").unwrap();
    // citus_add_node copies the cluster's roles to the worker (worker_create_or_alter_role, an
    // ALTER ROLE of the same role each time): two tests registering nodes at once collide on that
    // shared catalog row ("tuple concurrently updated", seen in CI on 16), so registrations take
    // turns across the tests of this process.
    static REGISTERING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = REGISTERING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for (host, port, is_coordinator) in nodes {
        let call = if is_coordinator {
            "citus_set_coordinator_host"
        } else {
            "citus_add_node"
        };
        c.execute(&format!("SELECT {call}($1, $2)"), &[&host, &port])
            .unwrap();
    }
    c
}

/// As `fresh_citus_database`, with `CREATE EXTENSION pg_objectid` done on the coordinator.
pub fn fresh_citus_db(name: &str) -> Client {
    let mut c = fresh_citus_database(name);
    c.batch_execute("CREATE EXTENSION pg_objectid").unwrap();
    c
}

/// How many lines of a Citus plan scan an index of `index`'s shards: `index` followed by `_`
/// and the shard id, as Citus names a shard's copy of an index.
pub fn shard_index_scans(plan: &str, index: &str) -> usize {
    plan.lines()
        .filter(|line| {
            let line = line.trim_start().trim_start_matches("->").trim_start();
            [
                "Index Scan using ",
                "Index Only Scan using ",
                "Bitmap Index Scan on ",
            ]
            .iter()
            .any(|scan| {
                line.strip_prefix(scan)
                    .and_then(|rest| rest.strip_prefix(index))
                    .and_then(|rest| rest.strip_prefix('_'))
                    .is_some_and(|rest| {
                        let digits = rest.chars().take_while(char::is_ascii_digit).count();
                        digits > 0 && rest[digits..].chars().next().is_none_or(|c| c == ' ')
                    })
            })
        })
        .count()
}

/// The `Task Count: N` of a Citus plan.
pub fn task_count(plan: &str) -> usize {
    let line = plan
        .lines()
        .find_map(|l| l.trim().strip_prefix("Task Count: "))
        .unwrap_or_else(|| panic!("no Task Count in the plan:\n{plan}"));
    line.parse().unwrap()
}

/// A uuid as its 16 raw bytes on the binary protocol.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RawUuid(pub [u8; 16]);

impl<'a> postgres::types::FromSql<'a> for RawUuid {
    fn from_sql(
        _: &postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawUuid(raw.try_into()?))
    }
    fn accepts(ty: &postgres::types::Type) -> bool {
        *ty == postgres::types::Type::UUID
    }
}

impl postgres::types::ToSql for RawUuid {
    fn to_sql(
        &self,
        _: &postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(&self.0);
        Ok(postgres::types::IsNull::No)
    }
    fn accepts(ty: &postgres::types::Type) -> bool {
        *ty == postgres::types::Type::UUID
    }
    postgres::types::to_sql_checked!();
}
