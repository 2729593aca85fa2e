/**
 * The change events `watch()` yields, typed as the official driver types them: a union
 * discriminated by `operationType`, so `if (change.operationType === 'insert')` narrows to an event
 * whose `fullDocument` is the schema's document (always there), and `'update'` to one with an
 * `updateDescription`. Application code written against the official driver's
 * `ChangeStreamDocument<TSchema>` then compiles unchanged. The shapes are the official driver's
 * (mongodb/node-mongodb-native `src/change_stream.ts`, Apache License 2.0); the values are what the
 * server sends, decoded as every document is.
 * @module
 */
import type { Binary, Document, Timestamp } from 'bson'
import type { ServerSessionId } from '../session.js'
import type { InferIdType } from './filter.js'

/** The logical point a change stream starts or resumes at: an event's `_id` or a batch's token. */
export type ResumeToken = unknown

/** The database and collection of an event. */
export interface ChangeStreamNameSpace {
  db: string
  coll: string
}

/** Which fragment of a large event split by `$changeStreamSplitLargeEvent` this is. */
export interface ChangeStreamSplitEvent {
  fragment: number
  of: number
}

/** The fields every event has. */
export interface ChangeStreamDocumentCommon {
  /** The event's resume token. */
  _id: ResumeToken
  clusterTime?: Timestamp
  txnNumber?: number
  lsid?: ServerSessionId
  splitEvent?: ChangeStreamSplitEvent
}

/** The changed document's `_id` (and shard key) in a data event. */
export interface ChangeStreamDocumentKey<TSchema extends Document = Document> {
  documentKey: { _id: InferIdType<TSchema>; [shardKey: string]: any }
}

export interface ChangeStreamDocumentCollectionUUID {
  collectionUUID: Binary
}

export interface ChangeStreamDocumentOperationDescription {
  operationDescription?: Document
}

export interface ChangeStreamDocumentWallTime {
  wallTime?: Date
}

/** What an update changed. */
export interface UpdateDescription<TSchema extends Document = Document> {
  updatedFields?: Partial<TSchema>
  removedFields?: string[]
  truncatedArrays?: Array<{ field: string; newSize: number }>
  disambiguatedPaths?: Document
}

export interface ChangeStreamInsertDocument<TSchema extends Document = Document>
  extends
    ChangeStreamDocumentCommon,
    ChangeStreamDocumentKey<TSchema>,
    ChangeStreamDocumentCollectionUUID,
    ChangeStreamDocumentWallTime {
  operationType: 'insert'
  fullDocument: TSchema
  ns: ChangeStreamNameSpace
}

export interface ChangeStreamUpdateDocument<TSchema extends Document = Document>
  extends
    ChangeStreamDocumentCommon,
    ChangeStreamDocumentKey<TSchema>,
    ChangeStreamDocumentCollectionUUID,
    ChangeStreamDocumentWallTime {
  operationType: 'update'
  /** With `fullDocument: 'updateLookup'` (or a post-image option). */
  fullDocument?: TSchema
  updateDescription: UpdateDescription<TSchema>
  ns: ChangeStreamNameSpace
  fullDocumentBeforeChange?: TSchema
}

export interface ChangeStreamReplaceDocument<TSchema extends Document = Document>
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentKey<TSchema>, ChangeStreamDocumentWallTime {
  operationType: 'replace'
  fullDocument: TSchema
  ns: ChangeStreamNameSpace
  fullDocumentBeforeChange?: TSchema
}

export interface ChangeStreamDeleteDocument<TSchema extends Document = Document>
  extends
    ChangeStreamDocumentCommon,
    ChangeStreamDocumentKey<TSchema>,
    ChangeStreamDocumentCollectionUUID,
    ChangeStreamDocumentWallTime {
  operationType: 'delete'
  ns: ChangeStreamNameSpace
  fullDocumentBeforeChange?: TSchema
}

export interface ChangeStreamDropDocument
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentCollectionUUID, ChangeStreamDocumentWallTime {
  operationType: 'drop'
  ns: ChangeStreamNameSpace
}

export interface ChangeStreamRenameDocument
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentCollectionUUID, ChangeStreamDocumentWallTime {
  operationType: 'rename'
  to: { db: string; coll: string }
  ns: ChangeStreamNameSpace
}

export interface ChangeStreamDropDatabaseDocument
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentWallTime {
  operationType: 'dropDatabase'
  ns: { db: string }
}

export interface ChangeStreamInvalidateDocument
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentWallTime {
  operationType: 'invalidate'
}

/** The DDL events below come with `showExpandedEvents: true`. */
export interface ChangeStreamCreateIndexDocument
  extends
    ChangeStreamDocumentCommon,
    ChangeStreamDocumentCollectionUUID,
    ChangeStreamDocumentOperationDescription,
    ChangeStreamDocumentWallTime {
  operationType: 'createIndexes'
}

export interface ChangeStreamDropIndexDocument
  extends
    ChangeStreamDocumentCommon,
    ChangeStreamDocumentCollectionUUID,
    ChangeStreamDocumentOperationDescription,
    ChangeStreamDocumentWallTime {
  operationType: 'dropIndexes'
}

export interface ChangeStreamCollModDocument
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentCollectionUUID, ChangeStreamDocumentWallTime {
  operationType: 'modify'
}

export interface ChangeStreamCreateDocument
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentCollectionUUID, ChangeStreamDocumentWallTime {
  operationType: 'create'
  nsType?: 'collection' | 'timeseries' | 'view'
}

export interface ChangeStreamShardCollectionDocument
  extends
    ChangeStreamDocumentCommon,
    ChangeStreamDocumentCollectionUUID,
    ChangeStreamDocumentOperationDescription,
    ChangeStreamDocumentWallTime {
  operationType: 'shardCollection'
}

export interface ChangeStreamReshardCollectionDocument
  extends
    ChangeStreamDocumentCommon,
    ChangeStreamDocumentCollectionUUID,
    ChangeStreamDocumentOperationDescription {
  operationType: 'reshardCollection'
}

export interface ChangeStreamRefineCollectionShardKeyDocument
  extends
    ChangeStreamDocumentCommon,
    ChangeStreamDocumentCollectionUUID,
    ChangeStreamDocumentOperationDescription {
  operationType: 'refineCollectionShardKey'
}

/** A change event: one of the kinds above, told apart by `operationType`. */
export type ChangeStreamDocument<TSchema extends Document = Document> =
  | ChangeStreamInsertDocument<TSchema>
  | ChangeStreamUpdateDocument<TSchema>
  | ChangeStreamReplaceDocument<TSchema>
  | ChangeStreamDeleteDocument<TSchema>
  | ChangeStreamDropDocument
  | ChangeStreamRenameDocument
  | ChangeStreamDropDatabaseDocument
  | ChangeStreamInvalidateDocument
  | ChangeStreamCreateIndexDocument
  | ChangeStreamCreateDocument
  | ChangeStreamCollModDocument
  | ChangeStreamDropIndexDocument
  | ChangeStreamShardCollectionDocument
  | ChangeStreamReshardCollectionDocument
  | ChangeStreamRefineCollectionShardKeyDocument
