//! References that follow the key: every ON UPDATE action, cascading foreign keys of every
//! shape, self-references, and partitioned tables.

use postgres::error::SqlState;
use postgres::Client;

use super::{assert_verified, verify_statuses};
use crate::common::*;

/// The single-statement rewrite needs nothing from the constraints: with every ON UPDATE action,
/// deferrable or not, initially deferred or not, a foreign key to a unique constraint that
/// includes the key, and a child in another schema, every reference follows and none is nulled,
/// defaulted or refused.
#[test]
fn every_on_update_action_follows() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE parent (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int NOT NULL,
                              created_at timestamptz NOT NULL, UNIQUE (id, n));
         CREATE SCHEMA other;
         CREATE TABLE other.\"Child Table\" (
             \"No Action\" uuid REFERENCES parent ON UPDATE NO ACTION,
             restricted uuid REFERENCES parent ON UPDATE RESTRICT,
             cascaded uuid REFERENCES parent ON UPDATE CASCADE,
             nulled uuid REFERENCES parent ON UPDATE SET NULL,
             defaulted uuid DEFAULT '00000000-0000-4000-8000-000000000000' REFERENCES parent ON UPDATE SET DEFAULT,
             deferred uuid REFERENCES parent DEFERRABLE INITIALLY DEFERRED,
             pair_id uuid, pair_n int, FOREIGN KEY (pair_id, pair_n) REFERENCES parent (id, n),
             n int NOT NULL);
         CREATE INDEX ON other.\"Child Table\" (\"No Action\");
         CREATE INDEX ON other.\"Child Table\" (restricted);
         CREATE INDEX ON other.\"Child Table\" (cascaded);
         CREATE INDEX ON other.\"Child Table\" (nulled);
         CREATE INDEX ON other.\"Child Table\" (defaulted);
         CREATE INDEX ON other.\"Child Table\" (deferred);
         CREATE INDEX ON other.\"Child Table\" (pair_id, pair_n);
         INSERT INTO parent VALUES ('00000000-0000-4000-8000-000000000000', 0, '2020-01-01 00:00:00+00');
         INSERT INTO parent (n, created_at)
             SELECT i, '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 s' FROM generate_series(1, 2000) i;
         INSERT INTO other.\"Child Table\"
             SELECT p.id, p.id, p.id, p.id, p.id, p.id, p.id, p.n, p.n FROM parent p WHERE p.n > 0;
         SELECT rekey_switch_default('parent')",
    )
    .unwrap();
    let refs = one_i64(&mut c, "SELECT count(*) FROM rekey_references('parent')");
    assert_eq!(refs, 7);
    c.batch_execute("CALL rekey_run('parent', 'created_at', batch_size => 300)")
        .unwrap();
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM other.\"Child Table\" t JOIN parent p ON p.n = t.n
              WHERE (t.\"No Action\", t.restricted, t.cascaded, t.nulled, t.defaulted, t.deferred, t.pair_id)
                    IS DISTINCT FROM (p.id, p.id, p.id, p.id, p.id, p.id, p.id)
                 OR uuid_extract_version(p.id) <> 7"
        ),
        0
    );
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM other.\"Child Table\""),
        2000
    );
    assert_verified(&mut c, "parent");
}

/// ON UPDATE CASCADE foreign keys of every shape follow through the batch's own statement, which
/// rewrites their rows too (PostgreSQL's cascade then finds nothing to do): a child, a
/// self-reference, a child referenced in turn, a key of two columns with a NULL in the other
/// (MATCH SIMPLE: never cascaded to), a child of a partitioned key table, and a child whose BEFORE
/// trigger keeps the old value, whose foreign key's check then refuses the batch (a cascaded row
/// that looks unchanged is not checked).
#[test]
fn cascading_foreign_keys_follow_in_every_shape() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE parent (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int NOT NULL UNIQUE,
                              created_at timestamptz NOT NULL,
                              up uuid REFERENCES parent ON UPDATE CASCADE, UNIQUE (id, n));
         CREATE TABLE leaf (p_id uuid REFERENCES parent ON UPDATE CASCADE, n int NOT NULL);
         CREATE TABLE mixed (p_id uuid REFERENCES parent ON UPDATE CASCADE, n int NOT NULL,
                             FOREIGN KEY (p_id, n) REFERENCES parent (id, n));
         CREATE TABLE line (p_id uuid REFERENCES parent ON UPDATE CASCADE, line int NOT NULL,
                            PRIMARY KEY (p_id, line));
         CREATE TABLE pair (p_id uuid, n int, FOREIGN KEY (p_id, n) REFERENCES parent (id, n) ON UPDATE CASCADE);
         CREATE TABLE guarded (p_id uuid REFERENCES parent ON UPDATE CASCADE, n int NOT NULL, seen int NOT NULL DEFAULT 0);
         CREATE FUNCTION keep_p_id() RETURNS trigger LANGUAGE plpgsql AS
             'BEGIN NEW.p_id := OLD.p_id; NEW.seen := OLD.seen + 1; RETURN NEW; END';
         CREATE TRIGGER keep_p_id BEFORE UPDATE ON guarded FOR EACH ROW EXECUTE FUNCTION keep_p_id();
         CREATE TABLE note (p_id uuid, line int, FOREIGN KEY (p_id, line) REFERENCES line);
         CREATE TABLE hashed (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), created_at timestamptz NOT NULL)
             PARTITION BY HASH (id);
         CREATE TABLE hashed_0 PARTITION OF hashed FOR VALUES WITH (MODULUS 2, REMAINDER 0);
         CREATE TABLE hashed_1 PARTITION OF hashed FOR VALUES WITH (MODULUS 2, REMAINDER 1);
         CREATE TABLE hashed_ref (h_id uuid REFERENCES hashed ON UPDATE CASCADE ON DELETE CASCADE);
         INSERT INTO parent (n, created_at)
             SELECT i, '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 s' FROM generate_series(1, 300) i;
         UPDATE parent p SET up = q.id FROM parent q WHERE q.n = p.n / 2;
         INSERT INTO leaf SELECT id, n FROM parent;
         INSERT INTO mixed SELECT id, n FROM parent;
         INSERT INTO line SELECT id, j FROM parent, generate_series(1, 2) j;
         -- MATCH SIMPLE: a row with a NULL in n is not checked, nor cascaded to.
         INSERT INTO pair SELECT id, CASE WHEN n % 2 = 0 THEN n END FROM parent;
         INSERT INTO guarded SELECT id, n FROM parent;
         INSERT INTO note SELECT p_id, line FROM line;
         INSERT INTO hashed (created_at)
             SELECT '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 s' FROM generate_series(1, 200) i;
         INSERT INTO hashed_ref SELECT id FROM hashed;
         CREATE INDEX ON parent (up); CREATE INDEX ON leaf (p_id); CREATE INDEX ON mixed (p_id);
         CREATE INDEX ON note (p_id, line); CREATE INDEX ON hashed_ref (h_id);
         CREATE INDEX ON pair (p_id); CREATE INDEX ON guarded (p_id);
         SELECT rekey_switch_default('parent'); SELECT rekey_switch_default('hashed')",
    )
    .unwrap();
    let rewrite = |c: &mut Client, table: &str| -> String {
        c.query_one(
            &format!(
                "SELECT (objectid_internal.rekey_statements('{table}', 'created_at', 'UTC',
                                                             'public.{table}_rekey_map')).rewrite_query"
            ),
            &[],
        )
        .unwrap()
        .get(0)
    };
    let statement = rewrite(&mut c, "parent");
    for rewritten in [
        "public.leaf",
        "public.line",
        "public.note",
        "public.mixed",
        "public.pair",
        "public.guarded",
    ] {
        assert!(
            statement.contains(&format!("UPDATE ONLY {rewritten} t")),
            "{rewritten}: {statement}"
        );
    }
    assert!(
        statement.contains("up = objectid_internal.rekey_new_key(t.up, $1, $2)"),
        "{statement}"
    );
    let statement = rewrite(&mut c, "hashed");
    assert!(statement.contains("public.hashed_ref"), "{statement}");

    // The trigger that keeps the old reference makes the batch fail its foreign key check:
    // refused, nothing kept. Without it, every reference follows.
    let (got, message) = error_of(
        &mut c,
        "CALL rekey_run('parent', 'created_at', batch_size => 70, fire_triggers => true, max_retries => 0)",
    );
    assert_eq!(got, SqlState::FOREIGN_KEY_VIOLATION, "{message}");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM parent WHERE uuid_extract_version(id) = 7"
        ),
        0
    );
    c.batch_execute("DROP TRIGGER keep_p_id ON guarded")
        .unwrap();
    c.batch_execute("CALL rekey_run('parent', 'created_at', batch_size => 70)")
        .unwrap();
    // Before 15, rows moving between the key table's partitions are refused (their foreign keys'
    // actions would run as a DELETE): the table stays as it was.
    let moves = server_version(&mut c) >= 150000;
    if moves {
        c.batch_execute("CALL rekey_run('hashed', 'created_at', batch_size => 70)")
            .unwrap();
    } else {
        let (got, message) = error_of(
            &mut c,
            "CALL rekey_run('hashed', 'created_at', batch_size => 70)",
        );
        assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{message}");
        assert!(
            message.contains("rows would move between partitions"),
            "{message}"
        );
    }
    let hashed_v7 = if moves { 200 } else { 0 };
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT (SELECT count(*) FROM parent p JOIN parent q ON q.id = p.up WHERE q.n = p.n / 2)
                  + (SELECT count(*) FROM leaf l JOIN parent p USING (n) WHERE l.p_id = p.id)
                  + (SELECT count(*) FROM mixed m JOIN parent p USING (n) WHERE m.p_id = p.id)
                  + (SELECT count(*) FROM note n JOIN line l USING (p_id, line) JOIN parent p ON p.id = l.p_id)
                  + (SELECT count(*) FROM hashed_ref r JOIN hashed h ON h.id = r.h_id)
                  + (SELECT count(*) FROM pair r JOIN parent p ON p.id = r.p_id WHERE r.n IS NOT DISTINCT FROM
                                                                       CASE WHEN p.n % 2 = 0 THEN p.n END)
                  + (SELECT count(*) FROM guarded g JOIN parent p ON p.id = g.p_id AND p.n = g.n)
                  + (SELECT count(*) FROM parent WHERE uuid_extract_version(id) = 7)
                  + (SELECT count(*) FROM hashed WHERE uuid_extract_version(id) = 7)"
        ),
        299 + 300 + 300 + 600 + 200 + 300 + 300 + 300 + hashed_v7
    );
    assert_verified(&mut c, "parent");
    if moves {
        assert_verified(&mut c, "hashed");
    }
}

/// A table with two columns holding keys (a self-reference) rewrites, in each, only the keys of
/// the batch: an old key inserted again after its row was rekeyed, referenced by a new row,
/// neither wedges the run nor is remapped.
#[test]
fn self_reference_rewrites_only_the_batch() {
    let mut c = database_with_extension("").client;
    c.batch_execute(
        "CREATE TABLE node (id uuid PRIMARY KEY DEFAULT uuidv7(), up uuid REFERENCES node,
                            at timestamptz NOT NULL);
         CREATE INDEX ON node (up);
         INSERT INTO node (id, at) SELECT gen_random_uuid(), '2020-01-01 00:00:00+00'::timestamptz + i * interval '1 h'
           FROM generate_series(1, 50) i;
         UPDATE node SET up = (SELECT min(id::text)::uuid FROM node)",
    )
    .unwrap();
    c.batch_execute("CALL rekey_run('node', 'at', batch_size => 10, max_batches => 1)")
        .unwrap();
    // The application inserts one of the old keys again, and a row referencing it.
    c.batch_execute(
        "INSERT INTO node (id, at) SELECT old_key, '2030-01-01 00:00:00+00' FROM node_rekey_map ORDER BY old_key LIMIT 1;
         INSERT INTO node (id, up, at) SELECT gen_random_uuid(), old_key, '2030-01-02 00:00:00+00'
           FROM node_rekey_map ORDER BY old_key LIMIT 1",
    )
    .unwrap();
    c.batch_execute("CALL rekey_run('node', batch_size => 10)")
        .unwrap();
    // The row inserted again keeps its (old) key, as does the reference to it.
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM node n JOIN node_rekey_map m ON m.old_key = n.id
              WHERE n.at = '2030-01-01 00:00:00+00'"
        ),
        1
    );
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM node n JOIN node p ON p.id = n.up WHERE n.at = '2030-01-02 00:00:00+00'
               AND p.at = '2030-01-01 00:00:00+00'"
        ),
        1
    );
    let checks = verify_statuses(&mut c, "node");
    let keys = checks
        .iter()
        .find(|(n, _, _)| n == "version-4 keys in public.node.id")
        .unwrap();
    assert_eq!(keys.1, "failed", "{checks:#?}");
    assert!(
        keys.2
            .contains("an old key, inserted again after its row was rekeyed"),
        "{checks:#?}"
    );
}

/// Partitioned tables are rewritten through their root: a child partitioned by time, whose
/// partitions hold the references; a key table partitioned by the key itself, whose rows move
/// between partitions as their keys change (on 15 and later; refused on 13 and 14, which run a
/// moved row's foreign-key actions as a DELETE), with a child whose ON DELETE CASCADE must not
/// fire. A partition of another owner, a trigger on one partition, and a partition named instead
/// of its root are refused before anything changes.
#[test]
fn partitioned_tables_are_rekeyed_through_their_root() {
    let mut c = database_with_extension("").client;
    let version = server_version(&mut c);
    c.batch_execute(
        "CREATE TABLE acc (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL);
         CREATE TABLE ev (acc_id uuid NOT NULL REFERENCES acc, at timestamptz NOT NULL, n int)
             PARTITION BY RANGE (at);
         CREATE TABLE ev_1 PARTITION OF ev FOR VALUES FROM ('2020-01-01') TO ('2024-03-01');
         CREATE TABLE ev_2 PARTITION OF ev FOR VALUES FROM ('2024-03-01') TO ('2030-01-01')
             PARTITION BY LIST (n);
         CREATE TABLE ev_2a PARTITION OF ev_2 FOR VALUES IN (1);
         CREATE TABLE ev_2b PARTITION OF ev_2 DEFAULT;
         CREATE INDEX ON ev (acc_id);
         INSERT INTO acc SELECT gen_random_uuid(), '2024-01-01'::timestamptz + i * interval '1 hour'
           FROM generate_series(1, 3000) i;
         INSERT INTO ev SELECT id, at, 1 FROM acc;
         INSERT INTO ev SELECT id, at + interval '1 day', 2 FROM acc;

         CREATE TABLE hk (id uuid PRIMARY KEY DEFAULT uuidv7(), at timestamptz NOT NULL) PARTITION BY HASH (id);
         CREATE TABLE hk_0 PARTITION OF hk FOR VALUES WITH (MODULUS 3, REMAINDER 0);
         CREATE TABLE hk_1 PARTITION OF hk FOR VALUES WITH (MODULUS 3, REMAINDER 1);
         CREATE TABLE hk_2 PARTITION OF hk FOR VALUES WITH (MODULUS 3, REMAINDER 2);
         CREATE TABLE hkc (hk_id uuid REFERENCES hk ON DELETE CASCADE ON UPDATE NO ACTION, x int);
         CREATE INDEX ON hkc (hk_id);
         INSERT INTO hk SELECT gen_random_uuid(), '2024-01-01'::timestamptz + i * interval '1 minute'
           FROM generate_series(1, 2000) i;
         INSERT INTO hkc SELECT id, 1 FROM hk;
         ANALYZE",
    )
    .unwrap();

    // Refusals first, each before anything changes.
    c.batch_execute(
        "DROP ROLE IF EXISTS rekey_part_other; CREATE ROLE rekey_part_other;
         ALTER TABLE ev_2b OWNER TO rekey_part_other",
    )
    .unwrap();
    let (got, message) = error_of(&mut c, "CALL rekey_run('acc', 'at')");
    assert_eq!(got, SqlState::INSUFFICIENT_PRIVILEGE, "{message}");
    assert!(
        message.contains("partition public.ev_2b of public.ev is owned by rekey_part_other"),
        "{message}"
    );
    // The plan shows the problem, with the partitioned child's rows not counted, and the owner's
    // read of that child refuses, naming both owners.
    let plan = one_string(
        &mut c,
        "SELECT string_agg(line, E'\\n') FROM rekey_plan('acc', 'at') line",
    );
    assert!(
        plan.contains("partition public.ev_2b of public.ev is owned by rekey_part_other")
            && plan.contains("ev (acc_id): unknown rows"),
        "{plan}"
    );
    let (got, message) = error_of(
        &mut c,
        "SELECT objectid_internal.rekey_read_as_owner('ev'::regclass, 'SELECT 1 AS one')",
    );
    assert_eq!(got, SqlState::INSUFFICIENT_PRIVILEGE, "{message}");
    assert!(
        message.contains("ev (owned by postgres) have other owners: ")
            && message.contains("ev_2b (owned by rekey_part_other)"),
        "{message}"
    );
    c.batch_execute(
        "ALTER TABLE ev_2b OWNER TO postgres;
         CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN NEW.n := NEW.n + 1; RETURN NEW; END';
         CREATE TRIGGER bump BEFORE UPDATE ON ev_2a FOR EACH ROW EXECUTE FUNCTION bump()",
    )
    .unwrap();
    let (got, message) = error_of(&mut c, "CALL rekey_run('acc', 'at')");
    assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{message}");
    assert!(
        message.contains("trigger bump on public.ev_2a"),
        "{message}"
    );
    c.batch_execute("DROP TRIGGER bump ON ev_2a").unwrap();
    let (got, message) = error_of(&mut c, "CALL rekey_run('hk_0', 'at')");
    assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{message}");
    assert!(
        message.contains("public.hk_0 is a partition of public.hk: rekey the partitioned table"),
        "{message}"
    );
    assert_eq!(
        one_i64(&mut c, "SELECT count(*) FROM objectid_internal.rekey_state"),
        0
    );

    // A partitioned child follows its parent's keys, in every partition.
    c.batch_execute("CALL rekey_run('acc', 'at', batch_size => 500)")
        .unwrap();
    assert_verified(&mut c, "acc");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM ev e JOIN acc a ON a.id = e.acc_id
              WHERE public.uuid_extract_version(a.id) = 7
                AND public.uuid_extract_timestamp(a.id) = date_trunc('milliseconds', a.at)"
        ),
        6000
    );
    // The references are in all three leaf partitions.
    assert_eq!(
        one_i64(&mut c, "SELECT count(DISTINCT tableoid) FROM ev"),
        3
    );

    // A key table partitioned by its key: rows move between partitions.
    if version < 150000 {
        let (got, message) = error_of(&mut c, "CALL rekey_run('hk', 'at')");
        assert_eq!(got, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{message}");
        assert!(
            message.contains("rekey it on PostgreSQL 15 or later"),
            "{message}"
        );
        assert_eq!(
            one_i64(
                &mut c,
                "SELECT count(*) FROM hk WHERE public.uuid_extract_version(id) = 4"
            ),
            2000
        );
        return;
    }
    let before: Vec<(String, i64)> = c
        .query(
            "SELECT tableoid::regclass::text, count(*) FROM hk GROUP BY 1 ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    c.batch_execute("CALL rekey_run('hk', 'at', batch_size => 300)")
        .unwrap();
    assert_verified(&mut c, "hk");
    assert_eq!(
        one_i64(
            &mut c,
            "SELECT count(*) FROM hkc c JOIN hk h ON h.id = c.hk_id
              WHERE public.uuid_extract_version(h.id) = 7"
        ),
        2000,
        "every child follows, none deleted"
    );
    // Each row is in the partition its new key hashes to (the partitions' constraints hold), and
    // some moved.
    let after: Vec<(String, i64)> = c
        .query(
            "SELECT tableoid::regclass::text, count(*) FROM hk GROUP BY 1 ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(after.iter().map(|r| r.1).sum::<i64>(), 2000);
    assert_ne!(before, after);
}
