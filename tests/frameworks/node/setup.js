'use strict'
// What the framework tests share: the server of $PG_OBJECTID_CLIENTS_DSN, a fresh database owned
// by a role that is not a superuser (as an application's is), EXPLAIN with sequential scans
// priced out, and the times the tests' ids carry.
const pg = require('pg')

const dsn = process.env.PG_OBJECTID_CLIENTS_DSN
const files = process.env.PG_OBJECTID_FRAMEWORK_FILES
if (!dsn || !files) {
  throw new Error('PG_OBJECTID_CLIENTS_DSN or PG_OBJECTID_FRAMEWORK_FILES is not set: run this through scripts/clients_test.sh')
}
// The libpq keyword string the other tests use ("host=… port=… user=…"), as pg's config.
const server = Object.fromEntries(dsn.trim().split(/\s+/).map((kv) => kv.split('=')))

async function freshDatabase(db, role) {
  const admin = new pg.Client({ ...server, database: 'postgres' })
  await admin.connect()
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`)
    await admin.query(`DROP ROLE IF EXISTS ${role}`)
    // A session time zone that is not UTC: a time that loses its zone on the way shows.
    await admin.query(`CREATE ROLE ${role} LOGIN`)
    await admin.query(`ALTER ROLE ${role} SET timezone = 'Asia/Tokyo'`)
    await admin.query(`CREATE DATABASE ${db} OWNER ${role} TEMPLATE template0`)
  } finally {
    await admin.end()
  }
  return { host: server.host, port: Number(server.port), user: role, database: db }
}

// EXPLAIN of a statement with sequential scans priced out: an index the condition cannot use
// still leaves a Seq Scan.
async function explain(client, text, values) {
  await client.query('SET enable_seqscan = off')
  try {
    const { rows } = await client.query(`EXPLAIN ${text}`, values)
    return rows.map((r) => r['QUERY PLAN']).join('\n')
  } finally {
    await client.query('RESET enable_seqscan')
  }
}

// (type, default) of a column, from the catalogs.
async function column(client, table, name) {
  const { rows } = await client.query(
    `SELECT format_type(a.atttypid, a.atttypmod) AS type, pg_get_expr(d.adbin, d.adrelid) AS def
       FROM pg_attribute a LEFT JOIN pg_attrdef d ON (d.adrelid, d.adnum) = (a.attrelid, a.attnum)
      WHERE a.attrelid = $1::regclass AND a.attname = $2`,
    [table, name]
  )
  return rows[0]
}

// The attack on the helpers' arguments: the database's owner (the application's role, not a
// superuser) plants text-taking overloads of the functions they call; `run` then runs the
// application's queries as the server's superuser. Returns what the planted code did: the calls
// it recorded and whether the owner became a superuser.
async function withPlantedOverloads(config, run) {
  const owner = new pg.Client(config)
  await owner.connect()
  const superuser = new pg.Client({ ...config, user: server.user })
  await superuser.connect()
  try {
    await owner.query(`
      CREATE TABLE planted_calls (f text);
      CREATE FUNCTION public.gen_objectid_at(text) RETURNS objectid LANGUAGE plpgsql AS $f$
      BEGIN INSERT INTO planted_calls VALUES ('gen_objectid_at'); ALTER ROLE ${config.user} SUPERUSER;
            RETURN NULL; END $f$;
      CREATE FUNCTION public.objectid_timestamp(text) RETURNS timestamptz LANGUAGE plpgsql AS $f$
      BEGIN INSERT INTO planted_calls VALUES ('objectid_timestamp'); ALTER ROLE ${config.user} SUPERUSER;
            RETURN NULL; END $f$;`)
    await run(superuser)
    const calls = (await owner.query('SELECT count(*)::int AS n FROM planted_calls')).rows[0].n
    const rolsuper = (await owner.query('SELECT rolsuper FROM pg_roles WHERE rolname = current_user')).rows[0].rolsuper
    return { calls, rolsuper }
  } finally {
    await owner.query(
      'DROP FUNCTION public.gen_objectid_at(text); DROP FUNCTION public.objectid_timestamp(text); DROP TABLE planted_calls'
    )
    await owner.end()
    await superuser.end()
  }
}

const T0 = new Date('2026-03-01T22:30:00Z')
const minutes = (n) => new Date(T0.getTime() + n * 60000)

module.exports = { server, files, freshDatabase, explain, column, withPlantedOverloads, T0, minutes }
