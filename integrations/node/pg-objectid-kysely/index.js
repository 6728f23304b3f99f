'use strict'
// Kysely (PostgresDialect, node-postgres) and pg_objectid: the column type and defaults for the
// schema builder and migrations, the creation time of an id as a query expression, and a plugin
// that sends bson ObjectIds as the text the server reads.
//
//   const { objectIdType, genObjectId, objectIdTimestamp, ObjectIdPlugin } = require('pg-objectid-kysely')
//   await db.schema.createTable('orders')
//     .addColumn('id', objectIdType, (c) => c.primaryKey().defaultTo(genObjectId())).execute()
//   db.selectFrom('orders').selectAll().where(objectIdTimestamp('orders.id'), '>=', since)
const { OperationNodeTransformer, sql } = require('kysely')

// The column type, for addColumn / alterColumn: `objectid`.
const objectIdType = sql`objectid`
// `DEFAULT gen_objectid()`: the server-wide generator makes the key.
const genObjectId = () => sql`gen_objectid()`
// `DEFAULT uuidv7()`, for uuid columns: PostgreSQL 18's own, pg_objectid's on 13-17.
const uuidv7 = () => sql`uuidv7()`
// `gen_objectid_at(t)`: a new unique id carrying time t, for backfills and imports.
const genObjectIdAt = (when) => sql`gen_objectid_at(${when}::timestamptz)`
// `objectid_timestamp(col)`: the id's creation time. Compared with a time, pg_objectid's planner
// answers it from the column's index. `column` is a reference such as 'orders.id'.
const objectIdTimestamp = (column) => sql`objectid_timestamp(${sql.ref(column)}::objectid)`

// For migrations: pg_objectid is trusted, so the database's owner may create it.
const createObjectIdExtension = (db) => sql`CREATE EXTENSION IF NOT EXISTS pg_objectid`.execute(db)
const dropObjectIdExtension = (db) => sql`DROP EXTENSION IF EXISTS pg_objectid`.execute(db)

// bson's ObjectId, recognised by its shape so that any copy of the bson package will do.
function isObjectId(value) {
  return Boolean(value) && typeof value.toHexString === 'function' && value.id instanceof Uint8Array && value.id.length === 12
}

// An ObjectId as its hex; an array (of any depth, as node-postgres sends nested arrays) with its
// ObjectIds converted; anything else unchanged.
function toHex(value) {
  if (isObjectId(value)) return value.toHexString()
  if (Array.isArray(value) && value.some((v) => isObjectId(v) || Array.isArray(v))) return value.map(toHex)
  return value
}

// Replaces every ObjectId among a query's values with its 24 hex digits: node-postgres would
// otherwise send the object as JSON.
class ObjectIdTransformer extends OperationNodeTransformer {
  transformValue(node) {
    const value = toHex(node.value)
    return value !== node.value ? { ...node, value } : super.transformValue(node)
  }

  // Insert rows and `in` lists: each value, arrays included (an objectid[] column's value).
  transformPrimitiveValueList(node) {
    return super.transformPrimitiveValueList({ ...node, values: node.values.map(toHex) })
  }
}

class ObjectIdPlugin {
  transformQuery(args) {
    return new ObjectIdTransformer().transformNode(args.node)
  }

  async transformResult(args) {
    return args.result
  }
}

module.exports = {
  objectIdType,
  genObjectId,
  genObjectIdAt,
  uuidv7,
  objectIdTimestamp,
  createObjectIdExtension,
  dropObjectIdExtension,
  ObjectIdPlugin,
}
