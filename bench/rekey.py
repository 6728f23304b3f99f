"""The rekey benchmark (scripts/bench_rekey.sh runs it): a parent of 2 million rows with UUIDv4
keys and the rows that reference it, in one of several schema shapes, rekeyed to UUIDv7 from the
same copy, side by side in one run:

  toolkit          SELECT rekey_switch_default(...); CALL rekey_run(...), one transaction per
                   batch, the foreign keys NO ACTION (which the naive update cannot run on);
  toolkit_cascade  the same on the naive update's schema (the first batch size only), but for
                   the foreign key of another role's table in the application shape, which the
                   toolkit refuses ON UPDATE CASCADE and which stays NO ACTION;
  naive            one UPDATE parent SET id = uuidv7_at(created_at), every foreign key ON UPDATE
                   CASCADE;
  bare             the toolkit's batches (the next keys in key order, one transaction each) as a
                   plain PL/pgSQL loop without foreign keys, a mapping table or any check: lock the
                   batch's parent rows, rewrite each referencing column, then the key. At each
                   fixed batch size, for what batching itself costs: a smaller batch revisits more
                   often the pages an earlier one left dead row versions on.

The shapes (--shapes): one_column, a child of three rows per parent (the default); self_reference,
the parent referencing another parent row; two_foreign_keys, a child with two foreign keys to the
parent; composite_child, a child whose primary key is (parent_id, line); partitioned_child, the
child partitioned by time into four partitions; application, issue 38's held-out schema (a
self-reference, a three-level ON UPDATE CASCADE chain, two foreign keys from one table, a
partitioned table, another role's table, row-level security for an application role, updated_at,
audit and UPDATE OF name triggers). The toolkit runs at each --batch-size given.

For each: keys and rows rewritten per second, WAL bytes per rewritten row, the key index's and the
child's foreign-key index's leaf density before, after, and after REINDEX CONCURRENTLY, and the
longest wait another session sees: a probe updates a random parent row and a random child row
(by a non-key column) every few milliseconds for the whole run and keeps its slowest statement.
"""

import argparse
import json
import random
import re
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

    def __init__(self, dsn, db, parents, with_child=True):
        super().__init__(daemon=True)
        self.with_child = with_child
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
            statements = ["UPDATE parent SET touched = touched + 1 WHERE n = %s"]
            if self.with_child:
                statements.append("UPDATE child SET touched = touched + 1 WHERE n = %s")
            for sql in statements:
                started = time.monotonic()
                self.c.execute(sql, (n if "parent" in sql else 3 * n,))
                self.worst = max(self.worst, time.monotonic() - started)
                self.count += 1
            time.sleep(0.005)


# The kinds of run, in the order each shape runs them (the docstring says what each is).
METHODS = ("toolkit", "toolkit_cascade", "naive", "bare")

# Per shape: the child tables' DDL and rows (none for self_reference), and the foreign keys,
# written without an action and with ON UPDATE CASCADE (the naive update's, and the toolkit on its schema).
SHAPES = {
    "one_column": {
        "child": """
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
            CREATE UNIQUE INDEX child_n ON child (n);""",
        "foreign_keys": ["ALTER TABLE child ADD FOREIGN KEY (parent_id) REFERENCES parent {action}"],
        "rows_per_parent": 4,
        "child_index": "child_parent_id",
    },
    "self_reference": {
        "child": """
            ALTER TABLE parent ADD COLUMN referred_by uuid;
            UPDATE parent p SET referred_by = r.id FROM parent r WHERE p.n > 1 AND r.n = p.n / 2;
            CREATE INDEX parent_referred_by ON parent (referred_by);""",
        "foreign_keys": ["ALTER TABLE parent ADD FOREIGN KEY (referred_by) REFERENCES parent {action}"],
        "rows_per_parent": 1,
        "child_index": "parent_referred_by",
    },
    "two_foreign_keys": {
        "child": """
            CREATE TABLE child (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                from_id uuid NOT NULL,
                to_id uuid NOT NULL,
                n integer NOT NULL,
                touched integer NOT NULL DEFAULT 0,
                pad text NOT NULL);
            INSERT INTO child (from_id, to_id, n, pad)
                SELECT p.id, q.id, 3 * p.n + j, repeat('c', 20)
                  FROM parent p, generate_series(0, 2) j,
                       LATERAL (SELECT id FROM parent q WHERE q.n = (p.n * 7 + j) % {parents} + 1) q
                ORDER BY random();
            CREATE INDEX child_from_id ON child (from_id);
            CREATE INDEX child_to_id ON child (to_id);
            CREATE UNIQUE INDEX child_n ON child (n);""",
        "foreign_keys": ["ALTER TABLE child ADD FOREIGN KEY (from_id) REFERENCES parent {action}",
                         "ALTER TABLE child ADD FOREIGN KEY (to_id) REFERENCES parent {action}"],
        "rows_per_parent": 4,
        "child_index": "child_from_id",
    },
    "composite_child": {
        "child": """
            CREATE TABLE child (
                parent_id uuid NOT NULL,
                line integer NOT NULL,
                n integer NOT NULL,
                touched integer NOT NULL DEFAULT 0,
                pad text NOT NULL,
                PRIMARY KEY (parent_id, line));
            INSERT INTO child (parent_id, line, n, pad)
                SELECT p.id, j, 3 * p.n + j, repeat('c', 20) FROM parent p, generate_series(0, 2) j
                ORDER BY random();
            CREATE UNIQUE INDEX child_n ON child (n);""",
        "foreign_keys": ["ALTER TABLE child ADD FOREIGN KEY (parent_id) REFERENCES parent {action}"],
        "rows_per_parent": 4,
        "child_index": "child_pkey",
    },
    "partitioned_child": {
        "child": """
            CREATE TABLE child (
                parent_id uuid NOT NULL,
                at timestamptz NOT NULL,
                n integer NOT NULL,
                touched integer NOT NULL DEFAULT 0,
                pad text NOT NULL) PARTITION BY RANGE (at);
            CREATE TABLE child_1 PARTITION OF child FOR VALUES FROM (MINVALUE) TO ('2022-06-01 00:00:00+00');
            CREATE TABLE child_2 PARTITION OF child FOR VALUES FROM ('2022-06-01 00:00:00+00') TO ('2022-10-01 00:00:00+00');
            CREATE TABLE child_3 PARTITION OF child FOR VALUES FROM ('2022-10-01 00:00:00+00') TO ('2023-02-01 00:00:00+00');
            CREATE TABLE child_4 PARTITION OF child FOR VALUES FROM ('2023-02-01 00:00:00+00') TO (MAXVALUE);
            INSERT INTO child (parent_id, at, n, pad)
                SELECT p.id, p.created_at + j * interval '1 day', 3 * p.n + j, repeat('c', 20)
                  FROM parent p, generate_series(0, 2) j
                ORDER BY random();
            CREATE INDEX child_parent_id ON child (parent_id);
            CREATE INDEX child_n ON child (n);""",
        "foreign_keys": ["ALTER TABLE child ADD FOREIGN KEY (parent_id) REFERENCES parent {action}"],
        "rows_per_parent": 4,
        "child_index": None,
    },
    # The held-out schema of issue 38, in the benchmark's terms: the key table (parent) references
    # itself and has an AFTER UPDATE OF name trigger and an updated_at trigger; its orders (child,
    # the probe's) carry a policy for an application role and an audit trigger, and are referenced
    # ON UPDATE CASCADE by their items (the third level, which neither rekey of parent changes);
    # transfers have two foreign keys to parent and an updated_at trigger; events are partitioned
    # by time; notes belong to another role. Every trigger fires in both the naive update and the
    # toolkit (fire_triggers => true), but the AFTER UPDATE OF name one, which fires in neither. No
    # updated_at trigger on orders: a BEFORE trigger the rekey fires there could change orders.id,
    # which order_items' ON UPDATE CASCADE follows, and the toolkit refuses that (disable it for
    # the rekey, docs/migration.md).
    "application": {
        "child": """
            ALTER TABLE parent ADD COLUMN name text, ADD COLUMN updated_at timestamptz, ADD COLUMN referred_by uuid;
            UPDATE parent p SET name = 'p' || p.n, referred_by = r.id FROM parent r WHERE r.n = greatest(p.n / 2, 1);
            CREATE INDEX parent_referred_by ON parent (referred_by);
            CREATE FUNCTION set_updated_at() RETURNS trigger LANGUAGE plpgsql AS $f$
                BEGIN NEW.updated_at := now(); RETURN NEW; END $f$;
            CREATE FUNCTION renamed() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NULL; END $f$;
            CREATE TABLE audit (tbl text NOT NULL, op text NOT NULL, who name NOT NULL, at timestamptz NOT NULL DEFAULT now());
            CREATE FUNCTION audited() RETURNS trigger LANGUAGE plpgsql AS $f$
                BEGIN INSERT INTO public.audit (tbl, op, who) VALUES (TG_TABLE_NAME, TG_OP, current_user); RETURN NULL; END $f$;
            CREATE TABLE child (
                id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                parent_id uuid NOT NULL,
                n integer NOT NULL,
                touched integer NOT NULL DEFAULT 0,
                updated_at timestamptz,
                pad text NOT NULL);
            INSERT INTO child (parent_id, n, pad)
                SELECT p.id, 3 * p.n + j, repeat('c', 20) FROM parent p, generate_series(0, 2) j
                ORDER BY random();
            CREATE INDEX child_parent_id ON child (parent_id);
            CREATE UNIQUE INDEX child_n ON child (n);
            CREATE TABLE order_items (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                order_id uuid NOT NULL REFERENCES child ON UPDATE CASCADE,
                qty integer NOT NULL);
            INSERT INTO order_items (order_id, qty) SELECT c.id, 1 FROM child c WHERE c.n % 3 = 0;
            CREATE INDEX order_items_order_id ON order_items (order_id);
            CREATE TABLE transfers (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                from_id uuid NOT NULL,
                to_id uuid NOT NULL,
                amount integer NOT NULL,
                updated_at timestamptz);
            INSERT INTO transfers (from_id, to_id, amount)
                SELECT p.id, q.id, 1 FROM parent p JOIN parent q ON q.n = p.n % {parents} + 1 WHERE p.n % 2 = 0;
            CREATE INDEX transfers_from_id ON transfers (from_id);
            CREATE INDEX transfers_to_id ON transfers (to_id);
            CREATE TABLE events (
                parent_id uuid NOT NULL,
                at timestamptz NOT NULL,
                kind text NOT NULL) PARTITION BY RANGE (at);
            CREATE TABLE events_1 PARTITION OF events FOR VALUES FROM (MINVALUE) TO ('2022-06-01 00:00:00+00');
            CREATE TABLE events_2 PARTITION OF events FOR VALUES FROM ('2022-06-01 00:00:00+00') TO (MAXVALUE);
            INSERT INTO events (parent_id, at, kind) SELECT p.id, p.created_at, 'signup' FROM parent p WHERE p.n % 4 = 0;
            CREATE INDEX events_parent_id ON events (parent_id);
            DO $d$ BEGIN
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bench_app') THEN CREATE ROLE bench_app; END IF;
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bench_other') THEN CREATE ROLE bench_other; END IF;
            END $d$;
            CREATE TABLE notes (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, parent_id uuid NOT NULL, body text NOT NULL);
            INSERT INTO notes (parent_id, body) SELECT p.id, 'n' FROM parent p WHERE p.n % 20 = 0;
            CREATE INDEX notes_parent_id ON notes (parent_id);
            ALTER TABLE notes OWNER TO bench_other;
            ALTER TABLE child ENABLE ROW LEVEL SECURITY;
            CREATE POLICY app_rows ON child TO bench_app USING (touched >= 0);
            GRANT SELECT, UPDATE ON parent, child TO bench_app;
            CREATE TRIGGER renamed AFTER UPDATE OF name ON parent FOR EACH ROW EXECUTE FUNCTION renamed();
            CREATE TRIGGER parent_updated_at BEFORE UPDATE ON parent FOR EACH ROW EXECUTE FUNCTION set_updated_at();
            CREATE TRIGGER transfers_updated_at BEFORE UPDATE ON transfers FOR EACH ROW EXECUTE FUNCTION set_updated_at();
            CREATE TRIGGER child_audit AFTER UPDATE ON child FOR EACH ROW EXECUTE FUNCTION audited();""",
        "foreign_keys": ["ALTER TABLE parent ADD FOREIGN KEY (referred_by) REFERENCES parent {action}",
                         "ALTER TABLE child ADD FOREIGN KEY (parent_id) REFERENCES parent {action}",
                         "ALTER TABLE transfers ADD FOREIGN KEY (from_id) REFERENCES parent {action}",
                         "ALTER TABLE transfers ADD FOREIGN KEY (to_id) REFERENCES parent {action}",
                         "ALTER TABLE events ADD FOREIGN KEY (parent_id) REFERENCES parent {action}",
                         "ALTER TABLE notes ADD FOREIGN KEY (parent_id) REFERENCES parent {action}"],
        # parent (and its self-reference), 3 orders, half a transfer (two columns), a quarter of an
        # event, a twentieth of a note.
        "rows_per_parent": 1 + 3 + 0.5 + 0.25 + 0.05,
        "child_index": "child_parent_id",
        "fire_triggers": True,
        "toolkit_no_action": ("notes",),
    },
}


def build(c, parents, shape):
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
    """)
    c.execute(SHAPES[shape]["child"].replace("{parents}", str(parents)))
    c.execute("VACUUM ANALYZE")


def bare_procedure(shape):
    """The bare loop of a shape: its referencing columns, from its foreign keys, rewritten one
    statement each before the key (the self-reference's parent rows are then updated twice)."""
    rewrites = []
    for fk in SHAPES[shape]["foreign_keys"]:
        m = re.fullmatch(r"ALTER TABLE (\w+) ADD FOREIGN KEY \((\w+)\) REFERENCES parent \{action\}", fk)
        table, column = m.groups()
        rewrites.append(f"UPDATE {table} SET {column} = m.new FROM ROWS FROM (pg_catalog.unnest(olds), pg_catalog.unnest(news)) m(old, new) "
                        f"WHERE {column} = m.old;")
    return f"""
        CREATE PROCEDURE bare_rekey(batch_size integer) LANGUAGE plpgsql AS $$
        DECLARE
            high_water uuid := '00000000-0000-0000-0000-000000000000';
            olds uuid[];
            news uuid[];
        BEGIN
            LOOP
                SELECT pg_catalog.array_agg(w.id ORDER BY w.id), pg_catalog.array_agg(public.uuidv7_at(w.created_at) ORDER BY w.id)
                  INTO olds, news
                  FROM (SELECT id, created_at FROM parent
                         WHERE id > high_water AND public.uuid_extract_version(id) = 4
                         ORDER BY id LIMIT batch_size FOR UPDATE) w;
                EXIT WHEN olds IS NULL;
                {" ".join(rewrites)}
                UPDATE parent SET id = m.new FROM ROWS FROM (pg_catalog.unnest(olds), pg_catalog.unnest(news)) m(old, new) WHERE id = m.old;
                high_water := olds[array_length(olds, 1)];
                COMMIT;
            END LOOP;
        END $$"""


def densities(c, shape):
    result = {"parent_pkey": density(c, "parent_pkey"), "parent_pkey_bytes": size(c, "parent_pkey")}
    index = SHAPES[shape]["child_index"]
    if index:
        result.update({index: density(c, index), f"{index}_bytes": size(c, index)})
    return result


def measure(dsn, db, method, parents, batch_size, shape, cascade):
    c = connect(dsn, db)
    action = "ON UPDATE CASCADE" if cascade else ""
    if method == "bare":
        c.execute(bare_procedure(shape))
    else:
        # Another role's table, ON UPDATE CASCADE to the parent, would fire its triggers as the
        # parent's owner: the toolkit refuses it (make it NO ACTION), so on the naive update's
        # schema the toolkit runs with that one foreign key NO ACTION.
        keep = SHAPES[shape].get("toolkit_no_action", ()) if method == "toolkit" else ()
        for fk in SHAPES[shape]["foreign_keys"]:
            c.execute(fk.format(action="" if any(f"ALTER TABLE {t} " in fk for t in keep) else action))
    c.execute("CHECKPOINT")
    result = {"before": densities(c, shape)}
    probe = Probe(dsn, db, parents, shape != "self_reference")
    wal0 = one(c, "SELECT pg_current_wal_lsn()")
    started = time.monotonic()
    probe.start()
    if method == "naive":
        c.execute("ALTER TABLE parent ALTER COLUMN id SET DEFAULT uuidv7()")
        c.execute("UPDATE parent SET id = uuidv7_at(created_at)")
    elif method == "bare":
        c.execute("ALTER TABLE parent ALTER COLUMN id SET DEFAULT uuidv7()")
        c.execute(f"CALL bare_rekey({batch_size})")
    else:
        c.execute("SELECT rekey_switch_default('parent')")
        # "default": no batch_size, so rekey_run sizes each batch by the time the last one took.
        size = "" if batch_size == "default" else f", batch_size => {batch_size}"
        fire = ", fire_triggers => true" if SHAPES[shape].get("fire_triggers") else ""
        c.execute(f"CALL rekey_run('parent', 'created_at'{size}{fire}, lock_timeout => '5s')")
    seconds = time.monotonic() - started
    probe.stop.set()
    probe.join()
    wal = int(one(c, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", wal0))
    assert one(c, "SELECT count(*) FROM parent WHERE uuid_extract_version(id) <> 7") == 0
    rows = parents * SHAPES[shape]["rows_per_parent"]
    result.update(
        seconds=seconds, keys_per_second=parents / seconds, rows_per_second=rows / seconds,
        wal_bytes=wal, wal_bytes_per_row=wal / rows, longest_probe_wait_s=probe.worst, probe_statements=probe.count,
        seconds_per_1000_keys=1000 * seconds / parents)
    result["after"] = densities(c, shape)
    # The dead row versions each leaves behind: the naive update's are all left for a vacuum
    # after it, while autovacuum cleans up after the toolkit's committed batches as it goes (on
    # the same cores). Timed apart, so that both ways to a table without them can be compared.
    vacuum_started = time.monotonic()
    c.execute("VACUUM parent" + ("" if shape == "self_reference" else ", child")
              + (", transfers, events, notes" if shape == "application" else ""))
    vacuum_seconds = time.monotonic() - vacuum_started
    result.update(vacuum_seconds=vacuum_seconds, keys_per_second_with_vacuum=parents / (seconds + vacuum_seconds))
    if shape == "one_column":
        c.execute("REINDEX INDEX CONCURRENTLY parent_pkey")
        c.execute("REINDEX INDEX CONCURRENTLY child_parent_id")
        result["reindexed"] = densities(c, shape)
    if method == "toolkit":
        result["batches"] = one(c, "SELECT batches FROM objectid_internal.rekey_state")
        result["fast_path"] = one(c, "SELECT fast_path FROM objectid_internal.rekey_state")
    return result


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dsn")
    p.add_argument("--parents", type=int, default=2_000_000)
    p.add_argument("--batch-size", default="10000",
                   help="the toolkit's batch sizes, comma-separated (default: rekey_run's own sizing); the first is compared with the naive update")
    p.add_argument("--shapes", default="one_column", help=f"comma-separated, of {', '.join(SHAPES)}")
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--methods", default=",".join(METHODS),
                   help=f"comma-separated, of {', '.join(METHODS)} (default: all); the ratios to the naive "
                        "update need toolkit, toolkit_cascade and naive")
    p.add_argument("--json", required=True)
    p.add_argument("--add", metavar="FILE",
                   help="run nothing: add the runs of FILE, an earlier result, to those of --json, shape by shape")
    a = p.parse_args()
    if a.add:
        add(a.json, a.add)
        return
    if not a.dsn:
        p.error("--dsn is needed to run")
    batch_sizes = [b if b == "default" else int(b) for b in a.batch_size.split(",")]
    shapes = a.shapes.split(",")
    chosen = a.methods.split(",")
    for m in chosen:
        if m not in METHODS:
            raise SystemExit(f"unknown method {m!r}: one of {', '.join(METHODS)}")
    for shape in shapes:
        if shape not in SHAPES:
            raise SystemExit(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")

    admin = connect(a.dsn, "postgres")
    started = time.monotonic()
    report = {"parents": a.parents, "batch_sizes": batch_sizes, "reps": a.reps, "methods": chosen, "shapes": {},
              "date": time.strftime("%Y-%m-%d", time.gmtime()),
              "server": one(admin, "SELECT current_setting('server_version')")}
    for shape in shapes:
        admin.execute("DROP DATABASE IF EXISTS rekey_src")
        admin.execute("CREATE DATABASE rekey_src")
        print(f"{shape}: loading {a.parents} parents", flush=True)
        with connect(a.dsn, "rekey_src") as c:
            build(c, a.parents, shape)
        # The toolkit with NO ACTION foreign keys at each batch size, the toolkit on the naive
        # update's schema (ON UPDATE CASCADE) at the first, the naive update, and the bare loop at
        # each fixed batch size: those of the kinds chosen (--methods).
        methods = ([("toolkit", f"toolkit_{b}", "toolkit", b, False) for b in batch_sizes]
                   + [("toolkit_cascade", f"toolkit_cascade_{batch_sizes[0]}", "toolkit", batch_sizes[0], True),
                      ("naive", "naive", "naive", None, True)]
                   + [("bare", f"bare_{b}", "bare", b, False) for b in batch_sizes if b != "default"])
        methods = [m[1:] for m in methods if m[0] in chosen]
        runs = {name: [] for name, _, _, _ in methods}
        for rep in range(a.reps):
            for name, method, batch, cascade in methods:
                admin.execute("DROP DATABASE IF EXISTS rekey_run_copy")
                admin.execute("CREATE DATABASE rekey_run_copy TEMPLATE rekey_src")
                r = measure(a.dsn, "rekey_run_copy", method, a.parents, batch, shape, cascade)
                admin.execute("DROP DATABASE rekey_run_copy")
                print(f"{shape:18} {name:22} rep {rep + 1}: {r['seconds']:7.1f} s, {r['keys_per_second']:8.0f} keys/s, "
                      f"{r['rows_per_second']:8.0f} rows/s, {r['wal_bytes_per_row']:6.0f} WAL bytes/row, "
                      f"longest probe wait {r['longest_probe_wait_s']:.2f} s", flush=True)
                runs[name].append(r)
        report["shapes"][shape] = {"runs": runs, "summary": summarize(runs, batch_sizes, chosen)}
        print(json.dumps(report["shapes"][shape]["summary"], indent=1), flush=True)
    report["elapsed_s"] = time.monotonic() - started
    with open(a.json, "w") as f:
        json.dump(report, f, indent=1)


def summarize(runs, batch_sizes, chosen):
    """The medians of each method's runs, and the ratios to the naive update when it ran."""
    summary = {m: {k: statistics.median(r[k] for r in rs)
                   for k in ("seconds", "keys_per_second", "rows_per_second", "wal_bytes_per_row",
                             "longest_probe_wait_s", "seconds_per_1000_keys", "vacuum_seconds",
                             "keys_per_second_with_vacuum")}
               for m, rs in runs.items()}
    for m, rs in runs.items():
        if len(rs) > 1:
            summary[m]["keys_per_second_range"] = [min(r["keys_per_second"] for r in rs),
                                                   max(r["keys_per_second"] for r in rs)]
    if {"toolkit", "toolkit_cascade", "naive"} <= set(chosen):
        summary.update(ratios(summary, batch_sizes[0]))
    return summary


def add(path, addition):
    """Adds the runs of the result file `addition` to those of `path`, shape by shape (same
    parents, batch sizes and methods), and takes the medians over both: more repetitions of a
    shape whose first ones were too few to judge."""
    with open(path) as f:
        report = json.load(f)
    with open(addition) as f:
        more = json.load(f)
    for k in ("parents", "batch_sizes", "methods"):
        if report.get(k) != more.get(k):
            raise SystemExit(f"{addition} has other {k} than {path}: {more.get(k)} against {report.get(k)}")
    for shape, d in more["shapes"].items():
        if shape in report["shapes"]:
            runs = report["shapes"][shape]["runs"]
            for m, rs in d["runs"].items():
                runs[m] = runs[m] + rs
        else:
            report["shapes"][shape] = {"runs": d["runs"]}
        report["shapes"][shape]["summary"] = summarize(report["shapes"][shape]["runs"], report["batch_sizes"],
                                                       report["methods"])
    report.setdefault("additions", []).append({"date": more["date"], "shapes": list(more["shapes"]),
                                               "reps": more["reps"], "elapsed_s": more["elapsed_s"]})
    with open(path, "w") as f:
        json.dump(report, f, indent=1)


def ratios(summary, first):
    """The toolkit's keys per second against the naive update's, at the first batch size."""
    toolkit, naive = summary[f"toolkit_{first}"], summary["naive"]
    return {
        "throughput_ratio": toolkit["keys_per_second"] / naive["keys_per_second"],
        "throughput_ratio_same_schema": (summary[f"toolkit_cascade_{first}"]["keys_per_second"]
                                         / naive["keys_per_second"]),
        "throughput_ratio_with_vacuum": (toolkit["keys_per_second_with_vacuum"]
                                         / naive["keys_per_second_with_vacuum"]),
    }


if __name__ == "__main__":
    main()
