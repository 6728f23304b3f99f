"""Runs the mongoexport recipe of docs/mongodb.md on files written by pymongo's bson library.

Usage: recipe.py DOCS_PAGE PSQL WORKDIR, with PGHOST, PGPORT and PGUSER set for psql.

For each Extended JSON mode (canonical, relaxed) it writes an export of generated orders with
bson.json_util.dumps, one document per line as mongoexport writes them, runs the SQL blocks between
the page's `mongodb-recipe` markers in psql in a fresh database, and checks the loaded table, the
page's creation-time query and the file exported back against the original documents.
"""

import datetime
import hashlib
import os
import random
import re
import subprocess
import sys

from bson import json_util
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.json_util import CANONICAL_JSON_OPTIONS, RELAXED_JSON_OPTIONS
from bson.objectid import ObjectId

DOCS, PSQL, WORKDIR = sys.argv[1:4]
ORDERS = 5000
UTC = datetime.UTC
# The export's newest order; the others are spread over the 30 days before it.
NEWEST = datetime.datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def fail(message):
    print(f"mongodb recipe: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def object_id(rng, when):
    """An ObjectId as a driver makes one: the second, 5 random bytes, a 3-byte counter."""
    seconds = int(when.timestamp()).to_bytes(4, "big")
    return ObjectId(seconds + rng.randbytes(5) + rng.randbytes(3))


def orders():
    rng = random.Random(13)
    customers = [object_id(rng, NEWEST - datetime.timedelta(days=400 + i)) for i in range(50)]
    docs = []
    for i in range(ORDERS):
        created = NEWEST - datetime.timedelta(seconds=rng.randrange(30 * 86400)) if i else NEWEST
        placed = created.replace(tzinfo=None, microsecond=rng.randrange(1000) * 1000)
        docs.append(
            {
                "_id": object_id(rng, created),
                "customer": rng.choice(customers),
                "items": [object_id(rng, created) for _ in range(rng.randrange(4))],
                # bson keeps milliseconds, in UTC; json_util.loads gives naive UTC datetimes back.
                "placed": placed,
                "quantity": Int64(rng.randrange(1, 2**40)),
                # An int32 and doubles, integral ones among them: canonical mode must keep each type.
                "lines": rng.randrange(100),
                "rate": rng.choice([2.0, 1e20, -0.0, 1.5e-7, 0.1, 123456789.0, -3.25]),
                "total": Decimal128(f"{rng.randrange(100000)}.{rng.randrange(100):02d}"),
                "note": rng.choice(
                    ['plain', 'with "quotes"', "back\\slash", "two\nlines", "tab\there", "ünïcödé ✓", ""]
                ),
            }
        )
    # Dates that relaxed mode cannot write as ISO 8601 strings: before 1970.
    docs[1]["placed"] = datetime.datetime(1969, 7, 20, 20, 17, 40)
    docs[2]["placed"] = datetime.datetime(1900, 1, 1, 0, 0, 0, 1000)
    return docs


def recipe_blocks(page):
    """The ```sql blocks between the page's mongodb-recipe markers, in order."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    match = re.search(r"<!-- mongodb-recipe: begin -->(.*?)<!-- mongodb-recipe: end -->", text, re.DOTALL)
    if not match:
        fail(f"{page} has no mongodb-recipe markers")
    blocks = re.findall(r"```sql\n(.*?)```", match.group(1), re.DOTALL)
    if len(blocks) < 3:
        fail(f"{page}: expected the recipe's sql blocks, found {len(blocks)}")
    return blocks


def psql(database, *args, cwd=None, input=None, encoding=None, expect_error=None):
    command = [PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", database, *args]
    env = {**os.environ, "PGTZ": "UTC"}
    if encoding:
        env["PGCLIENTENCODING"] = encoding
    result = subprocess.run(command, check=False, cwd=cwd, input=input, capture_output=True, text=True, env=env)
    if expect_error is not None:
        if result.returncode == 0 or expect_error not in result.stderr:
            fail(f"psql {' '.join(args)} in {database}: expected an error with {expect_error!r}, "
                 f"got exit {result.returncode}: {result.stderr.strip()}")
        return result.stderr
    if result.returncode != 0:
        fail(f"psql {' '.join(args)} in {database}: {result.stderr.strip()}")
    return result.stdout


def rows(database, sql):
    return [line.split("|") for line in psql(database, "-At", "-c", sql, encoding="UTF8").splitlines()]


def timestamp(text):
    """A timestamptz as psql prints it with TimeZone UTC ("2026-11-30 12:00:00.123+00")."""
    return datetime.datetime.fromisoformat(text + ":00" if re.search(r"[+-]\d\d$", text) else text)


def check(mode, docs, blocks, encoding=None):
    name = mode + (f"_{encoding.lower()}" if encoding else "")
    database = f"mongodb_recipe_{name}"
    directory = os.path.join(WORKDIR, name)
    os.makedirs(directory, exist_ok=True)
    options = CANONICAL_JSON_OPTIONS if mode == "canonical" else RELAXED_JSON_OPTIONS
    with open(os.path.join(directory, "orders.json"), "w", encoding="utf-8") as out:
        # mongoexport writes text as UTF-8, not as \u escapes (Python's default).
        out.writelines(json_util.dumps(doc, json_options=options, ensure_ascii=False) + "\n" for doc in docs)

    psql("postgres", "-c", f"DROP DATABASE IF EXISTS {database}")
    psql("postgres", "-c", f"CREATE DATABASE {database}")
    psql(database, "-c", "CREATE EXTENSION pg_objectid")
    recipe = "\n".join(blocks)
    # The client's encoding must not matter: the recipe's COPY reads and writes UTF-8 files.
    output = psql(database, "-A", "-F", "|", "-f", "-", cwd=directory, input=recipe, encoding=encoding)

    # Every key as the driver's 12 bytes, and the creation second the driver reads from it.
    loaded = rows(database, "SELECT id::text, encode(id::bytea, 'hex'), "
                            "extract(epoch FROM objectid_timestamp(id))::bigint FROM orders")
    want = {str(d["_id"]): d["_id"] for d in docs}
    if len(loaded) != len(docs):
        fail(f"{mode}: {len(loaded)} rows loaded, {len(docs)} documents exported")
    for text, raw, seconds in loaded:
        oid = want.get(text)
        if oid is None or raw != oid.binary.hex():
            fail(f"{mode}: key {text} is not an exported _id")
        if int(seconds) != int(oid.generation_time.timestamp()):
            fail(f"{mode}: objectid_timestamp({text}) = {seconds}, the driver says {oid.generation_time}")

    # The text as stored, not only as exported: a COPY that read the file in the client's encoding
    # would store mojibake and write it back unchanged, so the round trip alone would not tell.
    notes = rows(database, "SELECT id::text, md5(body ->> 'note') FROM orders")
    want_notes = {str(d["_id"]): hashlib.md5(d["note"].encode("utf-8")).hexdigest() for d in docs}
    for text, digest in notes:
        if digest != want_notes[text]:
            fail(f"{name}: the note of {text} is stored differently from the export")

    # The page's creation-time query: its result, and that it scans the key's index.
    query = next(b for b in blocks if "objectid_timestamp(id) >=" in b and b.lstrip().startswith("SELECT"))
    since = NEWEST - datetime.timedelta(days=1)
    recent = [d for d in docs if d["_id"].generation_time >= since]
    count, first, last_placed = rows(database, query)[0]
    if int(count) != len(recent):
        fail(f"{mode}: the last-day query counted {count}, Python counts {len(recent)}")
    if timestamp(first) != min(d["_id"].generation_time for d in recent):
        fail(f"{mode}: the last-day query's first order is {first}")
    if timestamp(last_placed) != max(d["placed"] for d in recent).replace(tzinfo=UTC):
        fail(f"{mode}: the last-day query's last placed date is {last_placed}")
    plan = psql(database, "-At", "-c", "EXPLAIN (COSTS OFF) " + query)
    if "orders_pkey" not in plan:
        fail(f"{mode}: the last-day query does not use orders_pkey:\n{plan}")

    # mongo_date() on every date, including those relaxed mode writes as $numberLong.
    placed = rows(database, "SELECT id::text, mongo_date(body -> 'placed') FROM orders")
    by_id = {str(d["_id"]): d["placed"] for d in docs}
    for text, value in placed:
        if timestamp(value) != by_id[text].replace(tzinfo=UTC):
            fail(f"{mode}: mongo_date of {text} is {value}, exported {by_id[text]}")

    # A lookup by a nested ObjectId, through the expression index.
    customer = docs[0]["customer"]
    lookup = f"SELECT count(*) FROM orders WHERE (body -> 'customer')::objectid = '{customer}'"
    got = int(rows(database, lookup)[0][0])
    if got != sum(d["customer"] == customer for d in docs):
        fail(f"{mode}: the customer lookup counted {got}")
    plan = psql(database, "-At", "-c", "EXPLAIN (COSTS OFF) " + lookup)
    if "orders_customer" not in plan:
        fail(f"{mode}: the customer lookup does not use orders_customer:\n{plan}")

    # The export back to Extended JSON: every document as it went in, field for field.
    with open(os.path.join(directory, "orders-out.json"), encoding="utf-8") as back:
        returned = [json_util.loads(line) for line in back]
    if len(returned) != len(docs):
        fail(f"{mode}: {len(returned)} documents exported back")
    original = {d["_id"]: d for d in docs}
    for doc in returned:
        if doc != original.get(doc["_id"]):
            fail(f"{mode}: document {doc['_id']} came back as {doc!r}, went in as {original.get(doc['_id'])!r}")
    if mode == "canonical":
        # Canonical Extended JSON names every value's type ($numberInt, $numberLong, $numberDouble,
        # …), where Python's == would take 1e20 for 10**20 and -0.0 for 0.0: every type and value
        # must come back. Keys sorted, because jsonb reorders them (the page says so).
        for doc in returned:
            back = json_util.dumps(doc, json_options=CANONICAL_JSON_OPTIONS, sort_keys=True)
            went = json_util.dumps(original[doc["_id"]], json_options=CANONICAL_JSON_OPTIONS, sort_keys=True)
            if back != went:
                fail(f"canonical: document {doc['_id']} came back as {back}, went in as {went}")
    ids = [d["_id"] for d in returned]
    if ids != sorted(ids):
        fail(f"{mode}: the export is not in key order")

    psql("postgres", "-c", f"DROP DATABASE {database}")
    print(f"mongodb recipe, {name} Extended JSON: {len(docs)} documents loaded and exported back unchanged, "
          f"{len(recent)} in the last day by key ({output.count(chr(10))} lines of psql output)")


def refused(blocks, name, lines, expect):
    """The recipe's first block on an export with a line it must refuse."""
    database = f"mongodb_recipe_{name}"
    directory = os.path.join(WORKDIR, name)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "orders.json"), "w", encoding="utf-8") as out:
        out.write("".join(line + "\n" for line in lines))
    psql("postgres", "-c", f"DROP DATABASE IF EXISTS {database}")
    psql("postgres", "-c", f"CREATE DATABASE {database}")
    psql(database, "-c", "CREATE EXTENSION pg_objectid")
    psql(database, "-f", "-", cwd=directory, input=blocks[0], expect_error=expect)
    psql("postgres", "-c", f"DROP DATABASE {database}")
    print(f"mongodb recipe: an export with {name.replace('_', ' ')} is refused ({expect})")


def main():
    docs = orders()
    blocks = recipe_blocks(DOCS)
    for mode, encoding in (("canonical", None), ("relaxed", None), ("relaxed", "LATIN1")):
        check(mode, docs, blocks, encoding)
    good = json_util.dumps(docs[0], json_options=CANONICAL_JSON_OPTIONS)
    # In Extended JSON a string _id is a string, not an ObjectId: loading it as one would change
    # its type on the way back.
    refused(blocks, "a_string_id", [good, '{"_id": "507f1f77bcf86cd799439011", "n": 1}'],
            'violates check constraint "orders_import_doc_check"')
    refused(blocks, "an_empty_line", [good, ""], 'violates check constraint "orders_import_doc_check"')


main()
