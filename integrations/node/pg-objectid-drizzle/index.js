'use strict'
// Drizzle ORM (node-postgres or postgres.js) and pg_objectid: an `objectid` column type, the
// server-side defaults, and the creation time of an id as a query expression.
//
//   const { objectId, genObjectId, objectIdTimestamp } = require('pg-objectid-drizzle')
//   const orders = pgTable('orders', { id: objectId('id').primaryKey().default(genObjectId()) })
//   db.select().from(orders).where(gte(objectIdTimestamp(orders.id), since))
const { sql } = require('drizzle-orm')
const { customType } = require('drizzle-orm/pg-core')

const HEX24 = /^[0-9a-fA-F]{24}$/

// The 24 lowercase hex digits of a bson ObjectId, a 24-hex string or 12 bytes; null otherwise.
function hexOf(value) {
  if (typeof value === 'string') return HEX24.test(value) ? value.toLowerCase() : null
  if (value instanceof Uint8Array) return value.length === 12 ? Buffer.from(value).toString('hex') : null
  // bson's ObjectId, recognised by its shape so that any copy of the bson package will do.
  if (value && typeof value.toHexString === 'function' && value.id instanceof Uint8Array && value.id.length === 12) {
    return value.toHexString()
  }
  return null
}

function toText(value) {
  const hex = hexOf(value)
  if (hex === null) {
    throw new TypeError(`invalid ObjectId: ${JSON.stringify(String(value))} (24 hexadecimal digits or 12 bytes)`)
  }
  return hex
}

// An `objectid` column whose values are read by `read` from their 24 hex digits; either form, or
// 12 bytes, may be written. Parameters go to the server as text, which its input function reads.
// customType's callbacks get no column configuration, so each reading is its own type.
const objectIdColumn = (read) =>
  customType({
    dataType() {
      return 'objectid'
    },
    toDriver(value) {
      return toText(value)
    },
    fromDriver(value) {
      const hex = hexOf(value)
      if (hex === null) throw new TypeError(`unexpected objectid value from the database: ${String(value)}`)
      return read(hex)
    },
  })

// Read as bson ObjectIds.
const objectId = objectIdColumn((hex) => require('bson').ObjectId.createFromHexString(hex))
// Read as 24-hex strings.
const objectIdString = objectIdColumn((hex) => hex)

// `DEFAULT gen_objectid()`: the server-wide generator makes the key.
const genObjectId = () => sql`gen_objectid()`
// `DEFAULT uuidv7()`, for uuid columns: PostgreSQL 18's own, pg_objectid's on 13-17.
const uuidv7 = () => sql`uuidv7()`
// `gen_objectid_at(t)`: a new unique id carrying time t, for backfills and imports.
const genObjectIdAt = (when) => sql`gen_objectid_at(${when}::timestamptz)`

// `objectid_timestamp(col)`: the id's creation time. Compared with a time (gte, lt, between),
// pg_objectid's planner answers it from the column's index.
// The argument is cast, so that exactly objectid_timestamp(objectid) is called even for a value;
// a column's cast to its own type adds nothing to the plan.
const objectIdTimestamp = (column) => sql`objectid_timestamp((${column})::objectid)`.mapWith((v) => new Date(v))

module.exports = { objectId, objectIdString, genObjectId, genObjectIdAt, uuidv7, objectIdTimestamp, hexOf }
