// Types of pg-objectid-kysely (index.js), checked against kysely's by tests/frameworks/node.
import type {
  Kysely,
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RawBuilder,
  RootOperationNode,
  UnknownRow,
} from 'kysely'

/** The column type `objectid`, for addColumn / alterColumn. */
export declare const objectIdType: RawBuilder<unknown>
/** `gen_objectid()`, for defaultTo(...). */
export declare function genObjectId(): RawBuilder<string>
/** `gen_objectid_at(t)`: a new unique id carrying time t. */
export declare function genObjectIdAt(when: Date): RawBuilder<string>
/** `uuidv7()`, for a uuid column's defaultTo(...). */
export declare function uuidv7(): RawBuilder<string>
/** `objectid_timestamp(col)`: the id's creation time, whole seconds; `column` as 'table.column'. */
export declare function objectIdTimestamp(column: string): RawBuilder<Date>
/** `CREATE EXTENSION IF NOT EXISTS pg_objectid`, for a migration's up(). */
export declare function createObjectIdExtension(db: Kysely<any>): Promise<QueryResult<unknown>>
/** `DROP EXTENSION IF EXISTS pg_objectid`, for a migration's down(). */
export declare function dropObjectIdExtension(db: Kysely<any>): Promise<QueryResult<unknown>>
/** Sends bson ObjectIds among a query's values as their 24 hex digits. */
export declare class ObjectIdPlugin implements KyselyPlugin {
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode
  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>>
}
