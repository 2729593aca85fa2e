//! Change streams on a replica-set member: `aggregate` with a `$changeStream` first stage on a
//! collection of database `bench`, and its getMores. The script: once the stream is open, each
//! document of the collection is inserted in `_id` order, so insert event `i` carries document `i`
//! as `fullDocument`; every stream opened replays the same events from the first. Past the last
//! event the stream stays open, as mongod's does while nothing is written: a getMore waits its
//! `maxTimeMS` (mongod's awaitData default, 1 s, without one) and returns an empty batch.
//!
//! Events and replies have mongod 7.0's shapes and field order:
//! `{ _id: { _data: <resume token> }, operationType: 'insert', clusterTime, wallTime, fullDocument,
//! ns: { db, coll }, documentKey: { _id } }` in `{ cursor: { nextBatch, postBatchResumeToken, id,
//! ns }, ok: 1, operationTime }`. Resume tokens are mongod 7.0's v2 KeyString tokens in hex: an
//! event's encodes its cluster time, the collection's UUID and `{ operationType, documentKey }`; a
//! batch with no event carries a high-water-mark token of the latest cluster time.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use bson::{RawBsonRef, RawDocument};

use crate::datasets::{Pool, MAX_BATCH_BYTES};
use crate::generate::object_id_bytes;
use crate::wire::{
    begin_document, begin_element, end_document, write_string, ELEMENT_ARRAY, ELEMENT_DATETIME,
    ELEMENT_DOCUMENT, ELEMENT_DOUBLE, ELEMENT_INT64, ELEMENT_OBJECT_ID, ELEMENT_TIMESTAMP,
};

/// The seconds of every cluster time the script uses (2023-11-14T22:13:20Z).
const CLUSTER_SECONDS: u64 = 1_700_000_000;
/// How long a getMore without `maxTimeMS` waits for events, as mongod's awaitData default.
const DEFAULT_AWAIT: Duration = Duration::from_secs(1);
/// The collection UUID inside event tokens (the same for every collection: nothing reads it).
const COLLECTION_UUID: &str = "AB1154ACACD849A48C61756D70D3B21F";

/// The `$changeStream` options this server answers exactly; anything else is refused, as a
/// resume point (the script has no past) or `showExpandedEvents` (events gain fields) would need.
pub fn check_options(options: &RawDocument) -> Result<(), String> {
    for element in options {
        let (key, value) = element.map_err(|error| error.to_string())?;
        let supported = match key.as_str() {
            // An insert event carries the inserted document whichever is asked for.
            "fullDocument" => matches!(
                value,
                RawBsonRef::String("default" | "updateLookup" | "whenAvailable" | "required")
            ),
            // An insert has no pre-image: the field is absent unless pre-images are required.
            "fullDocumentBeforeChange" => matches!(value, RawBsonRef::String("off" | "whenAvailable")),
            "showExpandedEvents" => value.as_bool() == Some(false),
            _ => false,
        };
        if !supported {
            return Err(format!(
                "unsupported $changeStream option '{}': only fullDocument, fullDocumentBeforeChange \
                 'off' or 'whenAvailable' and showExpandedEvents: false are supported",
                key.as_str()
            ));
        }
    }
    Ok(())
}

/// How long a getMore that finds no event waits before answering (its `maxTimeMS`).
pub fn await_time(get_more: &RawDocument) -> Duration {
    match get_more.get("maxTimeMS").ok().flatten() {
        Some(RawBsonRef::Int32(ms)) => Duration::from_millis(ms.max(0) as u64),
        Some(RawBsonRef::Int64(ms)) => Duration::from_millis(ms.max(0) as u64),
        Some(RawBsonRef::Double(ms)) if ms >= 0.0 => Duration::from_millis(ms as u64),
        _ => DEFAULT_AWAIT,
    }
}

/// The cluster time after `events` events: the stream opens at increment 1, event `i` is at
/// increment `i + 2`. BSON Timestamp layout: increment in the low 32 bits, seconds in the high.
fn cluster_time(events: u64) -> u64 {
    CLUSTER_SECONDS << 32 | (events + 1)
}

/// The resume token of event `index`.
fn event_token(token: &mut String, index: u64) {
    token.clear();
    let _ = write!(
        token,
        "82{:016X}2B042C0100296E5A1004{COLLECTION_UUID}",
        cluster_time(index + 1)
    );
    // The event identifier: { operationType: 'insert', documentKey: { _id: <ObjectId> } }.
    token
        .push_str("463C6F7065726174696F6E54797065003C696E736572740046646F63756D656E744B65790046645F69640064");
    for byte in object_id_bytes(index) {
        let _ = write!(token, "{byte:02X}");
    }
    token.push_str("000004");
}

/// The high-water-mark token at the cluster time after `events` events.
fn high_water_mark(token: &mut String, events: u64) {
    token.clear();
    let _ = write!(token, "82{:016X}2B0429296E1404", cluster_time(events));
}

/// `{ _data: <token> }` under `key`.
fn write_token(out: &mut Vec<u8>, key: &str, token: &str) {
    begin_element(out, ELEMENT_DOCUMENT, key);
    let document = begin_document(out);
    write_string(out, "_data", token);
    end_document(out, document);
}

/// Insert event `index` as array element `key`.
fn write_event(out: &mut Vec<u8>, key: &str, pool: &Pool, db: &str, coll: &str, index: u64, token: &str) {
    begin_element(out, ELEMENT_DOCUMENT, key);
    let event = begin_document(out);
    write_token(out, "_id", token);
    write_string(out, "operationType", "insert");
    begin_element(out, ELEMENT_TIMESTAMP, "clusterTime");
    out.extend_from_slice(&cluster_time(index + 1).to_le_bytes());
    begin_element(out, ELEMENT_DATETIME, "wallTime");
    out.extend_from_slice(&((CLUSTER_SECONDS * 1000 + index) as i64).to_le_bytes());
    begin_element(out, ELEMENT_DOCUMENT, "fullDocument");
    pool.write_document(out, index);
    begin_element(out, ELEMENT_DOCUMENT, "ns");
    let ns = begin_document(out);
    write_string(out, "db", db);
    write_string(out, "coll", coll);
    end_document(out, ns);
    begin_element(out, ELEMENT_DOCUMENT, "documentKey");
    let document_key = begin_document(out);
    begin_element(out, ELEMENT_OBJECT_ID, "_id");
    out.extend_from_slice(&object_id_bytes(index));
    end_document(out, document_key);
    end_document(out, event);
}

/// An open change stream: events `next..end` are still to come.
pub struct Stream {
    pub db: String,
    pub coll: String,
    pub pool: Arc<Pool>,
    pub next: u64,
    pub end: u64,
}

impl Stream {
    pub fn ns(&self) -> String {
        format!("{}.{}", self.db, self.coll)
    }

    pub fn exhausted(&self) -> bool {
        self.next >= self.end
    }

    /// Writes the reply with the next batch (`batch_key` is `firstBatch` or `nextBatch`): at most
    /// `max_docs` events within mongod's 16 MiB batch cap. The cursor stays open (`id`).
    pub fn write_reply(&mut self, out: &mut Vec<u8>, batch_key: &str, max_docs: u64, id: i64) {
        let reply = begin_document(out);
        begin_element(out, ELEMENT_DOCUMENT, "cursor");
        let cursor = begin_document(out);
        begin_element(out, ELEMENT_ARRAY, batch_key);
        let batch = begin_document(out);
        let mut keys = itoa::Buffer::new();
        let mut token = String::with_capacity(200);
        let (start, mut bytes) = (self.next, 0);
        while self.next < self.end && self.next - start < max_docs {
            let at = out.len();
            event_token(&mut token, self.next);
            let key = keys.format(self.next - start);
            write_event(out, key, &self.pool, &self.db, &self.coll, self.next, &token);
            bytes += out.len() - at;
            // As mongod: the first event always goes; one that would pass the cap waits.
            if self.next > start && bytes > MAX_BATCH_BYTES {
                out.truncate(at);
                break;
            }
            self.next += 1;
        }
        end_document(out, batch);
        // The last event's token, or a high-water mark when the batch holds none.
        if self.next > start {
            event_token(&mut token, self.next - 1);
        } else {
            high_water_mark(&mut token, self.next);
        }
        write_token(out, "postBatchResumeToken", &token);
        begin_element(out, ELEMENT_INT64, "id");
        out.extend_from_slice(&id.to_le_bytes());
        write_string(out, "ns", &self.ns());
        end_document(out, cursor);
        begin_element(out, ELEMENT_DOUBLE, "ok");
        out.extend_from_slice(&1.0f64.to_le_bytes());
        begin_element(out, ELEMENT_TIMESTAMP, "operationTime");
        out.extend_from_slice(&cluster_time(self.next).to_le_bytes());
        end_document(out, reply);
    }
}
