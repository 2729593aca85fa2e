/**
 * rumongo: the MongoDB read path for Node.js. Same API and results as the official driver's
 * read operations; BSON is fetched and split into batches in Rust.
 * @module
 */
export { MongoClient, type MongoClientOptions } from './mongo_client.js'
export { AuthMechanism } from './auth.js'
export { CursorTimeoutMode } from './options.js'
export { Db, type DbOptions, type DbStatsOptions, type ListCollectionsOptions } from './db.js'
export { Admin, type ListDatabasesOptions } from './admin.js'
export {
  ChangeStream,
  type ChangeStreamDocument,
  type ChangeStreamEvents,
  type ChangeStreamOptions,
  type OperationTime,
  type ResumeToken,
} from './change_stream.js'
export type {
  ChangeStreamCollModDocument,
  ChangeStreamCreateDocument,
  ChangeStreamCreateIndexDocument,
  ChangeStreamDeleteDocument,
  ChangeStreamDocumentCollectionUUID,
  ChangeStreamDocumentCommon,
  ChangeStreamDocumentKey,
  ChangeStreamDocumentOperationDescription,
  ChangeStreamDocumentWallTime,
  ChangeStreamDropDatabaseDocument,
  ChangeStreamDropDocument,
  ChangeStreamDropIndexDocument,
  ChangeStreamInsertDocument,
  ChangeStreamInvalidateDocument,
  ChangeStreamNameSpace,
  ChangeStreamRefineCollectionShardKeyDocument,
  ChangeStreamRenameDocument,
  ChangeStreamReplaceDocument,
  ChangeStreamReshardCollectionDocument,
  ChangeStreamShardCollectionDocument,
  ChangeStreamSplitEvent,
  ChangeStreamUpdateDocument,
  UpdateDescription,
} from './types/change_stream_document.js'
export {
  CommandCursor,
  ListCollectionsCursor,
  ListIndexesCursor,
  type CommandCursorOptions,
  type RunCommandOptions,
} from './commands.js'
export { Compressor, HostAddress, type CompressorName } from './client_options.js'
export {
  ClientSession,
  type ClientSessionOptions,
  type ClusterTime,
  type ServerSessionId,
} from './session.js'
export type { OIDCCallbackFunction, OIDCCallbackParams, OIDCResponse } from './auth.js'
export { MongoDBNamespace } from './namespace.js'
export type { ExplainCommandOptions } from './explain.js'
export type { InheritableOptions } from './inherit.js'
export {
  ExplainVerbosity,
  ReadConcern,
  ReadConcernLevel,
  ReadPreference,
  ReadPreferenceMode,
  ServerApiVersion,
  type ExplainVerbosityLike,
  type ReadPreferenceOptions,
  type ServerApi,
} from './read_preference.js'
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
  type CountOptions,
  type Filter,
  type ListIndexesOptions,
  type FindCursorOptions,
  type WithId,
} from './collection.js'
export type {
  AlternativeType,
  BitwiseFilter,
  BSONTypeAlias,
  Condition,
  EnhancedOmit,
  FilterOperators,
  Flatten,
  InferIdType,
  NonObjectIdLikeDocument,
  RegExpOrString,
  RootFilterOperators,
} from './types/filter.js'
export type { JsonFormat, JsonOptions, PipeJsonResult } from './json.js'
export {
  AbstractCursor,
  CURSOR_FLAGS,
  type AbstractCursorEvents,
  type CursorFlag,
} from './cursor/abstract_cursor.js'
export {
  ArrowCursor,
  type AggregateArrowOptions,
  type ArrowCursorOptions,
  type FindArrowOptions,
  type PipeArrowResult,
} from './cursor/arrow_cursor.js'
export type { ArrowOptions, ArrowSchemaSpec, ArrowTypeName, ArrowTypeSpec } from './format/arrow.js'
export { FindCursor } from './cursor/find_cursor.js'
export { AggregationCursor } from './cursor/aggregation_cursor.js'
export { isLazyDocument, materialize, type LazyDocument } from './format/lazy.js'
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
} from './pool/pool.js'
export { Model, type ModelOptions, type SanitizeFilterOptions } from './model/model.js'
export { ModelQuery, type ModelFindOptions, type ModelPromise } from './model/query.js'
export type { ModelFields, Selection } from './model/selection.js'
export type { MongooseModelLike } from './model/mongoose.js'
export type { ModelDocument, MongooseLeanDocument, MongooseRawDocType } from './types/model.js'
export type {
  AggregateOptions,
  CollationOptions,
  CountDocumentsOptions,
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
  MongoArrowTypeMismatchError,
  MongoAWSError,
  MongoAzureError,
  MongoClientClosedError,
  MongoCompatibilityError,
  MongoCursorExhaustedError,
  MongoCursorInUseError,
  MongoDecompressionError,
  MongoDriverError,
  MongoError,
  MongoErrorLabel,
  MongoExpiredSessionError,
  MongoGCPError,
  MongoInvalidArgumentError,
  MongoKerberosError,
  MongoMissingCredentialsError,
  MongoMissingDependencyError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoNotConnectedError,
  MongoOIDCError,
  MongoOperationTimeoutError,
  MongoParseError,
  MongoRuntimeError,
  MongoChangeStreamError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoStalePrimaryError,
  MongoSystemError,
  MongoTailableCursorError,
  MongoTopologyClosedError,
  MongoTransactionError,
  MongoUnexpectedServerResponseError,
  MongoWorkerPoolError,
  TopologyDescription,
  TopologyType,
  ServerType,
  type MongoErrorOptions,
  type ServerDescription,
} from './errors.js'
// The BSON types results are made of, from the same `bson` package the official driver uses.
export {
  BSON,
  BSONError,
  BSONType,
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
export { mongoosePlugin, type MongoosePlugin, type MongoosePluginOptions } from './mongoose/plugin.js'
export type { MongooseFallback, MongooseFallbackReason, MongoosePluginStats } from './mongoose/stats.js'
