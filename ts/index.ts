/**
 * rumongo: the MongoDB read path for Node.js. Same API and results as the official driver's
 * read operations; BSON is fetched and split into batches in Rust.
 * @module
 */
export { MongoClient, Db, type MongoClientOptions } from './mongo_client.js'
export {
  CommandFailedEvent,
  CommandStartedEvent,
  CommandSucceededEvent,
  ConnectionCheckedInEvent,
  ConnectionCheckedOutEvent,
  ConnectionCheckOutFailedEvent,
  ConnectionCheckOutStartedEvent,
  ConnectionClosedEvent,
  ConnectionCreatedEvent,
  ConnectionPoolClearedEvent,
  ConnectionPoolClosedEvent,
  ConnectionPoolCreatedEvent,
  ConnectionPoolMonitoringEvent,
  ConnectionPoolReadyEvent,
  ConnectionReadyEvent,
  ServerClosedEvent,
  ServerDescriptionChangedEvent,
  ServerHeartbeatFailedEvent,
  ServerHeartbeatStartedEvent,
  ServerHeartbeatSucceededEvent,
  ServerOpeningEvent,
  TopologyClosedEvent,
  TopologyDescriptionChangedEvent,
  TopologyOpeningEvent,
  TypedEventEmitter,
  type CommonEvents,
  type EventsDescription,
  type GenericListener,
  type MongoClientEvents,
  type MonitoringEventName,
} from './events.js'
export {
  Collection,
  type CollectionOptions,
  type Filter,
  type FindCursorOptions,
  type WithId,
} from './collection.js'
export type { JsonFormat, JsonOptions, PipeJsonResult } from './json.js'
export { AbstractCursor } from './cursor/abstract_cursor.js'
export { FindCursor } from './cursor/find_cursor.js'
export { AggregationCursor } from './cursor/aggregation_cursor.js'
export { isLazyDocument, materialize, type LazyDocument } from './lazy.js'
export {
  firstDifference,
  shadow,
  ShadowCollection,
  ShadowCursor,
  type CompareOptions,
  type Difference,
  type DifferenceReason,
  type ShadowableCollection,
  type ShadowableCursor,
  type ShadowErrorReport,
  type ShadowLatency,
  type ShadowMismatchReport,
  type ShadowOperation,
  type ShadowOptions,
  type ShadowQuery,
  type ShadowSide,
  type ShadowStats,
} from './shadow.js'
export {
  WorkerPool,
  type PoolReduceOptions,
  type ReduceFunction,
  type WorkerPoolCloseOptions,
  type WorkerPoolOptions,
} from './worker_pool.js'
export {
  Model,
  ModelQuery,
  type ModelFields,
  type ModelFindOptions,
  type ModelOptions,
  type ModelPromise,
  type MongooseModelLike,
  type SanitizeFilterOptions,
  type Selection,
} from './model.js'
export type {
  AggregateOptions,
  CollationOptions,
  CountDocumentsOptions,
  CursorTimeoutMode,
  DistinctOptions,
  EstimatedDocumentCountOptions,
  FindOptions,
  Hint,
  ReadConcernLike,
  ReadOperationOptions,
  ReadPreferenceLike,
  Sort,
  SortDirection,
} from './options.js'
export type { BSONDeserializeOptions, BSONOptions, BSONSerializeOptions } from './bson.js'
export {
  ErrorCode,
  MongoAPIError,
  MongoCursorExhaustedError,
  MongoCursorInUseError,
  MongoDriverError,
  MongoError,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoParseError,
  MongoRuntimeError,
  MongoServerError,
  MongoServerSelectionError,
  MongoSystemError,
  MongoWorkerPoolError,
  TopologyDescription,
  type MongoErrorOptions,
  type ServerDescription,
} from './errors.js'
// The BSON types results are made of, from the same `bson` package the official driver uses.
export {
  BSON,
  BSONError,
  BSONRegExp,
  BSONSymbol,
  Binary,
  Code,
  DBRef,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  UUID,
  type Document,
} from 'bson'
