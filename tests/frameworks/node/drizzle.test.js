'use strict'
// docs/frameworks.md's Drizzle recipe (drizzle_schema.js) against a real server: drizzle-kit
// generates the migration from the schema, Drizzle's migrator applies it, and the ORM reads and
// writes through pg-objectid-drizzle. Run by scripts/clients_test.sh with `node --test`.

const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { test, before, after } = require('node:test')
const pg = require('pg')
const { ObjectId } = require('bson')
const { and, asc, between, eq, gte, lt, sql } = require('drizzle-orm')
const { drizzle } = require('drizzle-orm/node-postgres')
const { migrate } = require('drizzle-orm/node-postgres/migrator')
const { pgTable } = require('drizzle-orm/pg-core')
const { genObjectIdAt, objectIdString, objectIdTimestamp } = require('pg-objectid-drizzle')
const { files, freshDatabase, explain, column, withPlantedOverloads, T0, minutes } = require('./setup')

const schemaFile = path.join(files, 'drizzle_schema.js')
const { customers, orders } = require(schemaFile)
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'pg_objectid-drizzle-'))
let pool, db, client, config

function drizzleKit(...args) {
  // The package's "exports" hide bin.cjs from require.resolve; it sits beside the main module.
  const bin = path.join(path.dirname(require.resolve('drizzle-kit')), 'bin.cjs')
  return execFileSync(process.execPath, [bin, ...args], { cwd: out, encoding: 'utf8', env: process.env })
}

before(async () => {
  config = await freshDatabase('frameworks_drizzle', 'drizzle_app')
  // The recipe's two steps: an empty custom migration for the extension, then the schema's.
  drizzleKit('generate', '--dialect=postgresql', `--schema=${schemaFile}`, '--out=migrations', '--custom', '--name=pg_objectid')
  const [custom] = fs.readdirSync(path.join(out, 'migrations')).filter((f) => f.endsWith('.sql'))
  // The file drizzle-kit prepares ends in a comment with no newline: start a new line first.
  fs.appendFileSync(path.join(out, 'migrations', custom), '\nCREATE EXTENSION IF NOT EXISTS pg_objectid;\n')
  drizzleKit('generate', '--dialect=postgresql', `--schema=${schemaFile}`, '--out=migrations', '--name=shop')
  pool = new pg.Pool(config)
  db = drizzle(pool)
  await migrate(db, { migrationsFolder: path.join(out, 'migrations') })
  client = await pool.connect()
})

after(async () => {
  client?.release()
  await pool?.end()
  fs.rmSync(out, { recursive: true, force: true })
})

async function clear() {
  await client.query('TRUNCATE orders, customers')
}

test('drizzle-kit emits objectid columns with their defaults', () => {
  const generated = fs
    .readdirSync(path.join(out, 'migrations'))
    .filter((f) => f.endsWith('.sql'))
    .map((f) => fs.readFileSync(path.join(out, 'migrations', f), 'utf8'))
    .join('\n')
  assert.match(generated, /CREATE EXTENSION IF NOT EXISTS pg_objectid;/)
  // drizzle-kit quotes a custom type's name, as an identifier.
  assert.match(generated, /"id" "objectid" PRIMARY KEY DEFAULT gen_objectid\(\) NOT NULL/)
  assert.match(generated, /"customer_id" "objectid" NOT NULL/)
  assert.match(generated, /"reference" uuid DEFAULT uuidv7\(\) NOT NULL/)
})

test('the migration created the columns, the defaults and the extension, as the database owner', async () => {
  assert.deepEqual(await column(client, 'orders', 'id'), { type: 'objectid', def: 'gen_objectid()' })
  assert.deepEqual(await column(client, 'orders', 'customer_id'), { type: 'objectid', def: null })
  assert.match((await column(client, 'orders', 'reference')).def, /^(public\.)?uuidv7\(\)$/)
  const { rows } = await client.query(
    "SELECT extowner::regrole::text AS owner, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS su FROM pg_extension WHERE extname = 'pg_objectid'"
  )
  assert.deepEqual(rows, [{ owner: 'drizzle_app', su: false }])
  // Running the migrator again applies nothing and fails on nothing.
  await migrate(db, { migrationsFolder: path.join(out, 'migrations') })
})

test('rows inserted through the ORM get server-made ids that ascend', async () => {
  await clear()
  const [customer] = await db.insert(customers).values({ name: 'ada' }).returning()
  assert.ok(customer.id instanceof ObjectId)
  const made = await db
    .insert(orders)
    .values(Array.from({ length: 100 }, (_, i) => ({ customerId: customer.id, total: String(i) })))
    .returning({ id: orders.id, reference: orders.reference })
  const ids = made.map((r) => r.id.toHexString())
  assert.deepEqual(ids, [...ids].sort())
  assert.equal(new Set(ids).size, 100)
  assert.ok(made.every((r) => r.reference[14] === '7'))
  const { rows } = await client.query('SELECT id::text FROM orders ORDER BY id')
  assert.deepEqual(rows.map((r) => r.id), ids)
  const [one] = await db.select().from(orders).where(eq(orders.id, made[3].id))
  assert.equal(one.total, '3.00')
  assert.ok(one.customerId.equals(customer.id))
  // A 24-hex string and a client-made ObjectId are written as they are.
  const mine = new ObjectId()
  await db.insert(orders).values({ id: mine, customerId: customer.id.toHexString().toUpperCase(), total: '1' })
  assert.equal((await db.select().from(orders).where(eq(orders.id, mine.toHexString()))).length, 1)
  // The same table read through objectIdString: 24-hex strings.
  const ordersAsText = pgTable('orders', { id: objectIdString('id') })
  const texts = (await db.select().from(ordersAsText)).map((r) => r.id)
  assert.equal(texts.length, 101)
  assert.ok(texts.every((t) => typeof t === 'string' && /^[0-9a-f]{24}$/.test(t)))
})

async function ordersAt(times) {
  await clear()
  const [customer] = await db.insert(customers).values({ name: 'clock' }).returning()
  await db
    .insert(orders)
    .values(times.map((t, i) => ({ id: genObjectIdAt(t), customerId: customer.id, total: String(i) })))
  const rows = await db.select({ id: orders.id, total: orders.total }).from(orders)
  const byTotal = new Map(rows.map((r) => [Number(r.total), r.id.toHexString()]))
  return times.map((_, i) => byTotal.get(i))
}

test('creation-time queries return the right rows', async () => {
  const times = Array.from({ length: 150 }, (_, i) => minutes(37 * i))
  const ids = await ordersAt(times)
  const since = minutes(30 * 60)
  const until = minutes(54 * 60)
  const got = async (where) => (await db.select({ id: orders.id }).from(orders).where(where)).map((r) => r.id.toHexString()).sort()
  const expect = (pred) => ids.filter((_, i) => pred(times[i])).sort()
  assert.deepEqual(await got(gte(objectIdTimestamp(orders.id), since)), expect((t) => t >= since))
  assert.deepEqual(await got(lt(objectIdTimestamp(orders.id), since)), expect((t) => t < since))
  assert.deepEqual(await got(between(objectIdTimestamp(orders.id), since, until)), expect((t) => t >= since && t <= until))
  const [first] = await db
    .select({ created: objectIdTimestamp(orders.id) })
    .from(orders)
    .orderBy(asc(orders.id))
    .limit(1)
  assert.deepEqual(first.created, T0)
})

test('creation-time queries use the primary key', async () => {
  await ordersAt(Array.from({ length: 2000 }, (_, i) => minutes(i)))
  await client.query('ANALYZE orders')
  for (const where of [
    gte(objectIdTimestamp(orders.id), T0),
    and(gte(objectIdTimestamp(orders.id), T0), lt(objectIdTimestamp(orders.id), minutes(60))),
    between(objectIdTimestamp(orders.id), T0, minutes(60)),
  ]) {
    const query = db.select().from(orders).where(where).toSQL()
    assert.match(query.sql, /objectid_timestamp\(\("orders"\."id"\)::objectid\)/)
    const plan = await explain(client, query.sql, query.params)
    assert.match(plan, /orders_pkey/, plan)
    assert.doesNotMatch(plan, /Seq Scan/, plan)
  }
})

test('bad values fail with an error, not a wrong row', async () => {
  await clear()
  for (const bad of ['507f1f77bcf86cd79943901', '507f1f77bcf86cd79943901g', '', 5, Buffer.alloc(11)]) {
    await assert.rejects(
      async () => db.select().from(orders).where(eq(orders.id, bad)),
      (e) => /invalid ObjectId/.test(e.message) || /invalid ObjectId/.test(e.cause?.message ?? ''),
      `select with ${String(bad)}`
    )
    await assert.rejects(async () => db.insert(customers).values({ id: bad, name: 'x' }), /invalid ObjectId/)
  }
  // What reaches the server unchecked is refused there, with the SQLSTATE of bad input.
  await assert.rejects(
    async () => db.execute(sql`SELECT ${'507f1f77bcf86cd79943901'}::objectid`),
    (e) => (e.cause ?? e).code === '22P02'
  )
  assert.equal((await client.query('SELECT count(*)::int AS n FROM customers')).rows[0].n, 0)
})

test('overloads planted by the database owner catch nothing the helpers send', async () => {
  await clear()
  const result = await withPlantedOverloads(config, async (superuser) => {
    const su = drizzle(superuser)
    const [customer] = await su.insert(customers).values({ name: 'superuser' }).returning()
    const [made] = await su
      .insert(orders)
      .values({ id: genObjectIdAt(T0), customerId: customer.id, total: '1' })
      .returning({ id: orders.id })
    assert.deepEqual(made.id.getTimestamp(), T0)
    const [row] = await su.select({ t: objectIdTimestamp(sql`${'507f1f77bcf86cd799439011'}`) }).from(orders)
    assert.deepEqual(row.t, new Date('2012-10-17T21:13:27Z'))
    assert.equal((await su.select().from(orders).where(gte(objectIdTimestamp(orders.id), T0))).length, 1)
  })
  assert.deepEqual(result, { calls: 0, rolsuper: false })
})
