"""docs/clients.md's psycopg 3 adapter (objectid_psycopg.py) against a real server.

Run by scripts/clients_test.sh, with the adapter extracted from the page and the pinned drivers
on PYTHONPATH, and the server in PG_OBJECTID_CLIENTS_DSN. Every value written by the client must
read back as an equal bson.ObjectId and, on the server, as the same 12 bytes; every id the server
makes must carry the generation time pymongo's bson reads from it.
"""

import datetime
import os
import unittest

import psycopg
from bson import ObjectId
from bson.errors import InvalidId
from psycopg import errors, sql
from psycopg.adapt import PyFormat
from psycopg.pq import Format
from psycopg.types import TypeInfo

from objectid_psycopg import register_objectid

# Ids whose first 4 bytes are the edges of the unsigned Unix second: 1970, 2012, the last second a
# signed reading gets right (2038-01-19 03:14:07), the first it gets wrong, and 2106.
EDGES = [
    "000000000000000000000000",
    "507f1f77bcf86cd799439011",
    "7fffffffffffffffffffffff",
    "800000000000000000000000",
    "ffffffffffffffffffffffff",
]


def dsn(dbname):
    base = os.environ.get("PG_OBJECTID_CLIENTS_DSN")
    if not base:
        raise RuntimeError(
            "PG_OBJECTID_CLIENTS_DSN is not set: run this through scripts/clients_test.sh,"
            " which starts a server with pg_objectid installed"
        )
    return f"{base} dbname={dbname}"


def fresh_db(name, setup="CREATE EXTENSION pg_objectid"):
    """A new database `name`, set up by `setup`; an autocommit connection to it."""
    with psycopg.connect(dsn("postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(name)))
    conn = psycopg.connect(dsn(name), autocommit=True)
    conn.execute(setup)
    return conn


def client_ids():
    """The edge ids and 50 made by bson, as a MongoDB client makes them."""
    return [ObjectId(h) for h in EDGES] + [ObjectId() for _ in range(50)]


class ObjectIdPsycopgTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.conn = fresh_db("clients_python")
        register_objectid(TypeInfo.fetch(cls.conn, "objectid"), cls.conn)

    @classmethod
    def tearDownClass(cls):
        cls.conn.close()

    def setUp(self):
        self.conn.execute("DROP TABLE IF EXISTS t; CREATE TABLE t (n int4, fmt text, id objectid)")

    def assert_server_has(self, expected):
        """The table's ids, by n, are the 12 bytes of the expected ObjectIds (None: NULL)."""
        rows = self.conn.execute("SELECT n, id::bytea FROM t ORDER BY n").fetchall()
        self.assertEqual([r[0] for r in rows], list(range(len(expected))))
        for (n, raw), oid in zip(rows, expected):
            self.assertEqual(raw, None if oid is None else oid.binary, f"row {n}")

    def test_parameters_in_each_format_read_back_in_each_format(self):
        ids = client_ids()
        rows = []
        # %t: the text dumper (24 hex digits, the type's input function); %b: the binary one (12
        # raw bytes, which only the type's binary receive function accepts); %s: whichever the
        # adapter registered last, binary.
        for placeholder in ("%t", "%b", "%s"):
            rows += [(len(rows) + i, placeholder, oid) for i, oid in enumerate(ids)]
        with self.conn.cursor() as cur:
            for n, placeholder, oid in rows:
                cur.execute(f"INSERT INTO t VALUES (%s, %s, {placeholder})", (n, placeholder, oid))
        self.assert_server_has([oid for _, _, oid in rows])
        for binary in (False, True):
            with self.conn.cursor(binary=binary) as cur:
                cur.execute("SELECT n, id, id::text FROM t ORDER BY n")
                self.assertEqual(cur.description[1].type_code, TypeInfo.fetch(self.conn, "objectid").oid)
                for n, oid, text in cur:
                    self.assertIs(type(oid), ObjectId, f"binary={binary}")
                    self.assertEqual(oid, rows[n][2], f"row {n}, binary={binary}")
                    self.assertEqual(oid.binary, rows[n][2].binary)
                    self.assertEqual(str(oid), text)
        # Ids as search keys, in both parameter formats, find their own rows.
        for placeholder in ("%t", "%b"):
            for oid in ids:
                count = self.conn.execute(f"SELECT count(*) FROM t WHERE id = {placeholder}", (oid,)).fetchone()[0]
                self.assertEqual(count, 3, f"{oid} with {placeholder}")

    def test_parameters_are_typed_objectid(self):
        # %s picks the binary dumper, as the page says.
        self.assertEqual(self.conn.adapters.get_dumper(ObjectId, PyFormat.AUTO).format, Format.BINARY)
        # The dumpers carry the type's OID: without a cast the server sees an objectid.
        for placeholder in ("%t", "%b"):
            row = self.conn.execute(f"SELECT pg_typeof({placeholder})::text", (ObjectId(),)).fetchone()
            self.assertEqual(row[0], "objectid", placeholder)

    def test_server_ids_carry_bsons_generation_time(self):
        before = datetime.datetime.now(datetime.UTC)
        for binary in (False, True):
            with self.conn.cursor(binary=binary) as cur:
                cur.execute(
                    """SELECT id, objectid_timestamp(id), id::bytea FROM (
                           SELECT gen_objectid() AS id FROM generate_series(1, 200)
                           UNION ALL SELECT unnest(%s::text[])::objectid) AS s""",
                    (EDGES,),
                )
                rows = cur.fetchall()
            after = datetime.datetime.now(datetime.UTC)
            self.assertEqual(len(rows), 200 + len(EDGES))
            for i, (oid, server_time, raw) in enumerate(rows):
                self.assertEqual(oid.generation_time, server_time, f"{oid}, binary={binary}")
                self.assertEqual(oid.binary, raw)
                if i < 200:
                    # Made just now (the stamp may run up to a second ahead of the clock).
                    self.assertGreaterEqual(server_time, before.replace(microsecond=0) - datetime.timedelta(seconds=1))
                    self.assertLessEqual(server_time, after + datetime.timedelta(seconds=2))
            # Read unsigned: 0x80000000 is 2038-01-19 03:14:08 UTC, 0xffffffff 2106-02-07 06:28:15.
            utc = datetime.UTC
            self.assertEqual(rows[203][0].generation_time, datetime.datetime(2038, 1, 19, 3, 14, 8, tzinfo=utc))
            self.assertEqual(rows[204][0].generation_time, datetime.datetime(2106, 2, 7, 6, 28, 15, tzinfo=utc))

    def test_null_both_ways(self):
        for n, placeholder in enumerate(("%t", "%b", "%s")):
            self.conn.execute(f"INSERT INTO t VALUES (%s, %s, {placeholder})", (n, placeholder, None))
        self.assert_server_has([None, None, None])
        for binary in (False, True):
            rows = self.conn.cursor(binary=binary).execute("SELECT id FROM t").fetchall()
            self.assertEqual(rows, [(None,)] * 3)

    def test_arrays_are_lists(self):
        ids = client_ids()
        with_null = [ids[0], None, ids[1]]
        for placeholder in ("%t", "%b"):
            for binary in (False, True):
                cur = self.conn.cursor(binary=binary)
                row = cur.execute(
                    f"SELECT {placeholder}, pg_typeof({placeholder})::text, array_to_string({placeholder}, ',')",
                    (ids, ids, ids),
                ).fetchone()
                self.assertEqual(row[0], ids, f"{placeholder}, binary={binary}")
                self.assertEqual(row[1], "objectid[]")
                self.assertEqual(row[2], ",".join(str(i) for i in ids), "the server's elements")
                row = cur.execute(
                    f"SELECT {placeholder}, array_position({placeholder}, NULL)", (with_null, with_null)
                ).fetchone()
                self.assertEqual(row, (with_null, 2))
                # Two dimensions, made by the server.
                row = cur.execute(
                    "SELECT ARRAY[ARRAY[%s::objectid, %s::objectid], ARRAY[%s::objectid, NULL]]",
                    (ids[0], ids[1], ids[2]),
                ).fetchone()
                self.assertEqual(row[0], [[ids[0], ids[1]], [ids[2], None]])
                self.assertEqual(cur.execute("SELECT '{}'::objectid[]").fetchone()[0], [])

    def test_copy_text_and_binary(self):
        ids = client_ids()
        for fmt in ("text", "binary"):
            self.conn.execute("TRUNCATE t")
            with self.conn.cursor() as cur, cur.copy(f"COPY t (n, fmt, id) FROM STDIN (FORMAT {fmt})") as copy:
                if fmt == "binary":
                    copy.set_types(["int4", "text", "objectid"])
                for n, oid in enumerate(ids + [None]):
                    copy.write_row((n, fmt, oid))
            self.assert_server_has(ids + [None])
            with (
                self.conn.cursor() as cur,
                cur.copy(f"COPY (SELECT n, id FROM t ORDER BY n) TO STDOUT (FORMAT {fmt})") as copy,
            ):
                copy.set_types(["int4", "objectid"])
                out = list(copy.rows())
            self.assertEqual(out, list(enumerate(ids + [None])), fmt)

    def test_client_side_binding(self):
        oid = ObjectId()
        literal = sql.Literal(oid).as_string(self.conn)
        self.assertEqual(literal, f"'{oid}'::objectid")
        with psycopg.ClientCursor(self.conn) as cur:
            cur.execute("INSERT INTO t VALUES (0, 'client', %s)", (oid,))
            self.assertEqual(cur.execute("SELECT id FROM t WHERE id = %s", (oid,)).fetchone()[0], oid)
        self.assert_server_has([oid])

    def test_wrong_values_fail_clearly(self):
        for bad in ("507f1f77bcf86cd79943901", "507f1f77bcf86cd79943901g", "xyz"):
            with self.assertRaises(InvalidId, msg=bad):
                ObjectId(bad)
        # bson's message for bytes of another length is misleading, but it is an error.
        for bad in (b"\x50" * 11, b"\x50" * 13):
            with self.assertRaisesRegex(TypeError, "id must be an instance of", msg=repr(bad)):
                ObjectId(bad)
        # A str is sent untyped; the server's input function refuses a malformed one.
        with self.assertRaises(errors.InvalidTextRepresentation) as caught:
            self.conn.execute("INSERT INTO t VALUES (0, 'str', %s)", ("507f1f77bcf86cd79943901g",))
        self.assertIn('invalid input syntax for type objectid: "507f1f77bcf86cd79943901g"', str(caught.exception))
        # A well-formed str works the same way.
        self.conn.execute("INSERT INTO t VALUES (0, 'str', %s)", ("507f1f77bcf86cd799439011",))
        self.assert_server_has([ObjectId("507f1f77bcf86cd799439011")])


class RegistrationTest(unittest.TestCase):
    def test_without_the_extension(self):
        with fresh_db("clients_python_none", "SELECT 1") as conn:
            info = TypeInfo.fetch(conn, "objectid")
            self.assertIsNone(info)
            with self.assertRaisesRegex(psycopg.ProgrammingError, "type objectid not found"):
                register_objectid(info, conn)

    def test_extension_in_another_schema(self):
        with fresh_db("clients_python_schema", "CREATE SCHEMA ext; CREATE EXTENSION pg_objectid SCHEMA ext") as conn:
            self.assertIsNone(TypeInfo.fetch(conn, "objectid"), "not on the search_path")
            register_objectid(TypeInfo.fetch(conn, "ext.objectid"), conn)
            conn.execute("CREATE TABLE t (id ext.objectid)")
            ids = client_ids()
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO t VALUES (%b)", [(i,) for i in ids])
            for binary in (False, True):
                rows = conn.cursor(binary=binary).execute("SELECT id, id::bytea FROM t").fetchall()
                self.assertEqual([r[0] for r in rows], ids)
                self.assertEqual([r[1] for r in rows], [i.binary for i in ids])
            self.assertEqual(conn.execute("SELECT %s", (ids,)).fetchone()[0], ids)
            self.assertEqual(sql.Literal(ids[0]).as_string(conn), f"'{ids[0]}'::ext.objectid")

    def test_registration_is_per_connection(self):
        # Two databases, two OIDs: each connection reads its own objectid.
        with fresh_db("clients_python_a") as a, fresh_db("clients_python_b") as b:
            infos = [TypeInfo.fetch(c, "objectid") for c in (a, b)]
            self.assertNotEqual(infos[0].oid, infos[1].oid)
            for conn, info in zip((a, b), infos):
                register_objectid(info, conn)
            oid = ObjectId()
            for conn in (a, b):
                self.assertEqual(conn.execute("SELECT %b::text", (oid,)).fetchone()[0], str(oid))
                self.assertEqual(conn.cursor(binary=True).execute("SELECT %s", (oid,)).fetchone()[0], oid)


if __name__ == "__main__":
    unittest.main()
