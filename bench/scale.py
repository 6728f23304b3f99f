"""What ordered keys buy once the key's index outgrows memory, and how costs grow with the table
(issue 21). scripts/bench_scale.sh runs it on PostgreSQL 18 and writes docs/bench-scale.json, which
bench/report.py turns into sections 9 and 10 of docs/benchmarks.md.

Two clusters of the same server:

  disk   shared_buffers small (default 4MB) and debug_io_direct = data, a developer option of 16
         and later that opens data files with O_DIRECT: a page that is not in shared buffers is
         read from the disk, not copied from the operating system's page cache.
  memory ordinary settings (shared_buffers 512MB), for the costs that are not about I/O.

1. Growth (disk): one table per candidate, from empty, 4 sessions of single-row inserts (pgbench)
   in windows, the candidates taking turns window by window, until the key's index is --index-multiple times shared_buffers (or --cap seconds
   pass); per window: rows per second, WAL bytes and full-page images per row, and blocks read
   from outside shared buffers per row (pg_statio_user_tables/indexes). Then a COPY of the same
   number of rows into an empty table per candidate, the key from its default.
2. Sizes (memory), at each of --sizes rows (three or more, spanning at least 10x):
   - a creation-time range query, one hour and one day, in three forms: through the rewrite
     (objectid_timestamp(id) between the times), with the explicit key bounds, and on a separate
     indexed created_at column; Execution Time of EXPLAIN ANALYZE, interleaved, --query-reps
     times;
   - CREATE INDEX on the key of a table of that many rows, per key type;
   - the rekey of bench/rekey.py's one_column shape with that many parents, by rekey_run and by
     the bare loop of the same batches: keys per second, WAL, full-page images and blocks read
     per key.
3. Generators (memory): calls per second of each generator under 1, 2, 4 and 8 sessions
   (pgbench, 1000 calls per statement), --gen-reps times.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import time

from suite import Cluster, log, machine

import rekey

CANDIDATES = [
    # key, label, column type, default
    ("objectid", "gen_objectid()", "objectid", "public.gen_objectid()"),
    ("uuidv7_ext", "uuidv7() of pg_objectid", "uuid", "public.uuidv7()"),
    ("uuidv7_pg18", "uuidv7() of PostgreSQL 18", "uuid", "pg_catalog.uuidv7()"),
    ("gen_random_uuid", "gen_random_uuid()", "uuid", "gen_random_uuid()"),
    ("bigserial", "bigserial", "bigint", None),
]


def ddl(key, type_, default, table):
    if default is None:
        return f"CREATE TABLE {table} (id bigserial PRIMARY KEY, n int4 NOT NULL)"
    return f"CREATE TABLE {table} (id {type_} PRIMARY KEY DEFAULT {default}, n int4 NOT NULL)"


def spread(values):
    """The median and the range of a list of measurements."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


class Counters:
    """WAL written, full-page images and blocks read from outside shared buffers for one table and
    its indexes, between two readings. Backends flush their statistics when they exit, so a reading
    is taken once the sessions that did the work are gone (Cluster.wait_gone)."""

    def __init__(self, cl, table):
        self.cl, self.table = cl, table
        self.wal, self.read = cl.wal_mark(), self.blocks_read()

    def blocks_read(self):
        return int(self.cl.one("""SELECT coalesce(heap_blks_read, 0) + coalesce(idx_blks_read, 0)
                                    FROM pg_statio_user_tables WHERE relid = %s::regclass""", (self.table,)))

    def since(self):
        wal, fpi = self.cl.wal_since(self.wal)
        return int(wal), int(fpi), self.blocks_read() - self.read


def pgbench(cl, script, clients, args):
    res = subprocess.run(
        [os.path.join(cl.bindir, "pgbench"), "-n", "-h", cl.host, "-p", str(cl.port), "-U", "postgres",
         "-c", str(clients), "-j", str(clients), "-f", script, *args, "bench"],
        capture_output=True, text=True, check=True)
    cl.wait_gone()
    processed = int(re.search(r"number of transactions actually processed: (\d+)", res.stdout).group(1))
    tps = float(re.search(r"^tps = ([0-9.]+)", res.stdout, re.MULTILINE).group(1))
    return processed, tps


def relation_bytes(cl, name):
    return int(cl.one("SELECT pg_relation_size(%s)", (name,)))


# ---------------------------------------------------------------------------------------------
# 1. Growth past shared buffers, then COPY

def grow(cl, cands, target_bytes, window_rows, clients, cap, workdir):
    """Grows one table per candidate, a window of `window_rows` rows at a time, the candidates
    taking turns (in an order that rotates every round), so that the machine's drift over the run
    falls on all of them alike; each stops once its key's index is `target_bytes` or it has spent
    `cap` seconds."""
    state = {}
    for key, label, type_, default in cands:
        t = f"grow_{key}"
        cl.run(f"DROP TABLE IF EXISTS {t}")
        cl.run(ddl(key, type_, default, t))
        script = os.path.join(workdir, f"grow_{key}.sql")
        with open(script, "w") as f:
            f.write(f"INSERT INTO {t} (n) VALUES (1);\n")
        state[key] = {"table": t, "label": label, "script": script, "rows": 0, "seconds": 0.0, "windows": []}
    cl.run("CHECKPOINT")
    per_client = max(1, window_rows // clients)
    out, round_ = {}, 0
    while len(out) < len(cands):
        active = [c[0] for c in cands if c[0] not in out]
        for key in active[round_ % len(active):] + active[:round_ % len(active)]:
            st = state[key]
            counters = Counters(cl, st["table"])
            t0 = time.monotonic()
            processed, _ = pgbench(cl, st["script"], clients, ["-t", str(per_client)])
            seconds = time.monotonic() - t0
            wal, fpi, reads = counters.since()
            st["rows"] += processed
            st["seconds"] += seconds
            index = relation_bytes(cl, f"{st['table']}_pkey")
            st["windows"].append({
                "rows": st["rows"], "index_bytes": index, "heap_bytes": relation_bytes(cl, st["table"]),
                "rows_per_s": processed / seconds, "wal_bytes_per_row": wal / processed,
                "fpi_per_row": fpi / processed, "blocks_read_per_row": reads / processed,
            })
            log(f"growth · {st['label']} · {st['rows']:,} rows, index {index / 2**20:.1f} MiB, "
                f"{processed / seconds:,.0f} rows/s, {reads / processed:.2f} blocks read/row")
            if index >= target_bytes or st["seconds"] > cap:
                out[key] = {"reached": index >= target_bytes, "seconds": st["seconds"], "windows": st["windows"]}
        round_ += 1
    return out


def copy(cl, cand, rows, workdir):
    """COPY of `rows` rows into an empty table with the key from its default."""
    key, label, type_, default = cand
    t = f"copy_{key}"
    data = os.path.join(workdir, f"copy_{rows}.txt")
    if not os.path.exists(data):
        with open(data, "w") as f:
            f.writelines("1\n" for _ in range(rows))
        os.chmod(data, 0o644)
    cl.run(f"DROP TABLE IF EXISTS {t}")
    cl.run(ddl(key, type_, default, t))
    cl.run("CHECKPOINT")
    counters = Counters(cl, t)
    seconds = cl.elsewhere(f"COPY {t} (n) FROM '{data}'")
    wal, fpi, reads = counters.since()
    result = {"rows": rows, "seconds": seconds, "rows_per_s": rows / seconds, "wal_bytes_per_row": wal / rows,
              "fpi_per_row": fpi / rows, "blocks_read_per_row": reads / rows,
              "index_bytes": relation_bytes(cl, f"{t}_pkey")}
    log(f"COPY · {label} · {rows:,} rows in {seconds:.1f} s")
    cl.run(f"DROP TABLE {t}")
    return result


# ---------------------------------------------------------------------------------------------
# 2. Costs at several sizes

# The rows span 30 days, in creation order, as rows inserted over a month are.
SPAN_DAYS = 30
ORIGIN = "2026-01-01 00:00:00+00"


def time_table(cl, rows):
    t = f"q_{rows}"
    cl.run(f"DROP TABLE IF EXISTS {t}")
    cl.run(f"CREATE TABLE {t} (id objectid PRIMARY KEY, created_at timestamptz NOT NULL, n int4 NOT NULL)")
    cl.run(f"""INSERT INTO {t}
               SELECT public.gen_objectid_at(at), at, i
                 FROM generate_series(1, {rows}) i,
                      LATERAL (SELECT '{ORIGIN}'::timestamptz
                                      + (i - 1) * interval '{SPAN_DAYS} days' / {rows} AS at) a""")
    cl.run(f"CREATE INDEX {t}_created_at ON {t} (created_at)")
    cl.run(f"VACUUM ANALYZE {t}")
    return t


def range_queries(cl, t, reps):
    """The three forms of one creation-time query, for a window of one hour and one of one day in
    the middle of the month; each form's Execution Time, the forms interleaved in every repetition."""
    out = {}
    middle = f"'{ORIGIN}'::timestamptz + interval '{SPAN_DAYS // 2} days'"
    for window in ("1 hour", "1 day"):
        a, b = cl.conn.execute(f"SELECT {middle}, {middle} + interval '{window}'").fetchone()
        lo, hi = cl.conn.execute("SELECT public.objectid_first_at_or_after(%s)::text, "
                                 "public.objectid_last_before(%s)::text", (a, b)).fetchone()
        forms = {
            "rewrite": ((f"SELECT count(*), sum(n) FROM {t} "
                         "WHERE public.objectid_timestamp(id) >= %s AND public.objectid_timestamp(id) < %s"), (a, b)),
            "key_bounds": (f"SELECT count(*), sum(n) FROM {t} WHERE id >= %s::objectid AND id <= %s::objectid",
                           (lo, hi)),
            "created_at": (f"SELECT count(*), sum(n) FROM {t} WHERE created_at >= %s AND created_at < %s", (a, b)),
        }
        times = {f: [] for f in forms}
        counts = set()
        for sql, params in forms.values():  # once each before timing: the pages in shared buffers
            counts.add(tuple(cl.one(sql, params)))
        assert len(counts) == 1, f"the three forms disagree: {counts}"
        for _ in range(reps):
            for f, (sql, params) in forms.items():
                times[f].append(cl.explain(sql, params)["Execution Time"])
        plans = {f: scan_kind(cl.explain(sql, params)["Plan"]) for f, (sql, params) in forms.items()}
        out[window] = {"rows": counts.pop()[0], "ms": {f: spread(v) for f, v in times.items()}, "plans": plans}
    return out


def scan_kind(node):
    kinds = []

    def walk(n):
        if "Scan" in n["Node Type"]:
            kinds.append(f"{n['Node Type']} on {n.get('Index Name', n.get('Relation Name'))}")
        for child in n.get("Plans", []):
            walk(child)
    walk(node)
    return ", ".join(kinds)


INDEX_KEYS = [
    ("objectid", "objectid", "public.gen_objectid()"),
    ("uuidv7", "uuid", "public.uuidv7()"),
    ("uuidv4", "uuid", "gen_random_uuid()"),
    ("bigint", "bigint", "i"),
]


def create_index(cl, rows, reps):
    out = {}
    for key, type_, expr in INDEX_KEYS:
        t = f"ix_{key}_{rows}"
        cl.run(f"DROP TABLE IF EXISTS {t}")
        cl.run(f"CREATE TABLE {t} (id {type_} NOT NULL, n int4 NOT NULL)")
        cl.run(f"INSERT INTO {t} SELECT {expr}, i FROM generate_series(1, {rows}) i")
        cl.run(f"VACUUM ANALYZE {t}")
        times = []
        for _ in range(reps):
            cl.run(f"DROP INDEX IF EXISTS {t}_id")
            times.append(cl.elsewhere(f"CREATE INDEX {t}_id ON {t} (id)"))
        out[key] = spread(times)
        cl.run(f"DROP TABLE {t}")
    return out


REKEY_METHODS = ("toolkit", "bare")


def rekey_rates(cl, rows, batch_size, reps):
    """The rekey of bench/rekey.py's one_column shape (a parent of `rows` UUIDv4 keys, a child of
    three rows per parent, stored in random order) by rekey_run (its foreign key NO ACTION) and by
    the bare loop of the same batches (plain SQL, no foreign key, mapping or checks), each on a
    copy of one build, the two taking turns, `reps` times: seconds, keys per second, and per key
    the WAL bytes, full-page images and blocks read from outside shared buffers (the whole
    database's); median and range of each."""
    src = f"rekey_{rows}"
    cl.run(f"DROP DATABASE IF EXISTS {src}")
    cl.run(f"CREATE DATABASE {src}")
    dsn = f"host={cl.host} port={cl.port} user=postgres"
    with rekey.connect(dsn, src) as c:
        c.execute("CREATE EXTENSION pg_objectid")
        rekey.build(c, rows, "one_column")
    runs = {m: {} for m in REKEY_METHODS}
    for rep in range(reps):
        for method in REKEY_METHODS[::1 if rep % 2 == 0 else -1]:
            for field, value in rekey_once(cl, src, rows, method, batch_size).items():
                runs[method].setdefault(field, []).append(value)
    cl.run(f"DROP DATABASE {src}")
    return {m: {field: spread(v) for field, v in fields.items()} for m, fields in runs.items()}


def rekey_once(cl, src, rows, method, batch_size):
    """One rekey by `method` of a copy of database `src`; see rekey_rates."""
    dsn = f"host={cl.host} port={cl.port} user=postgres"
    db = f"{src}_{method}"
    cl.run(f"DROP DATABASE IF EXISTS {db}")
    cl.run(f"CREATE DATABASE {db} TEMPLATE {src} STRATEGY FILE_COPY")
    with rekey.connect(dsn, db) as c:
        # Both copies validate the foreign key, which reads the child and the parent's key into
        # shared buffers, so that both start from the same cache; the bare loop then drops it.
        for fk in rekey.SHAPES["one_column"]["foreign_keys"]:
            c.execute(fk.format(action=""))
        if method == "bare":
            c.execute("ALTER TABLE child DROP CONSTRAINT child_parent_id_fkey")
            c.execute(rekey.bare_procedure("one_column"))
            c.execute("ALTER TABLE parent ALTER COLUMN id SET DEFAULT uuidv7()")
        else:
            c.execute("SELECT rekey_switch_default('parent')")
        c.execute("CHECKPOINT")
    cl.wait_gone()
    mark, read0 = cl.wal_mark(), blocks_read(cl, db)
    with rekey.connect(dsn, db) as c:
        pid = rekey.one(c, "SELECT pg_backend_pid()")
        started = time.monotonic()
        if method == "bare":
            c.execute(f"CALL bare_rekey({batch_size})")
        else:
            c.execute(f"CALL rekey_run('parent', 'created_at', batch_size => {batch_size})")
        seconds = time.monotonic() - started
        left = rekey.one(c, "SELECT count(*) FROM parent WHERE uuid_extract_version(id) <> 7")
        assert left == 0, f"{method}: {left} keys not rekeyed"
        size = rekey.one(c, "SELECT pg_database_size(current_database())")
    cl.wait_gone([pid])
    wal, fpi = cl.wal_since(mark)
    out = {"seconds": seconds, "keys_per_second": rows / seconds, "wal_bytes_per_key": wal / rows,
           "fpi_per_key": fpi / rows, "blocks_read_per_key": (blocks_read(cl, db) - read0) / rows,
           "database_bytes": size}
    log(f"rekey · {rows:,} parents · {method}: {rows / seconds:,.0f} keys/s, {wal / rows:,.0f} WAL bytes, "
        f"{fpi / rows:.3f} full-page images, {out['blocks_read_per_key']:.2f} blocks read per key")
    cl.run(f"DROP DATABASE {db}")
    return out


def blocks_read(cl, db):
    # A database's counters include every backend's, autovacuum's too, as flushed so far.
    return int(cl.one("SELECT blks_read FROM pg_stat_database WHERE datname = %s", (db,)))


# ---------------------------------------------------------------------------------------------
# 3. Generators under contention

GENERATORS = [
    ("objectid", "public.gen_objectid()"),
    ("uuidv7_ext", "public.uuidv7()"),
    ("uuidv7_pg18", "pg_catalog.uuidv7()"),
    ("gen_random_uuid", "gen_random_uuid()"),
    ("bigserial", "nextval('scale_calls')"),
]


def generators(cl, sessions, seconds, reps, workdir):
    cl.run("DROP SEQUENCE IF EXISTS scale_calls")
    cl.run("CREATE SEQUENCE scale_calls")
    gens = [g for g in GENERATORS if cl.major >= 18 or g[0] != "uuidv7_pg18"]
    out = {k: {str(n): [] for n in sessions} for k, _ in gens}
    for r in range(reps):
        for n in sessions:
            for key, call in gens:
                script = os.path.join(workdir, f"gen_{key}.sql")
                with open(script, "w") as f:
                    f.write(f"SELECT count({call}) FROM generate_series(1, 1000);\n")
                _, tps = pgbench(cl, script, n, ["-T", str(seconds)])
                out[key][str(n)].append(tps * 1000)
                log(f"generators · {key} · {n} session(s) · rep {r + 1}/{reps}: {tps * 1000:,.0f} calls/s")
    return {"seconds": seconds, "sessions": sessions,
            "calls_per_s": {k: {n: spread(v) for n, v in per.items()} for k, per in out.items()}}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--disk", required=True, help="HOST:PORT:BINDIR of the direct-I/O cluster")
    p.add_argument("--memory", required=True, help="HOST:PORT:BINDIR of the ordinary cluster")
    p.add_argument("--shared-buffers", required=True, help="the disk cluster's, as set (for the report)")
    p.add_argument("--index-multiple", type=float, default=20)
    p.add_argument("--window-rows", type=int, default=100_000)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--cap", type=float, default=900, help="seconds of growth per candidate at most")
    p.add_argument("--sizes", default="200000,632000,2000000")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--query-reps", type=int, default=25,
                   help="repetitions of each range query (a hundredth of a millisecond apart at 200,000 rows)")
    p.add_argument("--copy-reps", type=int, default=1)
    p.add_argument("--gen-seconds", type=int, default=5)
    p.add_argument("--gen-reps", type=int, default=3)
    p.add_argument("--rekey-batch-size", type=int, default=10_000)
    p.add_argument("--rekey-reps", type=int, default=2)
    p.add_argument("--only", default="", help="comma-separated: growth, sizes, generators")
    p.add_argument("--workdir", required=True)
    p.add_argument("--settings", default="", help="the clusters' settings, one per line (for the report)")
    p.add_argument("--json", required=True)
    p.add_argument("--merge", action="store_true",
                   help="keep the sections of --json that --only leaves out, each with its own run's date")
    a = p.parse_args()
    only = {w for w in a.only.split(",") if w}
    want = lambda w: not only or w in only
    disk, memory = Cluster(a.disk), Cluster(a.memory)
    shared = int(disk.one("SELECT setting::bigint * current_setting('block_size')::bigint "
                          "FROM pg_settings WHERE name = 'shared_buffers'"))
    out = {"server": disk.version, "machine": machine(), "shared_buffers": a.shared_buffers,
           "shared_buffers_bytes": shared, "io_direct": disk.one("SHOW debug_io_direct"),
           "settings": a.settings.splitlines(), "clients": a.clients, "index_multiple": a.index_multiple,
           "window_rows": a.window_rows}
    # 18's own uuidv7() is a candidate only where it exists.
    cands = [c for c in CANDIDATES if disk.major >= 18 or c[0] != "uuidv7_pg18"]
    if a.merge and os.path.exists(a.json):
        # The sections not run now are kept from the file, each with the date and time of its run.
        with open(a.json) as f:
            kept = json.load(f)
        for section in ("growth", "sizes", "generators"):
            if not want(section) and section in kept:
                out[section] = kept[section]
                if section == "growth":
                    out["copy"] = kept["copy"]
                out[f"{section}_run"] = kept.get(f"{section}_run", {"date": kept.get("date"),
                                                                      "seconds": kept.get("seconds")})
    started = time.monotonic()
    if want("growth"):
        copies = {}
        growth = grow(disk, cands, a.index_multiple * shared, a.window_rows, a.clients, a.cap, a.workdir)
        # As many rows as the table that reached the target first in rows (a random key's, whose
        # index is the largest per row) holds, for every candidate.
        rows = min(g["windows"][-1]["rows"] for g in growth.values())
        for _ in range(a.copy_reps):
            for cand in cands:
                copies.setdefault(cand[0], []).append(copy(disk, cand, rows, a.workdir))
        for cand in cands:
            disk.run(f"DROP TABLE grow_{cand[0]}")
        out["growth"] = growth
        out["copy"] = copies
    if want("sizes"):
        sizes = [int(s) for s in a.sizes.split(",")]
        out["sizes"] = {}
        for rows in sizes:
            log(f"sizes · {rows:,} rows")
            t = time_table(memory, rows)
            entry = {"range_queries": range_queries(memory, t, a.query_reps)}
            memory.run(f"DROP TABLE {t}")
            entry["create_index_s"] = create_index(memory, rows, max(3, a.reps // 2))
            entry["rekey"] = rekey_rates(memory, rows, a.rekey_batch_size, a.rekey_reps)
            out["sizes"][str(rows)] = entry
    if want("generators"):
        out["generators"] = generators(memory, [1, 2, 4, 8], a.gen_seconds, a.gen_reps, a.workdir)
    out["seconds"] = time.monotonic() - started
    out["date"] = time.strftime("%Y-%m-%d", time.gmtime())
    for section in ("growth", "sizes", "generators"):
        if want(section):
            out[f"{section}_run"] = {"date": out["date"], "seconds": out["seconds"]}
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)
    log(f"done in {out['seconds'] / 60:.1f} minutes: {a.json}")


if __name__ == "__main__":
    main()
