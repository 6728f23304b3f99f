'use strict'
// docs/frameworks.md's Kysely recipe (kysely_migrations.js) against a real server: Kysely's
// Migrator applies and reverses the migration, and queries use pg-objectid-kysely's helpers.
// Run by scripts/clients_test.sh with `node --test`.

const assert = require('node:assert/strict')
const path = require('node:path')
const { test, before, after } = require('node:test')
const pg = require('pg')
const { ObjectId } = require('bson')
const { Kysely, PostgresDialect, sql } = require('kysely')
const { Migrator } = require('kysely/migration')
const { genObjectIdAt, objectIdTimestamp, ObjectIdPlugin } = require('pg-objectid-kysely')
const { files, freshDatabase, explain, column, withPlantedOverloads, T0, minutes } = require('./setup')

const { migrations } = require(path.join(files, 'kysely_migrations.js'))
let pool, db, client, migrator, config

before(async () => {
  config = await freshDatabase('frameworks_kysely', 'kysely_app')
  pool = new pg.Pool(config)
  db = new Kysely({ dialect: new PostgresDialect({ pool }), plugins: [new ObjectIdPlugin()] })
  migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
  const { error } = await migrator.migrateToLatest()
  if (error) throw error
  client = await pool.connect()
})

after(async () => {
  client?.release()
  await db?.destroy()
})

async function clear() {
  await client.query('TRUNCATE orders, customers')
}

test('the migration creates the columns, the defaults and the extension, as the database owner', async () => {
  assert.deepEqual(await column(client, 'customers', 'id'), { type: 'objectid', def: 'gen_objectid()' })
  assert.deepEqual(await column(client, 'orders', 'id'), { type: 'objectid', def: 'gen_objectid()' })
  assert.deepEqual(await column(client, 'orders', 'customer_id'), { type: 'objectid', def: null })
  assert.match((await column(client, 'orders', 'reference')).def, /^(public\.)?uuidv7\(\)$/)
  const { rows } = await client.query(
    "SELECT extowner::regrole::text AS owner, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS su FROM pg_extension WHERE extname = 'pg_objectid'"
  )
  assert.deepEqual(rows, [{ owner: 'kysely_app', su: false }])
})

test('rows inserted through Kysely get server-made ids that ascend', async () => {
  await clear()
  const customer = await db.insertInto('customers').values({ name: 'ada' }).returning('id').executeTakeFirstOrThrow()
  assert.match(customer.id, /^[0-9a-f]{24}$/)
  const made = await db
    .insertInto('orders')
    .values(Array.from({ length: 100 }, (_, i) => ({ customer_id: customer.id, total: i })))
    .returning(['id', 'reference'])
    .execute()
  const ids = made.map((r) => r.id)
  assert.deepEqual(ids, [...ids].sort())
  assert.equal(new Set(ids).size, 100)
  assert.ok(made.every((r) => r.reference[14] === '7'))
  // bson ObjectIds as parameters, through the plugin; in a list too.
  const asObjects = ids.slice(0, 3).map((h) => ObjectId.createFromHexString(h))
  const found = await db.selectFrom('orders').select('id').where('id', 'in', asObjects).orderBy('id').execute()
  assert.deepEqual(found.map((r) => r.id), ids.slice(0, 3))
  // An array of ObjectIds as one value (= any(...)).
  const anyOf = await db
    .selectFrom('orders')
    .select('id')
    .where(sql`id = any(${asObjects}::objectid[])`)
    .orderBy('id')
    .execute()
  assert.deepEqual(anyOf.map((r) => r.id), ids.slice(0, 3))
  const mine = new ObjectId()
  await db.insertInto('orders').values({ id: mine, customer_id: ObjectId.createFromHexString(customer.id), total: 1 }).execute()
  const row = await db.selectFrom('orders').selectAll().where('id', '=', mine).executeTakeFirstOrThrow()
  assert.equal(row.id, mine.toHexString())
})

async function ordersAt(times) {
  await clear()
  const customer = await db.insertInto('customers').values({ name: 'clock' }).returning('id').executeTakeFirstOrThrow()
  await db
    .insertInto('orders')
    .values(times.map((t, i) => ({ id: genObjectIdAt(t), customer_id: customer.id, total: i })))
    .execute()
  const rows = await db.selectFrom('orders').select(['id', 'total']).execute()
  const byTotal = new Map(rows.map((r) => [Number(r.total), r.id]))
  return times.map((_, i) => byTotal.get(i))
}

test('creation-time queries return the right rows', async () => {
  const times = Array.from({ length: 150 }, (_, i) => minutes(37 * i))
  const ids = await ordersAt(times)
  const since = minutes(30 * 60)
  const until = minutes(54 * 60)
  const got = async (op, value) =>
    (await db.selectFrom('orders').select('id').where(objectIdTimestamp('orders.id'), op, value).execute())
      .map((r) => r.id)
      .sort()
  const expect = (pred) => ids.filter((_, i) => pred(times[i])).sort()
  assert.deepEqual(await got('>=', since), expect((t) => t >= since))
  assert.deepEqual(await got('<', since), expect((t) => t < since))
  const between = await db
    .selectFrom('orders')
    .select('id')
    .where((eb) => eb.between(objectIdTimestamp('orders.id'), since, until))
    .execute()
  assert.deepEqual(between.map((r) => r.id).sort(), expect((t) => t >= since && t <= until))
  const first = await db
    .selectFrom('orders')
    .select(objectIdTimestamp('orders.id').as('created'))
    .orderBy('id')
    .executeTakeFirstOrThrow()
  assert.deepEqual(first.created, T0)
})

test('creation-time queries use the primary key', async () => {
  await ordersAt(Array.from({ length: 2000 }, (_, i) => minutes(i)))
  await client.query('ANALYZE orders')
  for (const query of [
    db.selectFrom('orders').selectAll().where(objectIdTimestamp('orders.id'), '>=', T0),
    db
      .selectFrom('orders')
      .selectAll()
      .where(objectIdTimestamp('orders.id'), '>=', T0)
      .where(objectIdTimestamp('orders.id'), '<', minutes(60)),
  ]) {
    const compiled = query.compile()
    assert.match(compiled.sql, /objectid_timestamp\("orders"\."id"::objectid\)/)
    const plan = await explain(client, compiled.sql, compiled.parameters)
    assert.match(plan, /orders_pkey/, plan)
    assert.doesNotMatch(plan, /Seq Scan/, plan)
  }
})

test('bad values fail with the server error of bad input', async () => {
  await clear()
  for (const bad of ['507f1f77bcf86cd79943901', '507f1f77bcf86cd79943901g', '', 5]) {
    await assert.rejects(
      async () => db.selectFrom('orders').selectAll().where('id', '=', bad).execute(),
      (e) => e.code === '22P02' && e.message.includes('invalid input syntax for type objectid'),
      `select with ${String(bad)}`
    )
    await assert.rejects(async () => db.insertInto('customers').values({ id: bad, name: 'x' }).execute(), {
      code: '22P02',
    })
  }
  assert.equal((await client.query('SELECT count(*)::int AS n FROM customers')).rows[0].n, 0)
})

test('overloads planted by the database owner catch nothing the helpers send', async () => {
  await clear()
  const result = await withPlantedOverloads(config, async (superuser) => {
    const customer = (await superuser.query("INSERT INTO customers (name) VALUES ('superuser') RETURNING id")).rows[0]
    const q = db
      .insertInto('orders')
      .values({ id: genObjectIdAt(T0), customer_id: customer.id, total: 1 })
      .returning('id')
      .compile()
    const made = (await superuser.query(q.sql, q.parameters)).rows[0]
    assert.deepEqual(ObjectId.createFromHexString(made.id).getTimestamp(), T0)
    const t = db.selectFrom('orders').select(objectIdTimestamp('orders.id').as('t')).where(objectIdTimestamp('orders.id'), '>=', T0).compile()
    assert.equal((await superuser.query(t.sql, t.parameters)).rows.length, 1)
  })
  assert.deepEqual(result, { calls: 0, rolsuper: false })
})

test('the migration reverses and applies again', async () => {
  const down = await migrator.migrateDown()
  assert.equal(down.error, undefined)
  const { rows } = await client.query(
    "SELECT to_regclass('orders') AS t, (SELECT count(*)::int FROM pg_extension WHERE extname = 'pg_objectid') AS n"
  )
  assert.deepEqual(rows, [{ t: null, n: 0 }])
  const up = await migrator.migrateToLatest()
  assert.equal(up.error, undefined)
  const customer = await db.insertInto('customers').values({ name: 'again' }).returning('id').executeTakeFirstOrThrow()
  assert.match(customer.id, /^[0-9a-f]{24}$/)
})
