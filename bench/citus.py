"""Writes from several nodes of a Citus cluster: the leaf density of each shard's primary key.

    python3 bench/citus.py --port P --bindir DIR --json docs/bench-citus.json

The cluster (scripts/bench_citus.sh starts it) is a coordinator on port P and two workers on P+1
and P+2, all with pg_objectid. For each generator and each number of writing nodes (the
coordinator, then also worker 1, then also worker 2), a fresh table distributed by its key over
--shards shards receives single-row inserts for --seconds seconds from --clients pgbench clients
per writing node; each node evaluates the key's DEFAULT with its own generator, so a shard's index
takes as many ascending streams as there are writing nodes. Then pgstattuple's avg_leaf_density of
every shard's primary key is read on the worker holding it.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import tempfile
import time

import psycopg
from suite import machine

GENERATORS = [
    ("gen_objectid", "`gen_objectid()`", "objectid", "public.gen_objectid()"),
    ("gen_objectid_subsecond", "`gen_objectid_subsecond()`", "objectid",
     "public.gen_objectid_subsecond()"),
    ("uuidv7", "`uuidv7()` of pg_objectid", "uuid", "public.uuidv7()"),
    ("gen_random_uuid", "`gen_random_uuid()`", "uuid", "gen_random_uuid()"),
]
NODES = ["coordinator", "worker 1", "worker 2"]
STARTED = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - STARTED:7.1f} s] {msg}", flush=True)


def connect(host, port):
    return psycopg.connect(host=host, port=port, user="postgres", dbname="postgres", autocommit=True)


def shard_densities(host, worker_ports, table):
    """(shard index, leaf pages, avg_leaf_density) of every shard of `table`'s primary key."""
    out = []
    for port in worker_ports:
        with connect(host, port) as c:
            # Citus hides shards from catalog queries by default.
            c.execute("SET citus.override_table_visibility = off")
            rows = c.execute(
                "SELECT c.relname, s.leaf_pages, s.avg_leaf_density FROM pg_class c, "
                "LATERAL pgstatindex(c.oid) s WHERE c.relkind = 'i' AND c.relname ~ %s "
                "ORDER BY c.relname", (f"^{table}_pkey_[0-9]+$",)).fetchall()
            out.extend((r[0], int(r[1]), float(r[2])) for r in rows)
    return out


def run(args):
    ports = [args.port, args.port + 1, args.port + 2]
    coordinator = connect(args.host, args.port)
    coordinator.execute("CREATE EXTENSION IF NOT EXISTS pg_objectid")
    coordinator.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
    version = coordinator.execute("SHOW server_version").fetchone()[0]
    citus = re.match(r"Citus (\S+)", coordinator.execute("SELECT citus_version()").fetchone()[0]).group(1)
    workdir = tempfile.mkdtemp(prefix="pg_objectid-bench-citus-")
    script = os.path.join(workdir, "insert.sql")
    with open(script, "w") as f:
        f.write("INSERT INTO bench_citus (n) VALUES (0);\n")
    os.chmod(workdir, 0o755)
    os.chmod(script, 0o644)

    runs = {key: {str(w): [] for w in args.writers} for key, *_ in GENERATORS}
    for rep in range(args.reps):
        for writers in args.writers:
            for key, label, typ, default in GENERATORS:
                log(f"{label}, {writers} writing node(s), {args.seconds} s · rep {rep + 1}/{args.reps}")
                coordinator.execute("DROP TABLE IF EXISTS bench_citus")
                coordinator.execute(
                    f"CREATE TABLE bench_citus (id {typ} PRIMARY KEY DEFAULT {default}, n int4 NOT NULL)")
                coordinator.execute(f"SET citus.shard_count = {args.shards}")
                coordinator.execute("SELECT create_distributed_table('bench_citus', 'id')")
                procs = [subprocess.Popen(
                    [os.path.join(args.bindir, "pgbench"), "-n", "-h", args.host, "-p", str(port),
                     "-U", "postgres", "-c", str(args.clients), "-j", str(args.clients),
                     "-T", str(args.seconds), "-f", script, "postgres"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for port in ports[:writers]]
                per_node = []
                for node, p in zip(NODES, procs):
                    out, err = p.communicate()
                    if p.returncode != 0:
                        raise SystemExit(f"pgbench on the {node} failed:\n{out}\n{err}")
                    per_node.append({
                        "node": node,
                        "tps": float(re.search(r"^tps = ([0-9.]+)", out, re.MULTILINE).group(1)),
                        "rows": int(re.search(r"number of transactions actually processed: (\d+)",
                                              out).group(1)),
                    })
                shards = shard_densities(args.host, ports[1:], "bench_citus")
                if len(shards) != args.shards:
                    raise SystemExit(f"found {len(shards)} shard indexes, expected {args.shards}")
                rows = coordinator.execute("SELECT count(*) FROM bench_citus").fetchone()[0]
                if rows != sum(n["rows"] for n in per_node):
                    raise SystemExit(f"{rows} rows in the table, pgbench reported "
                                     f"{sum(n['rows'] for n in per_node)}")
                densities = [s[2] for s in shards]
                log(f"  {rows} rows; leaf density per shard {min(densities):.1f}–{max(densities):.1f} %")
                runs[key][str(writers)].append({
                    "rows": rows, "nodes": per_node,
                    "shards": [{"index": s[0], "leaf_pages": s[1], "leaf_density": s[2]} for s in shards],
                })
    coordinator.execute("DROP TABLE IF EXISTS bench_citus")
    return {
        "date": datetime.date.today().isoformat(),
        "elapsed_s": round(time.monotonic() - STARTED),
        "server": version, "citus": citus,
        "machine": machine(),
        "seconds": args.seconds, "reps": args.reps, "shards": args.shards,
        "clients_per_node": args.clients, "writers": args.writers,
        "generators": [{"key": k, "label": lab, "type": t, "default": d} for k, lab, t, d in GENERATORS],
        "runs": runs,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--writers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 3])
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    data = run(args)
    with open(args.json, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    log(f"wrote {args.json}")


if __name__ == "__main__":
    main()
