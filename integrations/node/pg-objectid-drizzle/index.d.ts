// Types of pg-objectid-drizzle (index.js), checked against drizzle-orm's by tests/frameworks/node.
import type { ObjectId } from 'bson'
import type { AnyColumn, SQL } from 'drizzle-orm'
import type { customType } from 'drizzle-orm/pg-core'

/** An `objectid` column read as a bson ObjectId; an ObjectId, 24 hex digits or 12 bytes may be written. */
export declare const objectId: ReturnType<typeof customType<{ data: ObjectId; driverData: string }>>
/** An `objectid` column read as its 24 lowercase hex digits. */
export declare const objectIdString: ReturnType<typeof customType<{ data: string; driverData: string }>>
/** `gen_objectid()`, for `.default(...)`. */
export declare function genObjectId(): SQL<unknown>
/** `gen_objectid_at(t)`: a new unique id carrying time t. */
export declare function genObjectIdAt(when: Date | SQL<unknown>): SQL<unknown>
/** `uuidv7()`, for a uuid column's `.default(...)`. */
export declare function uuidv7(): SQL<unknown>
/** `objectid_timestamp(col)`: the id's creation time, whole seconds. */
export declare function objectIdTimestamp(column: AnyColumn | SQL<unknown>): SQL<Date>
/** The 24 lowercase hex digits of an ObjectId, 24-hex string or 12 bytes; null for anything else. */
export declare function hexOf(value: unknown): string | null
