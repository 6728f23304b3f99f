use postgres::error::SqlState;
use postgres::{Client, NoTls};

pub fn dsn() -> String {
    std::env::var("PG_OBJECTID_TEST_DSN").expect(
        "PG_OBJECTID_TEST_DSN is not set: run these tests through scripts/test.sh, \
         which starts a server with the extension installed",
    )
}

pub fn connect_to(dbname: &str) -> Client {
    Client::connect(&format!("{} dbname={dbname}", dsn()), NoTls)
        .unwrap_or_else(|e| panic!("cannot connect to database {dbname}: {e}"))
}

/// A database made for the running test: its name, for SQL or connections that need it, and a
/// connection to it.
pub struct Database {
    pub name: String,
    pub client: Client,
}

/// FNV-1a, 64 bits: a short stable hash for names cut to fit.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The name of the running test's database: `t_` and the test's path (the test harness names
/// each test's thread after it, e.g. `rekey::end_to_end::writes_during_the_rekey_are_kept`),
/// then `_` and `suffix` if it is not empty (for a test that needs more than one database), in
/// lowercase letters, digits and `_`. Names over PostgreSQL's 63 bytes keep their first 54 and end
/// in `_` and a hash of the whole. Tests run in parallel, each in its own thread, so no two of
/// them share a database. Must be called from the test's own thread: a thread the test spawns has
/// no name, so the test passes the name on.
pub fn database_name(suffix: &str) -> String {
    let thread = std::thread::current();
    let test = match thread.name() {
        Some(name) if name != "main" => name,
        _ => panic!(
            "database_name() must run in a test's own thread, which the test harness names after \
             the test; a thread the test spawned has no name: pass the name on to it"
        ),
    };
    let full = if suffix.is_empty() {
        format!("t_{test}")
    } else {
        format!("t_{test}_{suffix}")
    };
    let mut name: String = full
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if name.len() > 63 {
        name.truncate(54);
        name.push_str(&format!("_{:08x}", fnv1a(&full) as u32));
    }
    name
}

/// Makes database `name` anew, from template0 with `options` (such as `ENCODING 'LATIN1'`), and
/// connects to it. For a name from `database_name`, taken in the test's thread, where a thread the
/// test spawned makes the database; otherwise `empty_database` and its siblings do this.
pub fn create_database(name: &str, options: &str) -> Client {
    let mut admin = connect_to("postgres");
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .unwrap();
    admin
        .batch_execute(&format!(
            "CREATE DATABASE {name} TEMPLATE template0 {options}"
        ))
        .unwrap();
    connect_to(name)
}

/// The running test's database (see `database_name`), new and empty: without the extension.
pub fn empty_database(suffix: &str) -> Database {
    let name = database_name(suffix);
    let client = create_database(&name, "");
    Database { name, client }
}

/// The running test's database (see `database_name`), new and empty, of the server encoding
/// `encoding` (C collation): without the extension.
pub fn empty_database_encoded(suffix: &str, encoding: &str) -> Database {
    let name = database_name(suffix);
    let client = create_database(
        &name,
        &format!("ENCODING '{encoding}' LC_COLLATE 'C' LC_CTYPE 'C'"),
    );
    Database { name, client }
}

/// The running test's database (see `database_name`), new, with `CREATE EXTENSION pg_objectid`
/// done in `public`.
pub fn database_with_extension(suffix: &str) -> Database {
    let mut db = empty_database(suffix);
    db.client
        .batch_execute("CREATE EXTENSION pg_objectid")
        .unwrap();
    db
}

/// The running test's database (see `database_name`), new, of the server encoding `encoding`
/// (C collation), with `CREATE EXTENSION pg_objectid` done in `public`.
pub fn database_with_extension_encoded(suffix: &str, encoding: &str) -> Database {
    let mut db = empty_database_encoded(suffix, encoding);
    db.client
        .batch_execute("CREATE EXTENSION pg_objectid")
        .unwrap();
    db
}

/// Runs `sql`, which must fail with `state`; returns the error message for further checks.
pub fn expect_error(client: &mut Client, sql: &str, state: &SqlState) -> String {
    match client.batch_execute(sql) {
        Ok(()) => panic!("expected {} from {sql:?}, but it succeeded", state.code()),
        Err(e) => {
            let db = e
                .as_db_error()
                .unwrap_or_else(|| panic!("expected a server error from {sql:?}, got {e}"));
            assert_eq!(
                db.code(),
                state,
                "wrong SQLSTATE from {sql:?}: {}",
                db.message()
            );
            db.message().to_string()
        }
    }
}

pub fn one_string(client: &mut Client, sql: &str) -> String {
    client.query_one(sql, &[]).unwrap().get(0)
}

pub fn one_bool(client: &mut Client, sql: &str) -> bool {
    client.query_one(sql, &[]).unwrap().get(0)
}

/// The first column of every row `sql` returns, as text.
pub fn strings(client: &mut Client, sql: &str) -> Vec<String> {
    client
        .query(sql, &[])
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .iter()
        .map(|r| r.get(0))
        .collect()
}

pub fn one_i64(client: &mut Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).unwrap().get(0)
}

/// The plan as text, one line per row of EXPLAIN (COSTS OFF).
pub fn explain(client: &mut Client, sql: &str) -> String {
    explain_with(client, "COSTS OFF", sql)
}

/// The plan as run, without timings: EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF).
pub fn explain_analyze(client: &mut Client, sql: &str) -> String {
    explain_with(client, "ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF", sql)
}

fn explain_with(client: &mut Client, options: &str, sql: &str) -> String {
    client
        .query(&format!("EXPLAIN ({options}) {sql}"), &[])
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn server_version(client: &mut Client) -> i64 {
    one_i64(client, "SELECT current_setting('server_version_num')::int8")
}

/// SQL making `n` distinct pseudo-random objectids as rows of `id`, the same on every run.
pub fn sample_ids_sql(n: u32) -> String {
    format!(
        "SELECT substr(md5(i::text) || md5(i::text || 'x'), 1, 24)::objectid AS id \
         FROM generate_series(1, {n}) AS i"
    )
}

/// The rows of `sql` (simple query protocol, so any statement text), each as its columns' text
/// joined by commas (NULL as `NULL`), sorted: a multiset to compare two runs by.
pub fn sorted_rows(client: &mut Client, sql: &str) -> Result<Vec<String>, postgres::Error> {
    let mut rows: Vec<String> = client
        .simple_query(sql)?
        .into_iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL"))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            _ => None,
        })
        .collect();
    rows.sort();
    Ok(rows)
}

/// An objectid as a binary-protocol driver sees it: whatever bytes the server sends, or the
/// bytes to send, valid or not.
#[derive(Debug, Clone, PartialEq)]
pub struct Raw(pub Vec<u8>);

impl<'a> postgres::types::FromSql<'a> for Raw {
    fn from_sql(
        _: &postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw.to_vec()))
    }
    fn accepts(ty: &postgres::types::Type) -> bool {
        ty.name() == "objectid"
    }
}

impl postgres::types::ToSql for Raw {
    fn to_sql(
        &self,
        _: &postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(&self.0);
        Ok(postgres::types::IsNull::No)
    }
    fn accepts(ty: &postgres::types::Type) -> bool {
        ty.name() == "objectid"
    }
    postgres::types::to_sql_checked!();
}

/// The server process serving `client`.
pub fn backend_pid(client: &mut Client) -> i32 {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0)
}

/// Waits until the server process `pid` waits for a lock, as `observer` sees it; panics with
/// `what` after `limit`.
pub fn wait_until_waiting_for_a_lock(
    observer: &mut Client,
    pid: i32,
    limit: std::time::Duration,
    what: &str,
) {
    let started = std::time::Instant::now();
    let waiting = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE pid = {pid} AND wait_event_type = 'Lock'"
    );
    while one_i64(observer, &waiting) == 0 {
        assert!(started.elapsed() < limit, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The SQLSTATE of the error `sql` fails with, and its message and detail as "message | detail".
pub fn error_of(c: &mut Client, sql: &str) -> (SqlState, String) {
    let e = c
        .batch_execute(sql)
        .expect_err(&format!("{sql} should have failed"));
    let db = e
        .as_db_error()
        .unwrap_or_else(|| panic!("{sql}: not a server error: {e}"));
    (
        db.code().clone(),
        format!("{} | {}", db.message(), db.detail().unwrap_or("")),
    )
}

/// A login role for an attack, made or, if an earlier run left it, stripped of superuser again:
/// each attack starts from a role that has nothing.
pub fn hostile_role(admin: &mut Client, name: &str) {
    admin
        .batch_execute(&format!(
            "DO $$ BEGIN
                 IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{name}') THEN
                     EXECUTE 'ALTER ROLE {name} NOSUPERUSER';
                 ELSE
                     CREATE ROLE {name} LOGIN;
                 END IF;
             END $$"
        ))
        .unwrap();
}

/// A connection to database `db` as role `role`.
pub fn connect_as(db: &str, role: &str) -> Client {
    Client::connect(
        &format!("{} dbname={db} user={role}", dsn()),
        postgres::NoTls,
    )
    .unwrap_or_else(|e| panic!("cannot connect to {db} as {role}: {e:?}"))
}

/// Whether role `role` is a superuser: what every attack test checks the hostile role did not become.
pub fn is_superuser(client: &mut Client, role: &str) -> bool {
    one_bool(
        client,
        &format!("SELECT rolsuper FROM pg_roles WHERE rolname = '{role}'"),
    )
}

/// The releases frozen in sql/releases/, oldest first.
pub fn earlier_releases() -> Vec<String> {
    let mut releases: Vec<String> =
        std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/releases"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
    releases.sort_by_key(|v| {
        v.split('.')
            .map(|n| n.parse::<u32>().unwrap())
            .collect::<Vec<_>>()
    });
    releases
}

/// Where a file the server names (its SHAREDIR, say) is on this machine: the same path, but for
/// a server in a chroot (PostgreSQL 19 here, scripts/sid.sh), whose root the test command passes
/// as `PG_OBJECTID_TEST_SERVER_ROOT`.
pub fn server_path(path: &str) -> String {
    format!(
        "{}{path}",
        std::env::var("PG_OBJECTID_TEST_SERVER_ROOT").unwrap_or_default()
    )
}

/// No line of the server log (`PG_OBJECTID_TEST_LOG`) tells of a process that died of a signal,
/// of a backend's unexpected exit code, of a PANIC, or of the crash restart that follows one.
/// (A background worker exiting with code 1 is normal at shutdown, hence "server process".)
pub fn assert_log_clean(what: &str) {
    let Ok(path) = std::env::var("PG_OBJECTID_TEST_LOG") else {
        println!("{what}: PG_OBJECTID_TEST_LOG is not set, so the server log is not checked");
        return;
    };
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!("cannot read the server log {path} (PG_OBJECTID_TEST_LOG): {e}")
    });
    let text = String::from_utf8_lossy(&bytes);
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.contains("terminated by signal")
                || l.contains("terminated by exception")
                || (l.contains("server process (PID") && l.contains("exited with exit code"))
                || l.contains("terminating any other active server processes")
                || l.contains("PANIC:")
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: the server log {path} shows crashed processes:\n{}",
        bad.join("\n")
    );
}
