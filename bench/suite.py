"""The benchmark driver: runs every workload over every candidate and writes the raw results as JSON.

Started by scripts/bench.sh, which builds the extension, starts the clusters (and stops them again)
and then draws the report with bench/report.py. Candidates are interleaved within each repetition
so that drift of the machine (page cache, other load, table growth) spreads over all of them.
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass

import psycopg

STARTED = time.monotonic()

# btree leaf space per page that pgstatindex's avg_leaf_density is relative to:
# BLCKSZ - page header - btree special space.
LEAF_SPACE = 8192 - 24 - 16
# A leaf item of a one-column key: line pointer + MAXALIGN(index tuple header + key).
LEAF_ITEM_BYTES = {"objectid": 4 + 24, "uuid": 4 + 24, "bigint": 4 + 16}

# UUIDv7 the way it is usually pasted into a schema: a v4 with its first 48 bits replaced by the
# Unix time in milliseconds and the version nibble turned from 4 into 7 (bits 52 and 53 of the
# bytea, counted from each byte's lowest bit).
PLAIN_SQL_UUIDV7 = """
CREATE FUNCTION bench_sql_uuidv7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT encode(
           set_bit(set_bit(
             overlay(uuid_send(gen_random_uuid())
                     PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                                       FROM 3)
                     FROM 1 FOR 6),
             52, 1), 53, 1),
           'hex')::uuid
$$
"""


@dataclass
class Candidate:
    key: str  # in table names and the JSON
    label: str
    cluster: str  # "main" or "backend"
    type: str
    default: str  # the generating expression; bigserial's is its own sequence
    time: str | None  # "objectid", "uuidv7" or None: how its keys give back their creation time


def log(msg):
    elapsed = int(time.monotonic() - STARTED)
    print(f"[{elapsed // 60:02d}:{elapsed % 60:02d}] {msg}", file=sys.stderr, flush=True)


def machine():
    """What the report says of the machine a benchmark ran on."""
    model = None
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cores": os.cpu_count(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30),
            "cpu": model, "kernel": platform.release()}


class Cluster:
    def __init__(self, spec):
        self.host, port, self.bindir = spec.split(":", 2)
        self.port = int(port)
        self.conn = self.connect()
        self.version = self.one("SHOW server_version")
        self.major = int(self.one("SHOW server_version_num")) // 10000

    def connect(self):
        return psycopg.connect(host=self.host, port=self.port, user="postgres", dbname="bench",
                               autocommit=True)

    def one(self, sql, params=None):
        row = self.conn.execute(sql, params).fetchone()
        return row[0] if row is not None and len(row) == 1 else row

    def run(self, sql, params=None):
        self.conn.execute(sql, params)

    def explain(self, sql, params=None):
        """EXPLAIN ANALYZE without per-node timing: the plan as JSON, with Execution Time in ms."""
        return self.one("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + sql, params)[0]

    def elsewhere(self, sql, params=None):
        """Runs sql in a session of its own and waits until that backend has exited, and so has
        flushed its WAL statistics; returns the seconds the statement took."""
        with self.connect() as c:
            pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
            t0 = time.perf_counter()
            c.execute(sql, params)
            elapsed = time.perf_counter() - t0
        self.wait_gone([pid])
        return elapsed

    def wait_gone(self, pids=None):
        """Waits until the given backends (default: every other client backend) have exited."""
        while True:
            if pids is None:
                n = self.one("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                             " AND pid <> pg_backend_pid()")
            else:
                n = self.one("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,))
            if n == 0:
                return
            time.sleep(0.05)

    def wal_mark(self):
        lsn, fpi = self.conn.execute(
            "SELECT pg_current_wal_insert_lsn()::text, wal_fpi FROM pg_stat_wal").fetchone()
        return lsn, fpi

    def wal_since(self, mark):
        lsn, fpi = self.wal_mark()
        wal = self.one("SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)::bigint", (lsn, mark[0]))
        return wal, fpi - mark[1]


def candidates(main):
    c = [
        Candidate("objectid_server", "gen_objectid(), server mode", "main", "objectid",
                  "public.gen_objectid()", "objectid"),
        Candidate("objectid_backend", "gen_objectid(), backend mode", "backend", "objectid",
                  "public.gen_objectid()", "objectid"),
        Candidate("uuidv7_ext", "uuidv7() of pg_objectid", "main", "uuid", "public.uuidv7()", "uuidv7"),
    ]
    if main.major >= 18:
        c.append(Candidate("uuidv7_pg18", "uuidv7() built into PostgreSQL 18", "main", "uuid",
                           "pg_catalog.uuidv7()", "uuidv7"))
    c += [
        Candidate("uuidv7_sql", "UUIDv7 in plain SQL", "main", "uuid", "public.bench_sql_uuidv7()", "uuidv7"),
        Candidate("gen_random_uuid", "gen_random_uuid()", "main", "uuid", "gen_random_uuid()", None),
        Candidate("bigserial", "bigserial", "main", "bigint", "nextval('bench_calls')", None),
    ]
    return c


def table_ddl(c, name):
    if c.key == "bigserial":
        return f"CREATE TABLE {name} (id bigserial PRIMARY KEY, n int4 NOT NULL)"
    return f"CREATE TABLE {name} (id {c.type} PRIMARY KEY DEFAULT {c.default}, n int4 NOT NULL)"


def pgstatindex(cl, index):
    leaf_pages, density = cl.conn.execute(
        "SELECT leaf_pages, avg_leaf_density FROM pgstatindex(%s)", (index,)).fetchone()
    return int(leaf_pages), float(density)


# ---------------------------------------------------------------------------------------------
# 1. Generation cost

def generation(clusters, cands, reps, calls):
    """ns per call of each generator, server side: count(f()) over generate_series minus
    count(1) over the same series, in the same repetition and cluster."""
    loop = f"SELECT count({{}}) FROM generate_series(1, {calls})"
    out = {c.key: [] for c in cands}
    for r in range(reps):
        for c in cands:
            cl = clusters[c.cluster]
            log(f"generation cost · {c.label} · rep {r + 1}/{reps}")
            base = cl.explain(loop.format("1"))["Execution Time"]
            with_call = cl.explain(loop.format(c.default))["Execution Time"]
            out[c.key].append((with_call - base) * 1e6 / calls)
    return {"calls": calls, "ns_per_call": out}


# ---------------------------------------------------------------------------------------------
# 2 and 4. Bulk load, then index build and sort over the loaded keys

def bulk(clusters, cands, reps, rows):
    out = {c.key: [] for c in cands}
    for r in range(reps):
        for c in cands:
            cl = clusters[c.cluster]
            t = f"bulk_{c.key}"
            log(f"bulk load of {rows:,} rows · {c.label} · rep {r + 1}/{reps}")
            cl.run(f"DROP TABLE IF EXISTS {t}")
            cl.run(table_ddl(c, t))
            cl.run("CHECKPOINT")
            mark = cl.wal_mark()
            seconds = cl.elsewhere(f"INSERT INTO {t} (n) SELECT i FROM generate_series(1, {rows}) i")
            wal, fpi = cl.wal_since(mark)
            heap = cl.one("SELECT pg_relation_size(%s)", (t,))
            index = cl.one("SELECT pg_relation_size(%s)", (f"{t}_pkey",))
            _, density = pgstatindex(cl, f"{t}_pkey")

            log(f"index build and sort · {c.label} · rep {r + 1}/{reps}")
            cl.run(f"DROP INDEX IF EXISTS {t}_build")
            build = cl.elsewhere(f"CREATE INDEX {t}_build ON {t} (id)")
            cl.run(f"DROP INDEX {t}_build")
            # The sort itself: no index may hand the rows over in order.
            cl.run("SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = off")
            plan = cl.explain(f"SELECT id FROM {t} ORDER BY id")
            cl.run("RESET enable_indexscan; RESET enable_indexonlyscan; RESET enable_bitmapscan")
            sort_node = find_node(plan["Plan"], lambda n: n["Node Type"] == "Sort")
            out[c.key].append({
                "seconds": seconds, "rows_per_s": rows / seconds,
                "heap_bytes": heap, "index_bytes": index, "leaf_density": density,
                "wal_bytes": wal, "fpi": fpi,
                "create_index_s": build, "order_by_ms": plan["Execution Time"],
                "sort_method": sort_node.get("Sort Method") if sort_node else None,
            })
    return {"rows": rows, "runs": out}


def find_node(node, test):
    """The first plan node, depth first, for which test(node) holds."""
    if test(node):
        return node
    for child in node.get("Plans", []):
        found = find_node(child, test)
        if found:
            return found
    return None


def describe(node):
    return node["Node Type"] + (f" using {node['Index Name']}" if "Index Name" in node else "")


def scan_of(plan):
    """The node that reads the table, for comparing plans."""
    return describe(find_node(plan["Plan"], lambda n: "Relation Name" in n))


# ---------------------------------------------------------------------------------------------
# 5. Reads over the last bulk-loaded table of each candidate

def reads(clusters, cands, reps, lookups):
    out = {c.key: {"point_us": [], "latest_ms": [], "range": {}} for c in cands}
    for c in cands:
        cl = clusters[c.cluster]
        t = f"bulk_{c.key}"
        cl.run(f"DROP TABLE IF EXISTS sample_{c.key}")
        # Random keys in random order, so that every probe is a descent of its own.
        cl.run(f"CREATE TABLE sample_{c.key} AS SELECT id FROM {t} ORDER BY random() LIMIT {lookups}")
        cl.run(f"ANALYZE {t}; ANALYZE sample_{c.key}")
        if c.time:
            out[c.key]["window"] = window(cl, c, t)
    for r in range(reps):
        for c in cands:
            cl = clusters[c.cluster]
            t = f"bulk_{c.key}"
            log(f"reads · {c.label} · rep {r + 1}/{reps}")
            cl.run("SET enable_hashjoin = off; SET enable_mergejoin = off")
            plan = cl.explain(f"SELECT count(b.n) FROM sample_{c.key} s JOIN {t} b ON b.id = s.id")
            cl.run("RESET enable_hashjoin; RESET enable_mergejoin")
            out[c.key]["point_us"].append(plan["Execution Time"] * 1000 / lookups)
            out[c.key]["point_plan"] = describe(find_node(plan["Plan"], lambda n, t=t: n.get("Relation Name") == t))
            latest = [cl.explain(f"SELECT n FROM {t} ORDER BY id DESC LIMIT 1000")["Execution Time"]
                      for _ in range(10)]
            out[c.key]["latest_ms"].append(statistics.median(latest))
            if c.time:
                lo, hi = out[c.key]["window"]
                for form, where in range_forms(cl, c):
                    plan = cl.explain(f"SELECT count(*) FROM {t} WHERE "
                                      + where.format(lo=f"'{lo}'::timestamptz", hi=f"'{hi}'::timestamptz"))
                    entry = out[c.key]["range"].setdefault(form, {"ms": [], "where": where})
                    entry["ms"].append(plan["Execution Time"])
                    entry["plan"] = scan_of(plan)
                    entry["rows"] = find_node(plan["Plan"], lambda n: "Relation Name" in n)["Actual Rows"]
    return {"lookups": lookups, "results": out}


def window(cl, c, t):
    """One whole second of the candidate's keys, in the middle of its bulk load."""
    extract = "public.objectid_timestamp(id)" if c.time == "objectid" else "public.uuid_extract_timestamp(id)"
    mid = cl.one(f"SELECT date_trunc('second', {extract}) FROM {t} ORDER BY id "
                 f"OFFSET (SELECT count(*) / 2 FROM {t}) LIMIT 1")
    lo = mid.isoformat()
    hi = cl.one("SELECT (%s::timestamptz + interval '1 second')", (lo,)).isoformat()
    return lo, hi


def range_forms(cl, c):
    """The same time range written three ways: the time function, explicit key bounds and (on 18,
    for UUIDs) the server's own uuid_extract_timestamp, which is what an unqualified call finds
    first there."""
    if c.time == "objectid":
        return [
            ("function", "public.objectid_timestamp(id) >= {lo} AND public.objectid_timestamp(id) < {hi}"),
            ("bounds", "id >= public.objectid_lower_bound({lo}) AND id < public.objectid_lower_bound({hi})"),
        ]
    forms = [
        ("function", ("public.uuid_extract_timestamp(id) >= {lo} AND public.uuid_extract_timestamp(id) < {hi}"
                      " AND public.uuid_extract_version(id) = 7")),
        ("bounds", "id >= public.uuidv7_lower_bound({lo}) AND id < public.uuidv7_lower_bound({hi})"),
    ]
    if cl.major >= 18:
        forms.append(("built-in function",
                      ("pg_catalog.uuid_extract_timestamp(id) >= {lo} AND pg_catalog.uuid_extract_timestamp(id) < {hi}"
                       " AND pg_catalog.uuid_extract_version(id) = 7")))
    return forms


# ---------------------------------------------------------------------------------------------
# 3. Concurrent single-row inserts into the bulk-loaded tables

def concurrent(clusters, cands, reps, seconds, client_counts, workdir):
    out = {c.key: {str(n): [] for n in client_counts} for c in cands}
    for r in range(reps):
        for clients in client_counts:
            for c in cands:
                cl = clusters[c.cluster]
                t = f"bulk_{c.key}"
                log(f"pgbench inserts, {clients} client(s), {seconds} s · {c.label} · rep {r + 1}/{reps}")
                script = os.path.join(workdir, f"insert_{c.key}.sql")
                with open(script, "w") as f:
                    f.write(f"INSERT INTO {t} (n) VALUES (0);\n")
                leaf_before, _ = pgstatindex(cl, f"{t}_pkey")
                heap_before = cl.one("SELECT pg_relation_size(%s)", (t,))
                cl.run("CHECKPOINT")
                mark = cl.wal_mark()
                res = subprocess.run(
                    [os.path.join(cl.bindir, "pgbench"), "-n", "-h", cl.host, "-p", str(cl.port),
                     "-U", "postgres", "-c", str(clients), "-j", str(clients), "-T", str(seconds),
                     "-f", script, "bench"],
                    capture_output=True, text=True, check=True)
                cl.wait_gone()
                wal, fpi = cl.wal_since(mark)
                tps = float(re.search(r"^tps = ([0-9.]+)", res.stdout, re.MULTILINE).group(1))
                inserted = int(re.search(r"number of transactions actually processed: (\d+)",
                                         res.stdout).group(1))
                leaf_after, density = pgstatindex(cl, f"{t}_pkey")
                added = leaf_after - leaf_before
                growth = (100 * inserted * LEAF_ITEM_BYTES[c.type] / (added * LEAF_SPACE)) if added > 0 else None
                out[c.key][str(clients)].append({
                    "tps": tps, "rows": inserted, "wal_bytes": wal, "fpi": fpi,
                    "leaf_density": density, "growth_density": growth,
                    "table_bytes_before": heap_before,
                })
    return {"seconds": seconds, "clients": client_counts, "runs": out}


# ---------------------------------------------------------------------------------------------
# 6. Bytes per row of four layouts for each key type

LAYOUTS = [
    ("(id)", "id {type} NOT NULL", "id"),
    ("(id, int4)", "id {type} NOT NULL, v int4 NOT NULL", "id"),
    ("(id, timestamptz)", "id {type} NOT NULL, at timestamptz NOT NULL", "id"),
    ("(tenant int4, id)", "tenant int4 NOT NULL, id {type} NOT NULL", "tenant, id"),
]
LAYOUT_KEYS = [("objectid", "public.gen_objectid()"), ("uuid", "public.uuidv7()"), ("bigint", "i")]


def layout(cl, rows):
    out = []
    for name, columns, pkey in LAYOUTS:
        for type_, expr in LAYOUT_KEYS:
            log(f"layout {name} · {type_}")
            cl.run("DROP TABLE IF EXISTS layout")
            cl.run(f"CREATE TABLE layout ({columns.format(type=type_)})")
            values = {"id": expr, "v": "i", "at": "now()", "tenant": "i % 100"}
            cols = [c.split()[0] for c in columns.format(type=type_).split(", ")]
            cl.run(f"INSERT INTO layout ({', '.join(cols)}) "
                   f"SELECT {', '.join(values[c] for c in cols)} FROM generate_series(1, {rows}) i")
            cl.run(f"ALTER TABLE layout ADD PRIMARY KEY ({pkey})")
            heap = cl.one("SELECT pg_relation_size('layout')")
            index = cl.one("SELECT pg_relation_size('layout_pkey')")
            tuple_bytes = cl.one("SELECT avg(pg_column_size(layout.*))::float8 FROM layout")
            out.append({"layout": name, "type": type_, "heap_per_row": heap / rows,
                        "index_per_row": index / rows, "row_datum_bytes": tuple_bytes})
    cl.run("DROP TABLE layout")
    return {"rows": rows, "results": out}


# ---------------------------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--main", required=True, help="socket dir:port:bindir of the preloaded cluster")
    p.add_argument("--backend", required=True, help="the same for the cluster without preloading")
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--settings", default="", help="the clusters' settings, one per line, for the report")
    p.add_argument("--json", required=True)
    p.add_argument("--only", default="",
                   help="comma-separated workloads to run (generation, bulk, reads, concurrent, layout); default all")
    a = p.parse_args()

    clusters = {"main": Cluster(a.main), "backend": Cluster(a.backend)}
    for cl in clusters.values():
        cl.run("CREATE EXTENSION IF NOT EXISTS pg_objectid; CREATE EXTENSION IF NOT EXISTS pgstattuple")
        cl.run(PLAIN_SQL_UUIDV7.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))
        cl.run("DROP SEQUENCE IF EXISTS bench_calls; CREATE SEQUENCE bench_calls")
    cands = candidates(clusters["main"])
    modes = {k: clusters[k].one("SELECT public.objectid_generator_mode()") for k in clusters}
    if modes != {"main": "server", "backend": "backend"}:
        sys.exit(f"unexpected generator modes: {modes}")

    results = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": machine(),
        "servers": {k: cl.version for k, cl in clusters.items()},
        "settings": [s for s in a.settings.splitlines() if s],
        "reps": a.reps,
        "candidates": [asdict(c) for c in cands],
    }
    only = {w for w in a.only.split(",") if w}
    unknown = only - {"generation", "bulk", "reads", "concurrent", "layout"}
    if unknown:
        sys.exit(f"unknown workloads: {sorted(unknown)}")
    want = lambda w: not only or w in only
    if want("generation"):
        results["generation"] = generation(clusters, cands, a.reps, calls=1_000_000)
    if want("bulk"):
        results["bulk"] = bulk(clusters, cands, a.reps, a.rows)
    if want("reads"):
        results["reads"] = reads(clusters, cands, a.reps, lookups=20_000)
    if want("concurrent"):
        with tempfile.TemporaryDirectory() as workdir:
            results["concurrent"] = concurrent(clusters, cands, a.reps, a.seconds, [1, 2, 4, 8], workdir)
    if want("layout"):
        results["layout"] = layout(clusters["main"], rows=max(100_000, a.rows // 20))
    results["elapsed_s"] = round(time.monotonic() - STARTED)
    with open(a.json, "w") as f:
        json.dump(results, f, indent=1, default=str)
        f.write("\n")
    log(f"results in {a.json}")


if __name__ == "__main__":
    main()
