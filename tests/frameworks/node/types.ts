// The TypeScript declarations of integrations/node (index.d.ts) against drizzle-orm's and kysely's
// own types: scripts/clients_test.sh type-checks this file with `tsc --noEmit` (strict), with the
// two packages installed beside the pinned ones as an application would have them. It is never
// run; the lines marked @ts-expect-error must fail to type-check, so that `any` cannot pass.
import type { ObjectId } from 'bson'
import { between, eq, gte } from 'drizzle-orm'
import type { NodePgDatabase } from 'drizzle-orm/node-postgres'
import { numeric, pgTable, text, uuid } from 'drizzle-orm/pg-core'
import { type Generated, Kysely, PostgresDialect } from 'kysely'
import { Pool } from 'pg'
import { genObjectId, genObjectIdAt, hexOf, objectId, objectIdString, objectIdTimestamp, uuidv7 } from 'pg-objectid-drizzle'
import {
  createObjectIdExtension,
  genObjectId as kyselyGenObjectId,
  objectIdTimestamp as kyselyObjectIdTimestamp,
  ObjectIdPlugin,
  objectIdType,
} from 'pg-objectid-kysely'

// Drizzle: the column types carry ObjectId and string.
const orders = pgTable('orders', {
  id: objectId('id').primaryKey().default(genObjectId()),
  parcel: objectIdString('parcel').notNull(),
  total: numeric('total').notNull(),
  reference: uuid('reference').notNull().default(uuidv7()),
  note: text('note'),
})
type Order = typeof orders.$inferSelect
type NewOrder = typeof orders.$inferInsert
export const id: ObjectId = ({} as Order).id
export const parcel: string = ({} as Order).parcel
// @ts-expect-error an objectid column is not a number
export const wrong: number = ({} as Order).id
export const insert: NewOrder = { parcel: '507f1f77bcf86cd799439011', total: '1' }

export async function drizzleQueries(db: NodePgDatabase, since: Date, until: Date, key: ObjectId) {
  const rows = await db.select().from(orders).where(gte(objectIdTimestamp(orders.id), since))
  const first: ObjectId | undefined = rows[0]?.id
  const created = await db.select({ created: objectIdTimestamp(orders.id) }).from(orders).where(eq(orders.id, key))
  const when: Date | undefined = created[0]?.created
  await db.select().from(orders).where(between(objectIdTimestamp(orders.id), since, until))
  await db.insert(orders).values({ id: genObjectIdAt(since), parcel: hexOf(key) ?? '', total: '2' })
  return [first, when]
}

// Kysely: the helpers fit the schema builder and the query builder.
interface Database {
  orders: { id: Generated<string>; total: string }
}
export async function kyselyQueries(since: Date) {
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new Pool() }), plugins: [new ObjectIdPlugin()] })
  await createObjectIdExtension(db)
  await db.schema
    .createTable('orders')
    .addColumn('id', objectIdType, (c) => c.primaryKey().defaultTo(kyselyGenObjectId()))
    .execute()
  const rows = await db.selectFrom('orders').select('id').where(kyselyObjectIdTimestamp('orders.id'), '>=', since).execute()
  const key: string | undefined = rows[0]?.id
  const created = await db.selectFrom('orders').select(kyselyObjectIdTimestamp('orders.id').as('created')).execute()
  const when: Date | undefined = created[0]?.created
  return [key, when]
}
