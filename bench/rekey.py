"""The rekey benchmark (scripts/bench_rekey.sh runs it): a parent of 2 million rows with UUIDv4
keys and a child of 6 million rows referencing it, rekeyed to UUIDv7 twice from the same copy:

  toolkit  SELECT rekey_switch_default(...); CALL rekey_run(...), one transaction per batch;
  naive    one UPDATE parent SET id = uuidv7_at(created_at), the foreign key ON UPDATE CASCADE.

For each: keys and rows rewritten per second, WAL bytes per rewritten row, the key index's and the
child's foreign-key index's leaf density before, after, and after REINDEX CONCURRENTLY, and the
longest wait another session sees: a probe updates a random parent row and a random child row
(by a non-key column) every few milliseconds for the whole run and keeps its slowest statement.
"""

import argparse
import json
import random
import statistics
import threading
import time

import psycopg


def connect(dsn, db):
    return psycopg.connect(f"{dsn} dbname={db}", autocommit=True)


def one(c, sql, *args):
    return c.execute(sql, args or None).fetchone()[0]


def density(c, index):
    return float(one(c, "SELECT avg_leaf_density FROM pgstatindex(%s)", index))


def size(c, index):
    return int(one(c, "SELECT pg_relation_size(%s::regclass)", index))


class Probe(threading.Thread):
    """Updates a random parent and child row in turn, each in its own transaction, and keeps the
    slowest statement: the longest a write of the application waits for the rekey's locks."""

    def __init__(self, dsn, db, parents):
        super().__init__(daemon=True)
        self.c = connect(dsn, db)
        self.c.execute("SET lock_timeout = 0")
        self.parents = parents
        self.stop = threading.Event()
        self.worst = 0.0
        self.count = 0

    def run(self):
        rng = random.Random(7)
        while not self.stop.is_set():
            n = rng.randint(1, self.parents)
            for sql in ("UPDATE parent SET touched = touched + 1 WHERE n = %s",
                        "UPDATE child SET touched = touched + 1 WHERE n = %s"):
                started = time.monotonic()
                self.c.execute(sql, (n if "parent" in sql else 3 * n,))
                self.worst = max(self.worst, time.monotonic() - started)
                self.count += 1
            time.sleep(0.005)


def build(c, parents):
    c.execute(f"""
        CREATE EXTENSION IF NOT EXISTS pg_objectid;
        CREATE EXTENSION IF NOT EXISTS pgstattuple;
        CREATE TABLE parent (
            id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            n integer NOT NULL,
            created_at timestamptz NOT NULL,
            touched integer NOT NULL DEFAULT 0,
            pad text NOT NULL);
        INSERT INTO parent (n, created_at, pad)
            SELECT i, '2022-01-01 00:00:00+00'::timestamptz + i * interval '15 s', repeat('p', 40)
            FROM generate_series(1, {parents}) i;
        CREATE UNIQUE INDEX parent_n ON parent (n);
        CREATE TABLE child (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            parent_id uuid NOT NULL,
            n integer NOT NULL,
            touched integer NOT NULL DEFAULT 0,
            pad text NOT NULL);
        INSERT INTO child (parent_id, n, pad)
            SELECT p.id, 3 * p.n + j, repeat('c', 20) FROM parent p, generate_series(0, 2) j
            ORDER BY random();
        CREATE INDEX child_parent_id ON child (parent_id);
        CREATE UNIQUE INDEX child_n ON child (n);
    """)
    c.execute("VACUUM ANALYZE")


def measure(dsn, db, method, parents, batch_size):
    c = connect(dsn, db)
    if method == "naive":
        c.execute("ALTER TABLE child ADD FOREIGN KEY (parent_id) REFERENCES parent ON UPDATE CASCADE")
    else:
        c.execute("ALTER TABLE child ADD FOREIGN KEY (parent_id) REFERENCES parent")
    c.execute("CHECKPOINT")
    result = {"before": {"parent_pkey": density(c, "parent_pkey"), "child_parent_id": density(c, "child_parent_id"),
                         "parent_pkey_bytes": size(c, "parent_pkey"), "child_parent_id_bytes": size(c, "child_parent_id")}}
    probe = Probe(dsn, db, parents)
    wal0 = one(c, "SELECT pg_current_wal_lsn()")
    started = time.monotonic()
    probe.start()
    if method == "naive":
        c.execute("ALTER TABLE parent ALTER COLUMN id SET DEFAULT uuidv7()")
        c.execute("UPDATE parent SET id = uuidv7_at(created_at)")
    else:
        c.execute("SELECT rekey_switch_default('parent')")
        c.execute(f"CALL rekey_run('parent', 'created_at', batch_size => {batch_size}, lock_timeout => '5s')")
    seconds = time.monotonic() - started
    probe.stop.set()
    probe.join()
    wal = int(one(c, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", wal0))
    assert one(c, "SELECT count(*) FROM parent WHERE uuid_extract_version(id) <> 7") == 0
    assert one(c, "SELECT count(*) FROM child c LEFT JOIN parent p ON p.id = c.parent_id WHERE p.id IS NULL") == 0
    rows = parents * 4
    result.update(
        seconds=seconds, keys_per_second=parents / seconds, rows_per_second=rows / seconds,
        wal_bytes=wal, wal_bytes_per_row=wal / rows, longest_probe_wait_s=probe.worst, probe_statements=probe.count)
    result["after"] = {"parent_pkey": density(c, "parent_pkey"), "child_parent_id": density(c, "child_parent_id"),
                       "parent_pkey_bytes": size(c, "parent_pkey"), "child_parent_id_bytes": size(c, "child_parent_id")}
    c.execute("REINDEX INDEX CONCURRENTLY parent_pkey")
    c.execute("REINDEX INDEX CONCURRENTLY child_parent_id")
    result["reindexed"] = {"parent_pkey": density(c, "parent_pkey"), "child_parent_id": density(c, "child_parent_id"),
                           "parent_pkey_bytes": size(c, "parent_pkey"),
                           "child_parent_id_bytes": size(c, "child_parent_id")}
    if method == "toolkit":
        result["batches"] = one(c, "SELECT batches FROM rekey_state")
    return result


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dsn", required=True)
    p.add_argument("--parents", type=int, default=2_000_000)
    p.add_argument("--batch-size", type=int, default=10_000)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--json", required=True)
    a = p.parse_args()

    admin = connect(a.dsn, "postgres")
    admin.execute("DROP DATABASE IF EXISTS rekey_src")
    admin.execute("CREATE DATABASE rekey_src")
    print(f"loading {a.parents} parents and {3 * a.parents} children", flush=True)
    with connect(a.dsn, "rekey_src") as c:
        build(c, a.parents)
    runs = {"toolkit": [], "naive": []}
    for rep in range(a.reps):
        for method in ("toolkit", "naive"):
            admin.execute(f"DROP DATABASE IF EXISTS rekey_{method}")
            admin.execute(f"CREATE DATABASE rekey_{method} TEMPLATE rekey_src")
            r = measure(a.dsn, f"rekey_{method}", method, a.parents, a.batch_size)
            admin.execute(f"DROP DATABASE rekey_{method}")
            print(f"{method:8} rep {rep + 1}: {r['seconds']:7.1f} s, {r['keys_per_second']:8.0f} keys/s, "
                  f"{r['rows_per_second']:8.0f} rows/s, {r['wal_bytes_per_row']:6.0f} WAL bytes/row, "
                  f"longest probe wait {r['longest_probe_wait_s']:.2f} s", flush=True)
            runs[method].append(r)
    summary = {m: {k: statistics.median(r[k] for r in rs)
                   for k in ("seconds", "keys_per_second", "rows_per_second", "wal_bytes_per_row",
                             "longest_probe_wait_s")} for m, rs in runs.items()}
    summary["throughput_ratio"] = summary["toolkit"]["rows_per_second"] / summary["naive"]["rows_per_second"]
    json.dump({"parents": a.parents, "children": 3 * a.parents, "batch_size": a.batch_size,
               "runs": runs, "summary": summary}, open(a.json, "w"), indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
