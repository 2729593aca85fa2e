//! Message framing: one task per connection reads OP_MSG / OP_QUERY requests and writes OP_MSG /
//! OP_REPLY replies, plus the raw BSON writing helpers the replies are built with.

use std::borrow::Cow;
use std::io;
use std::sync::Arc;

use bson::raw::CStr;
use bson::{RawArrayBuf, RawDocument};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::commands::{self, Role, Server};
use crate::compression::{self, Compressor, OP_COMPRESSED};

const OP_REPLY: i32 = 1;
const OP_QUERY: i32 = 2004;
const OP_MSG: i32 = 2013;

/// The largest message accepted, as announced by hello's maxMessageSizeBytes.
pub const MAX_MESSAGE_BYTES: usize = 48_000_000;

const CHECKSUM_PRESENT: u32 = 1;
const MORE_TO_COME: u32 = 1 << 1;
/// OP_MSG flag bits 0-15 are "required": a message with one this server does not know is refused.
const REQUIRED_BITS: u32 = 0xFFFF;

pub const ELEMENT_DOUBLE: u8 = 0x01;
pub const ELEMENT_STRING: u8 = 0x02;
pub const ELEMENT_DOCUMENT: u8 = 0x03;
pub const ELEMENT_ARRAY: u8 = 0x04;
pub const ELEMENT_OBJECT_ID: u8 = 0x07;
pub const ELEMENT_DATETIME: u8 = 0x09;
pub const ELEMENT_TIMESTAMP: u8 = 0x11;
pub const ELEMENT_INT64: u8 = 0x12;

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

fn i32_at(bytes: &[u8], at: usize) -> io::Result<i32> {
    let field = bytes
        .get(at..at + 4)
        .ok_or_else(|| invalid("truncated message"))?;
    Ok(i32::from_le_bytes(field.try_into().unwrap()))
}

/// Serves one client connection until it closes; an error means a malformed message or a broken
/// socket, and closes the connection as mongod would.
pub async fn serve(stream: TcpStream, server: Arc<Server>, role: Role) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let connection_id = server.next_connection_id();
    let mut stream = BufReader::new(stream);
    let mut request = Vec::new();
    let mut reply = ReplyBuffer::default();
    loop {
        let mut length = [0; 4];
        match stream.read_exact(&mut length).await {
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            result => result?,
        };
        let length = i32::from_le_bytes(length);
        let length = usize::try_from(length)
            .ok()
            .filter(|length| (16..=MAX_MESSAGE_BYTES).contains(length))
            .ok_or_else(|| invalid(format!("bad message length {length}")))?;
        request.resize(length - 4, 0);
        stream.read_exact(&mut request).await?;
        let request_id = i32_at(&request, 0)?;
        let mut op_code = i32_at(&request, 8)?;
        let mut payload = &request[12..];
        // A compressed request is answered compressed the same way, as mongod does.
        let mut compressed_with = None;
        let decompressed;
        if op_code == OP_COMPRESSED {
            let (original, compressor, bytes) = decompress(payload, &server)?;
            decompressed = bytes;
            (op_code, payload, compressed_with) = (original, &decompressed, Some(compressor));
        }
        match op_code {
            OP_MSG => {
                let (body, more_to_come) = parse_msg(payload)?;
                let offer = compression::negotiate(&body);
                let out = reply.begin(OP_MSG, request_id);
                out.extend_from_slice(&[0, 0, 0, 0, 0]); // flagBits, then section kind 0 (body)
                let wait = commands::run(&server, &role, connection_id, offer, &body, out);
                // moreToCome: the client expects no reply.
                if more_to_come {
                    continue;
                }
                if let Some(wait) = wait {
                    tokio::time::sleep(wait).await;
                }
            }
            OP_QUERY => {
                let (namespace, body) = parse_query(payload)?;
                let out = reply.begin(OP_REPLY, request_id);
                // responseFlags (AwaitCapable, as mongod), cursorID 0, startingFrom 0, numberReturned 1.
                for field in [8, 0, 0, 0, 1] {
                    out.extend_from_slice(&i32::to_le_bytes(field));
                }
                commands::run_legacy(
                    &role,
                    connection_id,
                    compression::negotiate(body),
                    namespace,
                    body,
                    out,
                );
            }
            other => return Err(invalid(format!("unsupported opCode {other}"))),
        }
        let message = match compressed_with {
            Some(compressor) => reply.finish_compressed(compressor, &server)?,
            None => reply.finish(),
        };
        stream.write_all(message).await?;
    }
}

/// An OP_COMPRESSED payload's original opCode, compressor and decompressed message body.
fn decompress(payload: &[u8], server: &Server) -> io::Result<(i32, Compressor, Vec<u8>)> {
    let original = i32_at(payload, 0)?;
    let size = usize::try_from(i32_at(payload, 4)?)
        .ok()
        .filter(|&size| size <= MAX_MESSAGE_BYTES)
        .ok_or_else(|| invalid("bad OP_COMPRESSED size"))?;
    let id = *payload.get(8).ok_or_else(|| invalid("truncated OP_COMPRESSED"))?;
    let compressor = Compressor::from_id(id).ok_or_else(|| invalid(format!("unknown compressor id {id}")))?;
    let compressed = &payload[9..];
    let bytes = compressor.decompress(compressed, size)?;
    server
        .compression
        .decompressed(compressor, compressed.len(), bytes.len());
    Ok((original, compressor, bytes))
}

/// The document at the start of `bytes`, as long as its length prefix says.
fn document_at(bytes: &[u8]) -> io::Result<&RawDocument> {
    let length = usize::try_from(i32_at(bytes, 0)?).map_err(|_| invalid("negative document length"))?;
    let bytes = bytes.get(..length).ok_or_else(|| invalid("truncated document"))?;
    RawDocument::from_bytes(bytes).map_err(|error| invalid(error.to_string()))
}

/// An OP_MSG's command body and its moreToCome flag. Document sequences (kind 1 sections) are
/// folded into the body as array fields, which is how mongod's commands see them.
fn parse_msg(payload: &[u8]) -> io::Result<(Cow<'_, RawDocument>, bool)> {
    let flags = i32_at(payload, 0)? as u32;
    if flags & REQUIRED_BITS & !(CHECKSUM_PRESENT | MORE_TO_COME) != 0 {
        return Err(invalid(format!("unsupported OP_MSG flag bits {flags:#x}")));
    }
    // The CRC-32C trails the sections; its value is not checked (TCP already protects the bytes).
    let checksum = if flags & CHECKSUM_PRESENT != 0 { 4 } else { 0 };
    let end = payload
        .len()
        .checked_sub(checksum)
        .filter(|&end| end >= 4)
        .ok_or_else(|| invalid("short OP_MSG"))?;
    let mut sections = &payload[4..end];
    let mut body = None;
    let mut sequences = Vec::new();
    while let Some((&kind, rest)) = sections.split_first() {
        match kind {
            0 => {
                let document = document_at(rest)?;
                if body.replace(document).is_some() {
                    return Err(invalid("OP_MSG with two body sections"));
                }
                sections = &rest[document.as_bytes().len()..];
            }
            1 => {
                let size = usize::try_from(i32_at(rest, 0)?).unwrap_or(0);
                if size < 4 || size > rest.len() {
                    return Err(invalid("bad document sequence size"));
                }
                let (section, after) = rest.split_at(size);
                let name_end = section[4..]
                    .iter()
                    .position(|&byte| byte == 0)
                    .ok_or_else(|| invalid("bad sequence name"))?;
                let name = std::str::from_utf8(&section[4..4 + name_end])
                    .map_err(|_| invalid("bad sequence name"))?;
                let mut documents = &section[4 + name_end + 1..];
                let mut array = RawArrayBuf::new();
                while !documents.is_empty() {
                    let document = document_at(documents)?;
                    array.push(document);
                    documents = &documents[document.as_bytes().len()..];
                }
                sequences.push((name, array));
                sections = after;
            }
            other => return Err(invalid(format!("unknown OP_MSG section kind {other}"))),
        }
    }
    let body = body.ok_or_else(|| invalid("OP_MSG without a body section"))?;
    let more_to_come = flags & MORE_TO_COME != 0;
    if sequences.is_empty() {
        return Ok((Cow::Borrowed(body), more_to_come));
    }
    let mut merged = body.to_owned();
    for (name, array) in sequences {
        let name: &CStr = name.try_into().map_err(|_| invalid("bad sequence name"))?;
        merged.append(name, array);
    }
    Ok((Cow::Owned(merged), more_to_come))
}

/// A legacy OP_QUERY's namespace (`<db>.$cmd` for a command) and command document, unwrapped from
/// `$query` when the client added modifiers such as `$readPreference`.
fn parse_query(payload: &[u8]) -> io::Result<(&str, &RawDocument)> {
    let rest = payload.get(4..).ok_or_else(|| invalid("truncated OP_QUERY"))?;
    let name_end = rest
        .iter()
        .position(|&byte| byte == 0)
        .ok_or_else(|| invalid("bad OP_QUERY namespace"))?;
    let namespace = std::str::from_utf8(&rest[..name_end]).map_err(|_| invalid("bad OP_QUERY namespace"))?;
    // numberToSkip and numberToReturn precede the query; commands ignore both.
    let query = document_at(
        rest.get(name_end + 9..)
            .ok_or_else(|| invalid("truncated OP_QUERY"))?,
    )?;
    match query.get("$query") {
        Ok(Some(bson::RawBsonRef::Document(inner))) => Ok((namespace, inner)),
        _ => Ok((namespace, query)),
    }
}

/// The reply buffer of one connection, reused by every reply: a reply is built in place (header,
/// then the body) and sent with one write.
#[derive(Default)]
struct ReplyBuffer {
    bytes: Vec<u8>,
    /// The OP_COMPRESSED form of `bytes`, when the request was compressed.
    compressed: Vec<u8>,
    next_id: i32,
}

impl ReplyBuffer {
    /// Clears the buffer and writes a header answering `response_to`; the caller appends the rest.
    fn begin(&mut self, op_code: i32, response_to: i32) -> &mut Vec<u8> {
        self.next_id = self.next_id.wrapping_add(1);
        self.bytes.clear();
        for field in [0, self.next_id, response_to, op_code] {
            self.bytes.extend_from_slice(&field.to_le_bytes());
        }
        &mut self.bytes
    }

    /// The finished message, its length patched in.
    fn finish(&mut self) -> &[u8] {
        let length = self.bytes.len() as i32;
        self.bytes[..4].copy_from_slice(&length.to_le_bytes());
        &self.bytes
    }

    /// The finished message wrapped in OP_COMPRESSED: same header fields, then the original
    /// opCode, the uncompressed body's size, the compressor id and the compressed body.
    fn finish_compressed(&mut self, compressor: Compressor, server: &Server) -> io::Result<&[u8]> {
        self.finish();
        let (header, body) = self.bytes.split_at(16);
        let out = &mut self.compressed;
        out.clear();
        out.extend_from_slice(&header[..12]);
        out.extend_from_slice(&OP_COMPRESSED.to_le_bytes());
        out.extend_from_slice(&header[12..16]);
        out.extend_from_slice(&(body.len() as i32).to_le_bytes());
        out.push(compressor.id());
        let start = out.len();
        compressor.compress(body, out)?;
        server
            .compression
            .compressed(compressor, body.len(), out.len() - start);
        let length = out.len() as i32;
        out[..4].copy_from_slice(&length.to_le_bytes());
        Ok(out)
    }
}

/// Starts a document (its length is patched by `end_document`); returns where it starts.
pub fn begin_document(out: &mut Vec<u8>) -> usize {
    out.extend_from_slice(&[0; 4]);
    out.len() - 4
}

pub fn end_document(out: &mut Vec<u8>, start: usize) {
    out.push(0);
    let length = (out.len() - start) as i32;
    out[start..start + 4].copy_from_slice(&length.to_le_bytes());
}

/// An element's type byte and key; its value follows.
pub fn begin_element(out: &mut Vec<u8>, element_type: u8, key: &str) {
    out.push(element_type);
    out.extend_from_slice(key.as_bytes());
    out.push(0);
}

/// A string element: its key, then the length, bytes and terminating zero of `value`.
pub fn write_string(out: &mut Vec<u8>, key: &str, value: &str) {
    begin_element(out, ELEMENT_STRING, key);
    out.extend_from_slice(&(value.len() as i32 + 1).to_le_bytes());
    out.extend_from_slice(value.as_bytes());
    out.push(0);
}
