'use strict'
// docs/clients.md's node-postgres adapter (objectid_pg.js) against a real server.
//
// Run by scripts/clients_test.sh with `node --test`: the adapter extracted from the page is in
// $PG_OBJECTID_CLIENT_ADAPTERS, the pinned pg and bson on NODE_PATH (so that this file and the
// adapter load the same copies), the server in $PG_OBJECTID_CLIENTS_DSN. Every value written by
// the client must read back as an equal ObjectId and, on the server, as the same 12 bytes; every
// id the server makes must carry the generation time bson's getTimestamp() reads from it.

const assert = require('node:assert/strict')
const path = require('node:path')
const { test, before, after } = require('node:test')
const pg = require('pg')
const { ObjectId, BSONError } = require('bson')

const adapters = process.env.PG_OBJECTID_CLIENT_ADAPTERS
const dsn = process.env.PG_OBJECTID_CLIENTS_DSN
if (!adapters || !dsn) {
  throw new Error(
    'PG_OBJECTID_CLIENT_ADAPTERS or PG_OBJECTID_CLIENTS_DSN is not set: run this through scripts/clients_test.sh'
  )
}
const {
  lookupObjectIdOids,
  registerObjectId,
  objectIdTypes,
  objectIdParam,
  objectIdArrayParam,
} = require(path.join(adapters, 'objectid_pg.js'))

// The libpq keyword string the other tests use ("host=… port=… user=…"), as pg's config.
const server = Object.fromEntries(dsn.trim().split(/\s+/).map((kv) => kv.split('=')))

// Ids whose first 4 bytes are the edges of the unsigned Unix second: 1970, 2012, the last second
// a signed reading gets right (2038-01-19 03:14:07), the first it gets wrong, and 2106.
const EDGES = [
  '000000000000000000000000',
  '507f1f77bcf86cd799439011',
  '7fffffffffffffffffffffff',
  '800000000000000000000000',
  'ffffffffffffffffffffffff',
]

// The edge ids and 50 made by bson, as a MongoDB client makes them.
function clientIds() {
  return [...EDGES.map((h) => ObjectId.createFromHexString(h)), ...Array.from({ length: 50 }, () => new ObjectId())]
}

const hex = (id) => (id == null ? null : id.toHexString())
// Arrays of ids (nested, with nulls) as arrays of hex strings, for deepEqual.
const hexDeep = (value) => (Array.isArray(value) ? value.map(hexDeep) : hex(value))

async function connect(database) {
  const client = new pg.Client({ ...server, database })
  await client.connect()
  return client
}

// A new database `name`, set up by `setup`; a connected client to it.
async function freshDb(name, setup = 'CREATE EXTENSION pg_objectid') {
  const admin = await connect('postgres')
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`)
  await admin.end()
  const client = await connect(name)
  await client.query(setup)
  return client
}

// Runs `text` through both of pg's protocols: the extended one (which pg uses when there are
// parameters, and here always) and, for a query without parameters, the simple one. Each sends
// its results differently (one DataRow per row either way, but different message sequences).
async function bothProtocols(client, text, values, check) {
  const modes = values.length === 0 ? ['extended', 'simple'] : ['extended']
  for (const mode of modes) {
    const result = await client.query({ text, values, queryMode: mode === 'extended' ? 'extended' : undefined })
    await check(result, mode)
  }
}

let client
before(async () => {
  client = await freshDb('clients_node')
  await registerObjectId(client)
})
after(async () => {
  await client.end()
})

test('parameters in binary and in text read back as the same ObjectIds and the same bytes', async () => {
  await client.query('CREATE TABLE roundtrip (n int4, id objectid)')
  const ids = clientIds()
  // objectIdParam: a Buffer, which pg sends in binary; the hex string goes as text.
  const sent = [...ids.map((id) => objectIdParam(id)), ...ids.map((id) => id.toHexString())]
  for (const [n, value] of sent.entries()) {
    await client.query('INSERT INTO roundtrip VALUES ($1, $2)', [n, value])
  }
  await bothProtocols(
    client,
    "SELECT n, id, id::text AS text, encode(id::bytea, 'hex') AS bytes FROM roundtrip ORDER BY n",
    [],
    ({ rows }, mode) => {
      assert.equal(rows.length, sent.length)
      for (const row of rows) {
        const expected = ids[row.n % ids.length]
        assert.ok(row.id instanceof ObjectId, `row ${row.n}, ${mode}: ${row.id}`)
        assert.ok(row.id.equals(expected), `row ${row.n}, ${mode}`)
        assert.deepEqual(Buffer.from(row.id.id), Buffer.from(expected.id), "the driver's bytes")
        assert.equal(row.bytes, expected.toHexString(), "the server's bytes")
        assert.equal(row.text, expected.toHexString(), "the server's text")
      }
    }
  )
  // Ids as search keys, in both parameter formats, find their own rows.
  for (const id of ids) {
    for (const value of [objectIdParam(id), id.toHexString()]) {
      const { rows } = await client.query('SELECT count(*)::int4 AS c FROM roundtrip WHERE id = $1', [value])
      assert.equal(rows[0].c, 2, id.toHexString())
    }
  }
})

test("a Buffer parameter reaches the type's binary receive function", async () => {
  const id = new ObjectId()
  // The adapter's parameter is a Buffer of the 12 bytes...
  const param = objectIdParam(id)
  assert.ok(Buffer.isBuffer(param), 'objectIdParam returns a Buffer')
  assert.deepEqual(param, Buffer.from(id.id))
  const { rows } = await client.query('SELECT $1::objectid::text AS t', [param])
  assert.equal(rows[0].t, id.toHexString())
  // ...and a Buffer goes in binary format:
  // the same 24 hex digits as a Buffer are refused for their length by the receive function, the
  // one reader of raw bytes. As a string they are fine.
  await assert.rejects(client.query('SELECT $1::objectid', [Buffer.from(id.toHexString())]), {
    code: '22P03',
    message: 'invalid binary length for type objectid: 24 bytes, expected 12',
  })
  await assert.rejects(client.query('SELECT $1::objectid', [Buffer.from(id.id).subarray(0, 11)]), {
    code: '22P03',
    message: 'invalid binary length for type objectid: 11 bytes, expected 12',
  })
  const { rows: asText } = await client.query('SELECT $1::objectid::text AS t', [id.toHexString()])
  assert.equal(asText[0].t, id.toHexString())
})

test("server ids carry bson's getTimestamp()", async () => {
  const started = Date.now()
  const { rows } = await client.query(
    `SELECT id, objectid_timestamp(id) AS t, encode(id::bytea, 'hex') AS bytes FROM (
       SELECT gen_objectid() AS id FROM generate_series(1, 200)
       UNION ALL SELECT unnest($1::text[])::objectid) AS s`,
    [EDGES]
  )
  const finished = Date.now()
  assert.equal(rows.length, 200 + EDGES.length)
  for (const [i, row] of rows.entries()) {
    assert.ok(row.id instanceof ObjectId)
    assert.equal(row.t.getTime(), row.id.getTimestamp().getTime(), row.bytes)
    assert.equal(row.bytes, row.id.toHexString())
    if (i < 200) {
      // Made just now (the stamp may run up to a second ahead of the clock).
      assert.ok(row.t.getTime() >= Math.floor(started / 1000 - 1) * 1000, `${row.bytes} is older than the test`)
      assert.ok(row.t.getTime() <= finished + 2000, `${row.bytes} is in the future`)
    }
  }
  // Read unsigned: 0x80000000 is 2038-01-19 03:14:08 UTC, 0xffffffff 2106-02-07 06:28:15.
  assert.equal(rows[203].id.getTimestamp().toISOString(), '2038-01-19T03:14:08.000Z')
  assert.equal(rows[204].t.toISOString(), '2106-02-07T06:28:15.000Z')
})

test('binary results are refused with a clear error, because pg alters their bytes', async () => {
  const id = ObjectId.createFromHexString('507f1f77bcf86cd799439011')
  for (const text of ['SELECT $1::objectid AS id', 'SELECT ARRAY[$1::objectid] AS id']) {
    await assert.rejects(client.query({ text, values: [objectIdParam(id)], binary: true }), {
      message: /binary results are not supported, pg 8 alters their bytes/,
    })
  }
  // Why: pg 8 passes each binary field through a UTF-8 string. If a later pg returns these
  // bytes intact, this fails, and the adapter can parse binary results instead of refusing them.
  const { rows } = await client.query({
    text: 'SELECT $1::int4 AS i, $2::bytea AS b',
    values: [1000, Buffer.from(id.id)],
    binary: true,
  })
  assert.equal(rows[0].i, 1007, 'pg 8 returned a binary int4 intact: binary results may be safe now')
  // Without parameters pg uses the simple protocol, which has text results only: binary is ignored.
  const { rows: simple } = await client.query({ text: "SELECT '507f1f77bcf86cd799439011'::objectid AS id", binary: true })
  assert.ok(simple[0].id.equals(id))
  // The connection is still usable after the refusals.
  const { rows: after } = await client.query('SELECT $1::objectid AS id', [objectIdParam(id)])
  assert.ok(after[0].id.equals(id))
})

test('NULL both ways', async () => {
  await client.query('CREATE TABLE nulls (n int4, id objectid)')
  await client.query('INSERT INTO nulls VALUES (1, $1), (2, $2), (3, $3)', [
    objectIdParam(null),
    objectIdParam(undefined),
    objectIdArrayParam(null),
  ])
  await bothProtocols(client, 'SELECT id, id IS NULL AS is_null FROM nulls ORDER BY n', [], ({ rows }) => {
    assert.deepEqual(rows, [1, 2, 3].map(() => ({ id: null, is_null: true })))
  })
})

test('arrays, with NULL elements and two dimensions, both ways', async () => {
  const ids = clientIds()
  const withNull = [ids[0], null, ids[1]]
  const twoD = [
    [ids[2], ids[3]],
    [ids[4], null],
  ]
  for (const value of [ids, withNull, twoD, []]) {
    const { rows } = await client.query(
      "SELECT $1::objectid[] AS a, array_to_string($1::objectid[], ',', 'NULL') AS s, pg_typeof($1::objectid[])::text AS t",
      [objectIdArrayParam(value)]
    )
    assert.deepEqual(hexDeep(rows[0].a), hexDeep(value))
    assert.equal(rows[0].s, value.flat().map((id) => hex(id) ?? 'NULL').join(','), "the server's elements")
    assert.equal(rows[0].t, 'objectid[]')
    for (const id of rows[0].a.flat()) assert.ok(id === null || id instanceof ObjectId)
  }
  // An array the server makes.
  const made = [ids[2], ids[3], ids[4]].map((id) => `'${id.toHexString()}'::objectid`)
  await bothProtocols(client, `SELECT ARRAY[ARRAY[${made[0]}, ${made[1]}], ARRAY[${made[2]}, NULL]] AS a`, [], ({ rows }) =>
    assert.deepEqual(hexDeep(rows[0].a), hexDeep(twoD))
  )
  const { rows } = await client.query('SELECT count(*)::int4 AS c FROM unnest($1::objectid[]) AS u WHERE u = ANY($2)', [
    objectIdArrayParam(ids),
    objectIdArrayParam(ids.slice(0, 7)),
  ])
  assert.equal(rows[0].c, 7)
})

test('wrong values fail clearly', async () => {
  for (const bad of ['507f1f77bcf86cd79943901', '507f1f77bcf86cd79943901g', 'xyz']) {
    assert.throws(() => ObjectId.createFromHexString(bad), BSONError, bad)
    assert.throws(() => new ObjectId(bad), BSONError, bad)
  }
  assert.throws(() => new ObjectId(Buffer.alloc(11)), BSONError)
  assert.throws(() => objectIdParam('507f1f77bcf86cd799439011'), TypeError)
  assert.throws(() => objectIdArrayParam(['507f1f77bcf86cd799439011']), TypeError)
  // A malformed hex string reaches the server's input function.
  await assert.rejects(client.query('SELECT $1::objectid', ['507f1f77bcf86cd79943901g']), {
    code: '22P02',
    message: 'invalid input syntax for type objectid: "507f1f77bcf86cd79943901g"',
  })
  // An ObjectId passed as it is goes as JSON, with its quotes, as the page warns.
  const id = new ObjectId()
  await assert.rejects(client.query('SELECT $1::objectid', [id]), {
    code: '22P02',
    message: `invalid input syntax for type objectid: ""${id.toHexString()}""`,
  })
})

test('a pool gets the parsers through its types option; other types keep theirs', async () => {
  const oids = await lookupObjectIdOids(client)
  const pool = new pg.Pool({ ...server, database: 'clients_node', max: 2, types: objectIdTypes(oids) })
  try {
    const id = new ObjectId()
    const { rows } = await pool.query(
      'SELECT $1::objectid AS id, ARRAY[$1::objectid] AS a, 7::int4 AS i, objectid_timestamp($1) AS t',
      [objectIdParam(id)]
    )
    assert.ok(rows[0].id instanceof ObjectId && rows[0].id.equals(id))
    assert.deepEqual(hexDeep(rows[0].a), [id.toHexString()])
    assert.equal(rows[0].i, 7)
    assert.equal(rows[0].t.getTime(), id.getTimestamp().getTime())
    await assert.rejects(pool.query({ text: 'SELECT $1::objectid', values: [objectIdParam(id)], binary: true }), {
      message: /binary results are not supported/,
    })
  } finally {
    await pool.end()
  }
})

test('parsers are per client: an unregistered client sees the hex string', async () => {
  const other = await connect('clients_node')
  try {
    const { rows } = await other.query("SELECT '507f1f77bcf86cd799439011'::objectid AS id")
    assert.equal(rows[0].id, '507f1f77bcf86cd799439011')
  } finally {
    await other.end()
  }
})

test('the type is found through the extension, in any schema, or a clear error', async () => {
  const ext = await freshDb('clients_node_schema', 'CREATE SCHEMA ext; CREATE EXTENSION pg_objectid SCHEMA ext')
  try {
    const { rows: path } = await ext.query('SHOW search_path')
    assert.ok(!path[0].search_path.includes('ext'), path[0].search_path)
    await registerObjectId(ext)
    const id = new ObjectId()
    const { rows } = await ext.query('SELECT $1::ext.objectid AS id, ARRAY[$1::ext.objectid] AS a', [objectIdParam(id)])
    assert.ok(rows[0].id.equals(id))
    assert.deepEqual(hexDeep(rows[0].a), [id.toHexString()])
  } finally {
    await ext.end()
  }
  const none = await freshDb('clients_node_none', 'SELECT 1')
  try {
    await assert.rejects(registerObjectId(none), /pg_objectid is not installed in this database/)
  } finally {
    await none.end()
  }
})
