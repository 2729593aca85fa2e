//! The commands: the handshake, and cursors over the collections of database `bench`, with
//! mongod's batching rules. Anything this server cannot answer exactly is refused (BadValue),
//! never answered approximately.

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bson::raw::{cstr, CStr};
use bson::{rawdoc, DateTime, RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use crate::change_stream::{self, Stream};
use crate::compression::{self, Compressor};
use crate::datasets::{Collection, Pool, Projection};
use crate::generate::{index_of_object_id, label, LABEL_PERIOD};
use crate::wire::{
    begin_document, begin_element, end_document, write_string, ELEMENT_ARRAY, ELEMENT_DOCUMENT,
    ELEMENT_DOUBLE, ELEMENT_INT64, MAX_MESSAGE_BYTES,
};

/// The database that holds the collections.
const DATABASE: &str = "bench";
/// mongod's default first batch, in documents.
const DEFAULT_FIRST_BATCH: u64 = 101;

/// Command fields that change nothing in this server's answers.
const IGNORED_FIELDS: [&str; 13] = [
    "$db",
    "lsid",
    "$clusterTime",
    "$readPreference",
    "maxTimeMS",
    "comment",
    "readConcern",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "noCursorTimeout",
    "allowPartialResults",
    "allowDiskUse",
];

/// A command's failure, written as `{ ok: 0, errmsg, code, codeName }`.
struct CommandError {
    code: i32,
    code_name: &'static str,
    message: String,
}

fn bad_value(message: impl Into<String>) -> CommandError {
    CommandError {
        code: 2,
        code_name: "BadValue",
        message: message.into(),
    }
}

/// What a supported filter selects.
#[derive(Clone, Copy)]
enum Filter {
    /// `{}`: every document.
    All,
    /// `{ _id: <ObjectId> }` and `{ _id: { $in: [<ObjectId>...] } }`: the documents of the
    /// indexes `start..end`, or none when no ObjectId is a generated `_id` (only generated
    /// collections know their documents' indexes).
    Ids(Option<(u64, u64)>),
}

/// The documents a read selects, by index (natural order is `_id` order): `start..end`, where
/// `end` may run past the collection's end until [`Window::within`] clamps it. Filters, skips and
/// limits narrow it in the order they apply.
#[derive(Clone, Copy)]
struct Window {
    start: u64,
    end: u64,
}

impl Window {
    const ALL: Window = Window {
        start: 0,
        end: u64::MAX,
    };

    fn new(start: u64, end: u64) -> Window {
        Window {
            start: start.min(end),
            end,
        }
    }

    fn filter(self, filter: Filter) -> Window {
        match filter {
            Filter::All => self,
            Filter::Ids(Some((start, end))) => Window::new(self.start.max(start), self.end.min(end)),
            Filter::Ids(None) => Window::new(self.end, self.end),
        }
    }

    fn skip(self, count: u64) -> Window {
        Window::new(self.start.saturating_add(count), self.end)
    }

    fn limit(self, count: u64) -> Window {
        Window::new(self.start, self.end.min(self.start.saturating_add(count)))
    }

    /// The indexes selected in a collection of `count` documents.
    fn within(self, count: u64) -> Range<u64> {
        let end = self.end.min(count);
        self.start.min(end)..end
    }
}

/// `{ $group: { _id: <constant>, <name>: { $sum: <one> } } }`, what countDocuments sends: one
/// document `{ _id, <name>: <count> }`, and none when there is nothing to count, as in mongod.
struct CountStage<'a> {
    id: RawBsonRef<'a>,
    name: &'a CStr,
    /// `1` as an int32, int64 or double: the sum has that type (an int32 sum widens to int64).
    one: RawBsonRef<'a>,
}

impl CountStage<'_> {
    /// The stage's one output document for `count` input documents.
    fn result(&self, count: u64) -> RawDocumentBuf {
        let sum = match self.one {
            RawBsonRef::Int32(_) => i32::try_from(count).map_or(RawBson::Int64(count as i64), RawBson::Int32),
            RawBsonRef::Int64(_) => RawBson::Int64(count as i64),
            _ => RawBson::Double(count as f64),
        };
        let mut document = RawDocumentBuf::new();
        document.append(cstr!("_id"), self.id);
        document.append(self.name, sum);
        document
    }
}

/// What a find or aggregate reads: the documents of `window` in a collection.
struct Read<'a> {
    collection: &'a str,
    window: Window,
    /// The window was narrowed by an `_id` filter: a loaded collection cannot answer it.
    by_id: bool,
    projection: Option<Projection>,
    /// Count the selected documents instead of returning them.
    count: Option<CountStage<'a>>,
    first_batch: u64,
    /// Close the cursor after the first batch.
    single_batch: bool,
}

impl Read<'_> {
    fn new() -> Self {
        Read {
            collection: "",
            window: Window::ALL,
            by_id: false,
            projection: None,
            count: None,
            first_batch: DEFAULT_FIRST_BATCH,
            single_batch: false,
        }
    }

    fn filter(&mut self, filter: Filter) {
        self.window = self.window.filter(filter);
        self.by_id |= matches!(filter, Filter::Ids(_));
    }
}

/// An open cursor: documents `next..end` of `pool` are still to be returned.
struct Cursor {
    ns: String,
    pool: Arc<Pool>,
    next: u64,
    end: u64,
}

/// A cursor of the table: over documents, or a change stream's.
enum OpenCursor {
    Documents(Cursor),
    Changes(Stream),
}

impl OpenCursor {
    fn ns(&self) -> String {
        match self {
            OpenCursor::Documents(cursor) => cursor.ns.clone(),
            OpenCursor::Changes(stream) => stream.ns(),
        }
    }
}

/// Open cursors by id. A getMore takes its cursor out while it writes the batch (a second getMore
/// on the same id meanwhile sees CursorNotFound; mongod says CursorInUse) and gives it back after.
/// A killCursors that names a cursor in use kills it as mongod does: it is listed as killed and is
/// gone once that getMore ends, instead of coming back open when the getMore gives it back (a
/// client that closes a cursor while its getMore is in flight left it open here).
#[derive(Default)]
struct CursorTable {
    open: HashMap<i64, OpenCursor>,
    /// Cursors a getMore is using: true once a killCursors named one.
    in_use: HashMap<i64, bool>,
}

impl CursorTable {
    /// A new cursor, open.
    fn insert(&mut self, id: i64, cursor: OpenCursor) {
        self.open.insert(id, cursor);
    }

    /// The open cursor `id`, in use until `give_back`.
    fn take(&mut self, id: i64) -> Option<OpenCursor> {
        let cursor = self.open.remove(&id)?;
        self.in_use.insert(id, false);
        Some(cursor)
    }

    /// Ends a getMore's use of cursor `id`: open again with `cursor` (none once exhausted), unless a
    /// killCursors killed it meanwhile.
    fn give_back(&mut self, id: i64, cursor: Option<OpenCursor>) {
        let killed = self.in_use.remove(&id).unwrap_or(false);
        if let (false, Some(cursor)) = (killed, cursor) {
            self.open.insert(id, cursor);
        }
    }

    /// Kills cursor `id`, open or in use; false if there is no such cursor.
    fn kill(&mut self, id: i64) -> bool {
        if self.open.remove(&id).is_some() {
            return true;
        }
        match self.in_use.get_mut(&id) {
            Some(killed) if !*killed => {
                *killed = true;
                true
            }
            _ => false,
        }
    }

    /// Open cursors, those in use included (mongod's `metrics.cursor.open.total`).
    fn len(&self) -> usize {
        self.open.len() + self.in_use.values().filter(|killed| !**killed).count()
    }
}

/// The shared state: collections (read-only) and open cursors, which like mongod's belong to no
/// connection.
pub struct Server {
    collections: HashMap<String, Collection>,
    cursors: Mutex<CursorTable>,
    next_cursor_id: AtomicI64,
    next_connection_id: AtomicI32,
    /// getMore commands received, reported by `serverStatus` as mongod does.
    get_mores: AtomicI64,
    /// Bytes through each compressor (`serverStatus().network.compression`).
    pub compression: compression::Stats,
}

/// What a listener answers `hello` as: a standalone (no `set`), or member `index` of a replica set
/// (member 0 its primary, the others secondaries).
#[derive(Clone, Debug, Default)]
pub struct Role {
    pub set: Option<Arc<ReplicaSet>>,
    pub index: usize,
}

/// A replica set of listeners of this process: every member serves the same collections.
#[derive(Debug)]
pub struct ReplicaSet {
    pub name: String,
    /// `host:port` of each member, the primary first.
    pub hosts: Vec<String>,
}

/// Runs the command of an OP_MSG, writing the reply body (or the error) to `out`. `compression`:
/// the compressor a hello negotiates (see `compression::negotiate`). Returns how long to wait
/// before sending the reply: a change stream's getMore that found no event waits its maxTimeMS.
pub fn run(
    server: &Server,
    role: &Role,
    connection_id: i32,
    compression: Option<Compressor>,
    body: &RawDocument,
    out: &mut Vec<u8>,
) -> Option<Duration> {
    let start = out.len();
    let mut wait = None;
    if let Err(error) = server.dispatch(role, connection_id, compression, body, out, &mut wait) {
        out.truncate(start);
        write_error(out, error);
    }
    wait
}

/// Runs the command of a legacy OP_QUERY: only the handshake, as mongod 6+ does.
pub fn run_legacy(
    role: &Role,
    connection_id: i32,
    compression: Option<Compressor>,
    namespace: &str,
    body: &RawDocument,
    out: &mut Vec<u8>,
) {
    match command_name(body) {
        Ok(name @ ("hello" | "isMaster" | "ismaster")) if namespace.ends_with(".$cmd") => {
            hello(role, connection_id, name, compression, out)
        }
        name => write_error(
            out,
            CommandError {
                code: 352,
                code_name: "UnsupportedOpQueryCommand",
                message: format!(
                    "Unsupported OP_QUERY command: {}. The client driver may require an upgrade.",
                    name.unwrap_or_default()
                ),
            },
        ),
    }
}

fn write_error(out: &mut Vec<u8>, error: CommandError) {
    let reply =
        rawdoc! { "ok": 0.0, "errmsg": error.message, "code": error.code, "codeName": error.code_name };
    out.extend_from_slice(reply.as_bytes());
}

fn write(out: &mut Vec<u8>, reply: RawDocumentBuf) -> Result<(), CommandError> {
    out.extend_from_slice(reply.as_bytes());
    Ok(())
}

/// The command name: the body's first key.
fn command_name(body: &RawDocument) -> Result<&str, CommandError> {
    match body.iter().next() {
        Some(Ok((name, _))) => Ok(name.as_str()),
        _ => Err(bad_value("empty command")),
    }
}

fn hello(role: &Role, connection_id: i32, name: &str, compression: Option<Compressor>, out: &mut Vec<u8>) {
    // isMaster answers with the legacy field name, hello with the current one.
    let primary = if name == "hello" {
        cstr!("isWritablePrimary")
    } else {
        cstr!("ismaster")
    };
    let mut reply = rawdoc! {
        primary: role.index == 0,
        "helloOk": true,
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "maxMessageSizeBytes": MAX_MESSAGE_BYTES as i32,
        "maxWriteBatchSize": 100_000,
        "localTime": DateTime::now(),
        "logicalSessionTimeoutMinutes": 30,
        "connectionId": connection_id,
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "readOnly": false,
        "ok": 1.0,
    };
    // A member answers as mongod in a replica set: its set, every member, the primary, itself.
    if let Some(set) = &role.set {
        let mut hosts = RawArrayBuf::new();
        for host in &set.hosts {
            hosts.push(host.as_str());
        }
        reply.append(cstr!("secondary"), role.index != 0);
        reply.append(cstr!("setName"), set.name.as_str());
        reply.append(cstr!("hosts"), hosts);
        reply.append(cstr!("primary"), set.hosts[0].as_str());
        reply.append(cstr!("me"), set.hosts[role.index].as_str());
    }
    // The compressor chosen from the client's list, as mongod answers it.
    if let Some(compressor) = compression {
        let mut chosen = RawArrayBuf::new();
        chosen.push(compressor.name());
        reply.append(cstr!("compression"), chosen);
    }
    out.extend_from_slice(reply.as_bytes());
}

/// A whole number argument: int32, int64 or an integral double, as mongod accepts.
fn integer(key: &str, value: RawBsonRef) -> Result<i64, CommandError> {
    match value {
        RawBsonRef::Int32(number) => Ok(number.into()),
        RawBsonRef::Int64(number) => Ok(number),
        RawBsonRef::Double(number) if number.fract() == 0.0 && number.abs() < 9e18 => Ok(number as i64),
        _ => Err(bad_value(format!("'{key}' must be a whole number"))),
    }
}

fn non_negative(key: &str, value: RawBsonRef) -> Result<u64, CommandError> {
    u64::try_from(integer(key, value)?).map_err(|_| bad_value(format!("'{key}' must not be negative")))
}

fn document<'a>(key: &str, value: RawBsonRef<'a>) -> Result<&'a RawDocument, CommandError> {
    value
        .as_document()
        .ok_or_else(|| bad_value(format!("'{key}' must be a document")))
}

fn string<'a>(key: &str, value: RawBsonRef<'a>) -> Result<&'a str, CommandError> {
    value
        .as_str()
        .ok_or_else(|| bad_value(format!("'{key}' must be a string")))
}

/// The filters this server answers exactly: `{}`, `{ _id: <ObjectId> }`, and `{ _id: { $in:
/// [<ObjectId>...] } }` whose generated `_id`s are consecutive documents (what `populate` sends
/// for children stored in order); natural order is `_id` order, as mongod returns an `$in` on
/// `_id` read through its index.
fn filter(key: &str, value: RawBsonRef) -> Result<Filter, CommandError> {
    let unsupported = || {
        bad_value(format!(
            "unsupported {key}: only {{}}, {{ _id: <ObjectId> }} and {{ _id: {{ $in: [<ObjectId>...] }} }} \
             of consecutive generated _ids are supported"
        ))
    };
    let mut fields = document(key, value)?.iter();
    match (fields.next(), fields.next()) {
        (None, _) => Ok(Filter::All),
        (Some(Ok((field, RawBsonRef::ObjectId(id)))), None) if field.as_str() == "_id" => Ok(Filter::Ids(
            index_of_object_id(id.bytes()).map(|index| (index, index.saturating_add(1))),
        )),
        (Some(Ok((field, RawBsonRef::Document(operator)))), None) if field.as_str() == "_id" => {
            let mut operators = operator.iter();
            let Some(Ok((name, RawBsonRef::Array(ids)))) = operators.next() else {
                return Err(unsupported());
            };
            if name.as_str() != "$in" || operators.next().is_some() {
                return Err(unsupported());
            }
            let mut indexes = Vec::new();
            for id in ids {
                match id {
                    // An ObjectId that is no generated _id matches no document.
                    Ok(RawBsonRef::ObjectId(id)) => indexes.extend(index_of_object_id(id.bytes())),
                    _ => return Err(unsupported()),
                }
            }
            indexes.sort_unstable();
            indexes.dedup();
            let (Some(&first), Some(&last)) = (indexes.first(), indexes.last()) else {
                return Ok(Filter::Ids(None));
            };
            if last - first + 1 != indexes.len() as u64 {
                return Err(unsupported());
            }
            Ok(Filter::Ids(Some((first, last.saturating_add(1)))))
        }
        _ => Err(unsupported()),
    }
}

/// The options of a pipeline's `$changeStream` first stage, if it has one; a change stream of
/// more stages is refused (the script has no other stage).
fn change_stream_stage(stages: &bson::RawArray) -> Result<Option<&RawDocument>, CommandError> {
    let mut stages = stages.into_iter();
    let first = stages
        .next()
        .and_then(Result::ok)
        .and_then(RawBsonRef::as_document);
    let Some(options) = first.and_then(|stage| stage.get_document("$changeStream").ok()) else {
        return Ok(None);
    };
    if first.is_some_and(|stage| stage.iter().count() != 1) || stages.next().is_some() {
        return Err(bad_value(
            "unsupported change stream pipeline: only a $changeStream stage alone is supported",
        ));
    }
    Ok(Some(options))
}

/// The `$group` of countDocuments' pipeline; anything else is refused.
fn count_stage(argument: RawBsonRef) -> Result<CountStage, CommandError> {
    let unsupported =
        || bad_value("unsupported $group: only { _id: <number or null>, <field>: { $sum: 1 } } is supported");
    let mut fields = document("$group", argument)?.iter();
    let (Some(Ok((id_key, id))), Some(Ok((name, accumulator))), None) =
        (fields.next(), fields.next(), fields.next())
    else {
        return Err(unsupported());
    };
    let mut operators = accumulator.as_document().into_iter().flat_map(RawDocument::iter);
    let (Some(Ok((operator, one))), None) = (operators.next(), operators.next()) else {
        return Err(unsupported());
    };
    let constant_id = matches!(
        id,
        RawBsonRef::Int32(_) | RawBsonRef::Int64(_) | RawBsonRef::Double(_) | RawBsonRef::Null
    );
    let plain_name = !name.as_str().starts_with('$') && !name.as_str().contains('.');
    if id_key.as_str() == "_id" && constant_id && plain_name && operator.as_str() == "$sum" && is_one(one) {
        Ok(CountStage { id, name, one })
    } else {
        Err(unsupported())
    }
}

fn is_one(value: RawBsonRef) -> bool {
    matches!(value, RawBsonRef::Int32(1) | RawBsonRef::Int64(1)) || value.as_f64() == Some(1.0)
}

/// Natural order is `_id` order, so `{}` and `{ _id: 1 }` are the sorts that need no work.
fn natural_sort(value: RawBsonRef) -> Result<(), CommandError> {
    let mut keys = document("sort", value)?.iter();
    match (keys.next(), keys.next()) {
        (None, _) => Ok(()),
        (Some(Ok((key, direction))), None) if key.as_str() == "_id" && is_one(direction) => Ok(()),
        _ => Err(bad_value(
            "unsupported sort: only {} and { _id: 1 } are supported",
        )),
    }
}

/// The only index is `_id`'s.
fn id_hint(value: RawBsonRef) -> Result<(), CommandError> {
    let id_index = match value {
        RawBsonRef::String(name) => name == "_id_",
        RawBsonRef::Document(key) => key.as_bytes() == rawdoc! { "_id": 1 }.as_bytes(),
        _ => false,
    };
    if id_index {
        Ok(())
    } else {
        Err(bad_value(
            "hint provided does not correspond to an existing index",
        ))
    }
}

/// A field `command` does not know is refused, unless it changes nothing in the answer.
fn unsupported(command: &str, key: &str) -> Result<(), CommandError> {
    if IGNORED_FIELDS.contains(&key) {
        Ok(())
    } else {
        Err(bad_value(format!("{command}: unsupported option '{key}'")))
    }
}

impl Server {
    pub fn new(collections: HashMap<String, Collection>) -> Server {
        Server {
            collections,
            cursors: Mutex::new(CursorTable::default()),
            next_cursor_id: AtomicI64::new(1),
            next_connection_id: AtomicI32::new(1),
            get_mores: AtomicI64::new(0),
            compression: compression::Stats::default(),
        }
    }

    pub fn next_connection_id(&self) -> i32 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }

    fn dispatch(
        &self,
        role: &Role,
        connection_id: i32,
        compression: Option<Compressor>,
        body: &RawDocument,
        out: &mut Vec<u8>,
        wait: &mut Option<Duration>,
    ) -> Result<(), CommandError> {
        let name = command_name(body)?;
        let db = body.get_str("$db").map_err(|_| bad_value("missing $db"))?;
        match name {
            "hello" | "isMaster" | "ismaster" => {
                hello(role, connection_id, name, compression, out);
                Ok(())
            }
            "buildInfo" | "buildinfo" => write(
                out,
                rawdoc! { "version": "7.0.0", "versionArray": [7, 0, 0, 0], "bits": 64, "ok": 1.0 },
            ),
            "ping" | "endSessions" => write(out, rawdoc! { "ok": 1.0 }),
            // The counters of mongod's serverStatus that tests read (cursors killed, batches fetched).
            "serverStatus" => {
                let open = self.cursors.lock().unwrap().len() as i64;
                let get_mores = self.get_mores.load(Ordering::Relaxed);
                write(
                    out,
                    rawdoc! { "metrics": {
                        "cursor": { "open": { "total": open } },
                        "commands": { "getMore": { "total": get_mores } },
                    }, "network": { "compression": self.compression.document() }, "ok": 1.0 },
                )
            }
            "find" => self.find(db, body, out),
            "getMore" => {
                self.get_mores.fetch_add(1, Ordering::Relaxed);
                self.get_more(db, body, out, wait)
            }
            "killCursors" => self.kill_cursors(body, out),
            "aggregate" => self.aggregate(role, db, body, out),
            "count" => self.count(db, body, out),
            "distinct" => self.distinct(db, body, out),
            "listCollections" => self.list_collections(db, body, out),
            _ => Err(CommandError {
                code: 59,
                code_name: "CommandNotFound",
                message: format!("no such command: '{name}'"),
            }),
        }
    }

    fn collection(&self, db: &str, name: &str) -> Option<&Collection> {
        if db == DATABASE {
            self.collections.get(name)
        } else {
            None
        }
    }

    /// The collection `name` (`None`: missing, which reads as an empty one, as in mongod) and the
    /// indexes `window` selects in it.
    fn select(
        &self,
        db: &str,
        name: &str,
        window: Window,
        by_id: bool,
    ) -> Result<(Option<&Collection>, Range<u64>), CommandError> {
        let collection = self.collection(db, name);
        if by_id && collection.is_some_and(|collection| collection.dataset.is_none()) {
            return Err(bad_value(
                "_id filters are supported on generated collections only",
            ));
        }
        let count = collection.map_or(0, |collection| collection.count);
        Ok((collection, window.within(count)))
    }

    /// Opens a cursor for `read` and writes its first batch.
    fn open_cursor(&self, db: &str, read: Read, out: &mut Vec<u8>) -> Result<(), CommandError> {
        let (collection, selected) = self.select(db, read.collection, read.window, read.by_id)?;
        let (pool, range) = match (&read.count, collection) {
            (Some(stage), _) => {
                let count = selected.end - selected.start;
                let pool = Pool::single(stage.result(count).as_bytes());
                (Arc::new(pool), 0..u64::from(count > 0))
            }
            (None, Some(collection)) => (
                collection.pool(read.projection.as_ref()).map_err(bad_value)?,
                selected,
            ),
            (None, None) => (Arc::new(Pool::empty()), 0..0),
        };
        let cursor = Cursor {
            ns: format!("{db}.{}", read.collection),
            pool,
            next: range.start,
            end: range.end,
        };
        let id = self.next_cursor_id.fetch_add(1, Ordering::Relaxed);
        let kept = self.write_batch(
            out,
            "firstBatch",
            cursor,
            read.first_batch,
            !read.single_batch,
            id,
        );
        if let Some(cursor) = kept {
            self.cursors.lock().unwrap().insert(id, cursor);
        }
        Ok(())
    }

    /// Writes `{ cursor: { <batch_key>: [...], id, ns }, ok: 1 }` with the cursor's next batch.
    /// A cursor with documents left is returned, to be kept under `id`, when `keep`; the reply's id
    /// is 0 otherwise.
    fn write_batch(
        &self,
        out: &mut Vec<u8>,
        batch_key: &str,
        mut cursor: Cursor,
        max_docs: u64,
        keep: bool,
        id: i64,
    ) -> Option<OpenCursor> {
        let reply = begin_document(out);
        begin_element(out, ELEMENT_DOCUMENT, "cursor");
        let body = begin_document(out);
        begin_element(out, ELEMENT_ARRAY, batch_key);
        let batch = begin_document(out);
        cursor.next = cursor.pool.write_batch(out, cursor.next, cursor.end, max_docs);
        end_document(out, batch);
        let kept = keep && cursor.next < cursor.end;
        let id = if kept { id } else { 0 };
        begin_element(out, ELEMENT_INT64, "id");
        out.extend_from_slice(&id.to_le_bytes());
        write_string(out, "ns", &cursor.ns);
        end_document(out, body);
        begin_element(out, ELEMENT_DOUBLE, "ok");
        out.extend_from_slice(&1.0f64.to_le_bytes());
        end_document(out, reply);
        kept.then_some(OpenCursor::Documents(cursor))
    }

    fn find(&self, db: &str, body: &RawDocument, out: &mut Vec<u8>) -> Result<(), CommandError> {
        let mut read = Read::new();
        // Applied in this order whatever the order of the fields.
        let (mut selection, mut skip, mut limit) = (Filter::All, 0, None);
        for element in body {
            let (key, value) = element.map_err(|error| bad_value(error.to_string()))?;
            let key = key.as_str();
            match key {
                "find" => read.collection = string(key, value)?,
                "filter" => selection = filter(key, value)?,
                "sort" => natural_sort(value)?,
                "hint" => id_hint(value)?,
                "projection" => {
                    read.projection = Projection::parse(document(key, value)?).map_err(bad_value)?
                }
                "skip" => skip = non_negative(key, value)?,
                "limit" => {
                    // A negative limit means one batch of at most that many (the legacy form).
                    let number = integer(key, value)?;
                    read.single_batch |= number < 0;
                    limit = Some(number.unsigned_abs()).filter(|&limit| limit > 0);
                }
                "batchSize" => read.first_batch = non_negative(key, value)?,
                "singleBatch" => read.single_batch |= value.as_bool() == Some(true),
                "tailable" | "awaitData" if value.as_bool() == Some(true) => {
                    return Err(bad_value("tailable cursors need a capped collection"))
                }
                "tailable" | "awaitData" => {}
                _ => unsupported("find", key)?,
            }
        }
        read.filter(selection);
        read.window = read.window.skip(skip);
        if let Some(limit) = limit {
            read.window = read.window.limit(limit);
        }
        self.open_cursor(db, read, out)
    }

    fn get_more(
        &self,
        db: &str,
        body: &RawDocument,
        out: &mut Vec<u8>,
        wait: &mut Option<Duration>,
    ) -> Result<(), CommandError> {
        let Ok(id) = body.get_i64("getMore") else {
            return Err(bad_value("getMore: the cursor id must be a long"));
        };
        let collection = body
            .get_str("collection")
            .map_err(|_| bad_value("getMore: 'collection' must be a string"))?;
        // No batchSize (or 0): as many documents as the byte cap allows.
        let max_docs = match body.get("batchSize").ok().flatten() {
            Some(value) => Some(non_negative("batchSize", value)?)
                .filter(|&size| size > 0)
                .unwrap_or(u64::MAX),
            None => u64::MAX,
        };
        // Taken out of the table while its batch is written: a concurrent getMore on the same id
        // sees CursorNotFound (mongod says CursorInUse).
        let Some(cursor) = self.cursors.lock().unwrap().take(id) else {
            return Err(CommandError {
                code: 43,
                code_name: "CursorNotFound",
                message: format!("cursor id {id} not found"),
            });
        };
        let ns = format!("{db}.{collection}");
        if cursor.ns() != ns {
            let message = format!(
                "Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {}",
                cursor.ns()
            );
            self.cursors.lock().unwrap().give_back(id, Some(cursor));
            return Err(CommandError {
                code: 13,
                code_name: "Unauthorized",
                message,
            });
        }
        let kept = match cursor {
            OpenCursor::Documents(cursor) => self.write_batch(out, "nextBatch", cursor, max_docs, true, id),
            OpenCursor::Changes(mut stream) => {
                // Nothing more is written: awaitData holds the empty batch for maxTimeMS.
                if stream.exhausted() {
                    *wait = Some(change_stream::await_time(body));
                }
                stream.write_reply(out, "nextBatch", max_docs, id);
                Some(OpenCursor::Changes(stream))
            }
        };
        self.cursors.lock().unwrap().give_back(id, kept);
        Ok(())
    }

    fn kill_cursors(&self, body: &RawDocument, out: &mut Vec<u8>) -> Result<(), CommandError> {
        let ids = body
            .get_array("cursors")
            .map_err(|_| bad_value("killCursors: 'cursors' must be an array"))?;
        let (mut killed, mut not_found) = (RawArrayBuf::new(), RawArrayBuf::new());
        let mut cursors = self.cursors.lock().unwrap();
        for id in ids {
            let Some(id) = id.ok().and_then(RawBsonRef::as_i64) else {
                return Err(bad_value("killCursors: cursor ids must be longs"));
            };
            match cursors.kill(id) {
                true => killed.push(id),
                false => not_found.push(id),
            }
        }
        write(
            out,
            rawdoc! {
                "cursorsKilled": killed,
                "cursorsNotFound": not_found,
                "cursorsAlive": [],
                "cursorsUnknown": [],
                "ok": 1.0,
            },
        )
    }

    fn aggregate(
        &self,
        role: &Role,
        db: &str,
        body: &RawDocument,
        out: &mut Vec<u8>,
    ) -> Result<(), CommandError> {
        let mut read = Read::new();
        let mut change_stream = false;
        for element in body {
            let (key, value) = element.map_err(|error| bad_value(error.to_string()))?;
            let key = key.as_str();
            match key {
                "aggregate" => read.collection = string(key, value)?,
                "pipeline" => {
                    let stages = value
                        .as_array()
                        .ok_or_else(|| bad_value("'pipeline' must be an array"))?;
                    if let Some(options) = change_stream_stage(stages)? {
                        if role.set.is_none() {
                            return Err(CommandError {
                                code: 40573,
                                code_name: "Location40573",
                                message: "The $changeStream stage is only supported on replica sets".into(),
                            });
                        }
                        change_stream::check_options(options).map_err(bad_value)?;
                        change_stream = true;
                        continue;
                    }
                    for stage in stages {
                        let stage = stage.ok().and_then(RawBsonRef::as_document);
                        let mut fields = stage.into_iter().flat_map(RawDocument::iter);
                        let (Some(Ok((operator, argument))), None) = (fields.next(), fields.next()) else {
                            return Err(bad_value("a pipeline stage must be a document with one field"));
                        };
                        if read.count.is_some() {
                            return Err(bad_value("only a $group as the last stage is supported"));
                        }
                        match operator.as_str() {
                            "$match" => read.filter(filter("$match", argument)?),
                            "$skip" => read.window = read.window.skip(non_negative("$skip", argument)?),
                            "$limit" => {
                                let count = non_negative("$limit", argument)?;
                                if count == 0 {
                                    return Err(bad_value("the limit must be positive"));
                                }
                                read.window = read.window.limit(count);
                            }
                            "$group" => read.count = Some(count_stage(argument)?),
                            "$project" if read.projection.is_none() => {
                                let parsed =
                                    Projection::parse(document("$project", argument)?).map_err(bad_value)?;
                                read.projection = Some(parsed.ok_or_else(|| {
                                    bad_value("$project specification must have at least one field")
                                })?);
                            }
                            "$project" => return Err(bad_value("only one $project stage is supported")),
                            other => return Err(bad_value(format!("unsupported pipeline stage '{other}'"))),
                        }
                    }
                }
                "cursor" => {
                    if let Some(size) = document(key, value)?.get("batchSize").ok().flatten() {
                        read.first_batch = non_negative("batchSize", size)?;
                    }
                }
                "hint" => id_hint(value)?,
                _ => unsupported("aggregate", key)?,
            }
        }
        if change_stream {
            return self.open_change_stream(db, read.collection, out);
        }
        self.open_cursor(db, read, out)
    }

    /// Opens a change stream on collection `name`: its documents are the events to come (none for
    /// a missing collection, as mongod's stream on a collection not yet created). The first batch
    /// is empty, as the inserts come after the stream opens.
    fn open_change_stream(&self, db: &str, name: &str, out: &mut Vec<u8>) -> Result<(), CommandError> {
        let (pool, end) = match self.collection(db, name) {
            Some(collection) if collection.dataset.is_none() => {
                return Err(bad_value(
                    "change streams are served on generated collections only",
                ))
            }
            Some(collection) => (collection.pool(None).map_err(bad_value)?, collection.count),
            None => (Arc::new(Pool::empty()), 0),
        };
        let mut stream = Stream {
            db: db.to_owned(),
            coll: name.to_owned(),
            pool,
            next: 0,
            end,
        };
        let id = self.next_cursor_id.fetch_add(1, Ordering::Relaxed);
        stream.write_reply(out, "firstBatch", 0, id);
        self.cursors
            .lock()
            .unwrap()
            .insert(id, OpenCursor::Changes(stream));
        Ok(())
    }

    fn count(&self, db: &str, body: &RawDocument, out: &mut Vec<u8>) -> Result<(), CommandError> {
        let (mut name, mut selection, mut skip, mut limit) = ("", Filter::All, 0, None);
        for element in body {
            let (key, value) = element.map_err(|error| bad_value(error.to_string()))?;
            let key = key.as_str();
            match key {
                "count" => name = string(key, value)?,
                "query" => selection = filter(key, value)?,
                "skip" => skip = non_negative(key, value)?,
                // As in mongod, a negative limit counts like its absolute value, and 0 is none.
                "limit" => limit = Some(integer(key, value)?.unsigned_abs()).filter(|&limit| limit > 0),
                "hint" => id_hint(value)?,
                _ => unsupported("count", key)?,
            }
        }
        let window = Window::ALL.filter(selection).skip(skip);
        let window = limit.map_or(window, |limit| window.limit(limit));
        let (_, selected) = self.select(db, name, window, matches!(selection, Filter::Ids(_)))?;
        let n = selected.end - selected.start;
        let n = i32::try_from(n).map_or(RawBson::Int64(n as i64), RawBson::Int32);
        write(out, rawdoc! { "n": n, "ok": 1.0 })
    }

    /// `distinct` of a label field of a generated collection (see [`label`]), its values sorted as
    /// mongod sorts them (its BSONElementSet: BSON order, here byte order of ASCII strings).
    fn distinct(&self, db: &str, body: &RawDocument, out: &mut Vec<u8>) -> Result<(), CommandError> {
        let (mut name, mut field, mut selection) = ("", None, Filter::All);
        for element in body {
            let (key, value) = element.map_err(|error| bad_value(error.to_string()))?;
            let key = key.as_str();
            match key {
                "distinct" => name = string(key, value)?,
                "key" => field = Some(string(key, value)?),
                "query" => selection = filter(key, value)?,
                "hint" => id_hint(value)?,
                _ => unsupported("distinct", key)?,
            }
        }
        let field = field.ok_or_else(|| bad_value("distinct: 'key' must be a string"))?;
        let (collection, selected) = self.select(
            db,
            name,
            Window::ALL.filter(selection),
            matches!(selection, Filter::Ids(_)),
        )?;
        let mut values = BTreeSet::new();
        if let Some(collection) = collection {
            let dataset = collection.dataset.unwrap_or_default();
            if label(dataset, field, 0).is_none() {
                return Err(bad_value(format!(
                    "distinct: unsupported key '{field}' of '{name}': only orders' status and region are supported"
                )));
            }
            // Labels repeat every LABEL_PERIOD documents: one period holds every value there is.
            let seen = selected.start..selected.end.min(selected.start.saturating_add(LABEL_PERIOD));
            values.extend(seen.filter_map(|index| label(dataset, field, index)));
        }
        let values: RawArrayBuf = values.into_iter().collect();
        write(out, rawdoc! { "values": values, "ok": 1.0 })
    }

    fn list_collections(&self, db: &str, body: &RawDocument, out: &mut Vec<u8>) -> Result<(), CommandError> {
        // Only `{}` and `{ name: <string> }` filters: the ones drivers send.
        let only = match body.get("filter").ok().flatten() {
            None => None,
            Some(filter) => {
                let mut fields = document("filter", filter)?.iter();
                match (fields.next(), fields.next()) {
                    (None, _) => None,
                    (Some(Ok((key, RawBsonRef::String(name)))), None) if key.as_str() == "name" => Some(name),
                    _ => {
                        return Err(bad_value(
                            "unsupported listCollections filter: only {} and { name: <string> }",
                        ))
                    }
                }
            }
        };
        let name_only = body.get_bool("nameOnly").unwrap_or(false);
        let mut names: Vec<&str> = match db {
            DATABASE => self
                .collections
                .keys()
                .map(String::as_str)
                .filter(|name| only.is_none_or(|only| only == *name))
                .collect(),
            _ => Vec::new(),
        };
        names.sort_unstable();
        let mut batch = RawArrayBuf::new();
        for name in names {
            batch.push(if name_only {
                rawdoc! { "name": name, "type": "collection" }
            } else {
                rawdoc! {
                    "name": name,
                    "type": "collection",
                    "options": {},
                    "info": { "readOnly": false },
                    "idIndex": { "v": 2, "key": { "_id": 1 }, "name": "_id_" },
                }
            });
        }
        let ns = format!("{db}.$cmd.listCollections");
        write(
            out,
            rawdoc! { "cursor": { "firstBatch": batch, "id": 0i64, "ns": ns }, "ok": 1.0 },
        )
    }
}
