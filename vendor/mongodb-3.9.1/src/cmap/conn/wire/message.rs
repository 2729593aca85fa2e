use crate::bson::doc;
use bitflags::bitflags;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

#[cfg(any(
    feature = "zstd-compression",
    feature = "zlib-compression",
    feature = "snappy-compression"
))]
use crate::options::Compressor;
use crate::{
    bson::{RawArrayBuf, RawDocumentBuf},
    checked::Checked,
    cmap::Command,
    compression::decompress::{decompress_message, size_mismatch, unsupported_compressor},
    error::{Error, ErrorKind, Result},
};

use super::{
    header::{Header, OpCode},
    next_request_id,
};

/// Represents an OP_MSG wire protocol operation.
#[derive(Debug)]
pub(crate) struct Message {
    /// OP_MSG payload type 0.
    pub(crate) document_payload: RawDocumentBuf,

    /// OP_MSG payload type 1.
    pub(crate) document_sequences: Vec<DocumentSequence>,

    pub(crate) response_to: i32,

    pub(crate) flags: MessageFlags,

    pub(crate) checksum: Option<u32>,

    pub(crate) request_id: Option<i32>,

    /// Whether the message should be compressed by the driver.
    #[cfg(any(
        feature = "zstd-compression",
        feature = "zlib-compression",
        feature = "snappy-compression"
    ))]
    pub(crate) should_compress: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct DocumentSequence {
    pub(crate) identifier: String,
    pub(crate) documents: Vec<RawDocumentBuf>,
}

/// Creates a Message from a Command. The response_to and request_id fields must be set manually.
impl TryFrom<Command> for Message {
    type Error = Error;

    fn try_from(command: Command) -> Result<Self> {
        let document_payload = crate::bson_compat::serialize_to_raw_document_buf(&command)?;
        #[cfg(any(
            feature = "zstd-compression",
            feature = "zlib-compression",
            feature = "snappy-compression"
        ))]
        let should_compress = command.should_compress();

        let mut flags = MessageFlags::empty();
        if command.exhaust_allowed {
            flags |= MessageFlags::EXHAUST_ALLOWED;
        }

        Ok(Self {
            document_payload,
            document_sequences: command.document_sequences,
            response_to: 0,
            flags,
            checksum: None,
            request_id: None,
            #[cfg(any(
                feature = "zstd-compression",
                feature = "zlib-compression",
                feature = "snappy-compression"
            ))]
            should_compress,
        })
    }
}

impl Message {
    /// Gets this message's command as a RawDocumentBuf. If serialization fails, returns a document
    /// containing the error.
    pub(crate) fn get_raw_command_document(&self) -> RawDocumentBuf {
        let mut command = self.document_payload.clone();

        for document_sequence in &self.document_sequences {
            let ident_cstr = match crate::bson_compat::str_to_cstr(&document_sequence.identifier) {
                Ok(cs) => cs,
                Err(e) => return crate::bson::rawdoc! { "serialization error": e.to_string() },
            };
            let mut documents = RawArrayBuf::new();
            for document in &document_sequence.documents {
                documents.push(document.to_owned());
            }
            command.append(ident_cstr, documents);
        }

        command
    }

    /// Reads bytes from `reader` and deserializes them into a Message.
    pub(crate) async fn read_from<T: AsyncRead + Unpin + Send>(
        mut reader: T,
        max_message_size_bytes: Option<i32>,
    ) -> Result<Self> {
        let header = Header::read_from(&mut reader).await?;
        // rumongo patch: a negative length, in the official Node driver's words (its
        // `SizedMessageTransform`, which throws a MongoParseError); the crate's checked
        // conversion below said "out of range integral type conversion attempted".
        if header.length < 0 {
            return Err(node_parse_failure(format!(
                "Message size cannot be negative: {}",
                header.length
            )));
        }
        let max_len = max_message_size_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_SIZE_BYTES);
        if header.length > max_len {
            return Err(ErrorKind::InvalidResponse {
                message: format!("Message length {} over maximum {}", header.length, max_len),
            }
            .into());
        }

        if header.op_code == OpCode::Message {
            return Self::read_from_op_msg(reader, &header).await;
        }
        if header.op_code == OpCode::Compressed {
            return Self::read_op_compressed_from(reader, &header, max_len).await;
        }

        Err(Error::new(
            ErrorKind::InvalidResponse {
                message: format!(
                    "Invalid op code, expected {} or {} and got {}",
                    OpCode::Message as u32,
                    OpCode::Compressed as u32,
                    header.op_code as u32
                ),
            },
            Option::<Vec<String>>::None,
        ))
    }

    async fn read_from_op_msg<T: AsyncRead + Unpin + Send>(
        mut reader: T,
        header: &Header,
    ) -> Result<Self> {
        let length = Checked::<usize>::try_from(header.length)?;
        let length_remaining = (length - Header::LENGTH).get()?;
        // rumongo patch: a reply's body (its first section, of kind 0, as every server reply has
        // it) is read from the socket straight into the buffer it is kept in. Read into one buffer
        // for the whole message first, the body was then copied out of it into a second one (the
        // crate's `bson_util::read_document_bytes`): for a 500 KiB getMore reply, two allocations
        // of fresh pages, their page faults and two more passes over the bytes, on the I/O thread.
        // Any other layout is read by `read_op_common`, as the official Node driver reads it.
        const PREFIX: usize = 4 + 1 + 4; // flags, section kind, body length
        if length_remaining < PREFIX {
            let mut buf = vec![0u8; length_remaining];
            reader.read_exact(&mut buf).await?;
            return Self::read_op_common(buf.as_slice(), header);
        }
        let mut prefix = [0u8; PREFIX];
        reader.read_exact(&mut prefix).await?;
        let flags = MessageFlags::from_bits_truncate(u32::from_le_bytes([
            prefix[0], prefix[1], prefix[2], prefix[3],
        ]));
        let body_length = i32::from_le_bytes([prefix[5], prefix[6], prefix[7], prefix[8]]);
        let body_length = usize::try_from(body_length)
            .ok()
            .filter(|&body| prefix[4] == 0 && body >= 5 && body <= length_remaining - 5);
        let Some(body_length) = body_length else {
            let mut buf = vec![0u8; length_remaining];
            buf[..PREFIX].copy_from_slice(&prefix);
            reader.read_exact(&mut buf[PREFIX..]).await?;
            return Self::read_op_common(buf.as_slice(), header);
        };
        let mut body = vec![0u8; body_length];
        body[..4].copy_from_slice(&prefix[5..]);
        reader.read_exact(&mut body[4..]).await?;
        let mut rest = vec![0u8; length_remaining - 5 - body_length];
        reader.read_exact(&mut rest).await?;
        let checksum = match rest.len() {
            0 => None,
            4 if flags.contains(MessageFlags::CHECKSUM_PRESENT) => {
                Some(u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]))
            }
            // More sections, or bytes the reply should not have: read as the official driver reads
            // them.
            _ => {
                let mut buf = Vec::with_capacity(length_remaining);
                buf.extend_from_slice(&prefix[..5]);
                buf.extend_from_slice(&body);
                buf.extend_from_slice(&rest);
                return Self::read_op_common(buf.as_slice(), header);
            }
        };
        check_body(&body)?;
        Ok(Self {
            response_to: header.response_to,
            flags,
            document_payload: RawDocumentBuf::from_bytes(body)?,
            document_sequences: Vec::new(),
            checksum,
            request_id: None,
            #[cfg(any(
                feature = "zstd-compression",
                feature = "zlib-compression",
                feature = "snappy-compression"
            ))]
            should_compress: false,
        })
    }

    async fn read_op_compressed_from<T: AsyncRead + Unpin + Send>(
        mut reader: T,
        header: &Header,
        max_len: i32,
    ) -> Result<Self> {
        let length = Checked::<usize>::try_from(header.length)?;
        let length_remaining = length - Header::LENGTH;
        let mut buffer = vec![0u8; length_remaining.get()?];
        reader.read_exact(&mut buffer).await?;
        // rumongo patch: a compressed reply's details are read, and refused, as the official Node
        // driver reads them (`decompressResponse`, mongodb 7 `lib/cmap/wire_protocol/
        // compression.js`): details cut short fail with its `readInt32LE` error (offsets in the
        // whole message), an unknown compressor and an uncompressed size that is not the size
        // decompressed (a negative one included) with its MongoDecompressionError messages. The
        // crate read past the end as an I/O error (a network error, retried, and reported as the
        // connection closed) and said both in its own words.
        let detail = |offset: usize| {
            read_i32_at(&buffer, offset)
                .map_err(|_| out_of_bounds(Header::LENGTH + buffer.len(), Header::LENGTH + offset))
        };
        let original_opcode = detail(0)?;
        let uncompressed_size = detail(4)?;
        if original_opcode != OpCode::Message as i32 {
            return Err(ErrorKind::InvalidResponse {
                message: format!(
                    "The original opcode of the compressed message must be {}, but was {}",
                    OpCode::Message as i32,
                    original_opcode,
                ),
            }
            .into());
        }
        let Some((&compressor_id, compressed)) = buffer[8..].split_first() else {
            return Err(unsupported_compressor("undefined"));
        };
        // rumongo patch: decompressed up to the declared size, and never past the maximum message
        // size (`decompress_message`: the crate decompressed whatever the bytes held). A size
        // that is not the one decompressed fails as in the official driver, which decompresses
        // everything first.
        let size = usize::try_from(uncompressed_size).ok();
        let limit = size.unwrap_or(0).min(usize::try_from(max_len).unwrap_or(0));
        let decompressed = decompress_message(compressed, compressor_id, limit)?;
        if size != Some(decompressed.len()) {
            return Err(size_mismatch());
        }

        // Read decompressed message as a standard OP_MSG.
        Self::read_op_common(decompressed.as_slice(), header)
    }

    /// rumongo patch: reads a reply's flags and sections as the official Node driver does
    /// (`OpMsgResponse.parse`, then `MongoDBResponse.make`'s checks of the body, mongodb 7
    /// `lib/cmap/commands.js`), so that a malformed reply fails with the official driver's error
    /// (`node_parse_failure`), not one of the crate's own. Every server reply is one body (a
    /// section of kind 0), read by `read_from_op_msg`'s fast path; this reads the other layouts
    /// and every decompressed reply. The crate read a section of any kind but 0 as a document
    /// sequence, whose identifier took every byte left (a sequence before the body failed as
    /// invalid UTF-8, an I/O error the crate then retried; one after it was accepted), and refused
    /// a second body. The official driver's walk, followed here step by step: a section of kind 1
    /// fails ("OP_MSG Payload Type 1 detected unsupported protocol"); any kind but 0 and 1 is one
    /// byte skipped; a kind-0 section's length is read where it stands (`RangeError` past the end)
    /// and its bytes taken up to the end of the message at most, the next section starting that
    /// length further on (inside the body, when its length is too short); the first kind-0 section
    /// is the body, the others are ignored. One departure: a negative section length fails here,
    /// where the official driver's walk steps back and may never end (the process runs out of
    /// memory).
    fn read_op_common(data: &[u8], header: &Header) -> Result<Self> {
        let flags = MessageFlags::from_bits_truncate(read_i32_at(data, 0)? as u32);
        let mut body = None;
        let mut index = 4;
        while index < data.len() {
            let kind = data[index];
            index += 1;
            match kind {
                0 => {
                    let Ok(length) = usize::try_from(read_i32_at(data, index)?) else {
                        return Err(node_parse_failure(
                            "BSON size cannot be negative. offset: 0",
                        ));
                    };
                    let end = index.saturating_add(length);
                    body.get_or_insert(&data[index..end.min(data.len())]);
                    index = end;
                }
                1 => {
                    return Err(node_parse_failure(
                        "OP_MSG Payload Type 1 detected unsupported protocol",
                    ))
                }
                _ => {}
            }
        }
        let body = body.ok_or_else(|| ErrorKind::InvalidResponse {
            message: "an OP_MSG response must contain exactly one payload type 0 section".into(),
        })?;
        check_body(body)?;
        Ok(Self {
            response_to: header.response_to,
            flags,
            document_payload: RawDocumentBuf::from_bytes(body.to_vec())?,
            document_sequences: Vec::new(),
            checksum: None,
            request_id: None,
            #[cfg(any(
                feature = "zstd-compression",
                feature = "zlib-compression",
                feature = "snappy-compression"
            ))]
            should_compress: false,
        })
    }

    /// Serializes this message into an OP_MSG and writes it to the provided writer.
    pub(crate) async fn write_op_msg_to<T: AsyncWrite + Send + Unpin>(
        &self,
        mut writer: T,
        max_message_size_bytes: Option<i32>,
    ) -> Result<()> {
        let sections = self.get_sections_bytes()?;

        let total_length = Checked::new(Header::LENGTH)
            + std::mem::size_of::<u32>()
            + sections.len()
            + self
                .checksum
                .as_ref()
                .map(std::mem::size_of_val)
                .unwrap_or(0);

        let max_len =
            Checked::try_from(max_message_size_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_SIZE_BYTES))?;
        if total_length > max_len {
            return Err(ErrorKind::InvalidArgument {
                message: format!("Message length {total_length} over maximum {max_len}"),
            }
            .into());
        }

        let header = Header {
            length: total_length.try_into()?,
            request_id: self.request_id.unwrap_or_else(next_request_id),
            response_to: self.response_to,
            op_code: OpCode::Message,
        };

        header.write_to(&mut writer).await?;
        writer.write_u32_le(self.flags.bits()).await?;
        writer.write_all(&sections).await?;

        if let Some(checksum) = self.checksum {
            writer.write_u32_le(checksum).await?;
        }

        writer.flush().await?;

        Ok(())
    }

    #[cfg(any(
        feature = "zstd-compression",
        feature = "zlib-compression",
        feature = "snappy-compression"
    ))]
    /// Serializes this message into an OP_COMPRESSED message and writes it to the provided writer.
    pub(crate) async fn write_op_compressed_to<T: AsyncWrite + Unpin + Send>(
        &self,
        mut writer: T,
        compressor: &Compressor,
        max_message_size_bytes: Option<i32>,
    ) -> Result<()> {
        let flag_bytes = &self.flags.bits().to_le_bytes();
        let section_bytes = self.get_sections_bytes()?;
        let uncompressed_len = Checked::new(section_bytes.len()) + flag_bytes.len();

        let compressed_bytes = compressor.compress(flag_bytes, &section_bytes)?;

        let total_length = Checked::new(Header::LENGTH)
            + std::mem::size_of::<i32>()
            + std::mem::size_of::<i32>()
            + std::mem::size_of::<u8>()
            + compressed_bytes.len();

        let max_len =
            Checked::try_from(max_message_size_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_SIZE_BYTES))?;
        if total_length > max_len {
            return Err(ErrorKind::InvalidArgument {
                message: format!("Message length {total_length} over maximum {max_len}"),
            }
            .into());
        }

        let header = Header {
            length: total_length.try_into()?,
            request_id: self.request_id.unwrap_or_else(next_request_id),
            response_to: self.response_to,
            op_code: OpCode::Compressed,
        };

        header.write_to(&mut writer).await?;
        writer.write_i32_le(OpCode::Message as i32).await?;
        writer.write_i32_le(uncompressed_len.try_into()?).await?;
        writer.write_u8(compressor.id()).await?;
        writer.write_all(compressed_bytes.as_slice()).await?;

        writer.flush().await?;

        Ok(())
    }

    fn get_sections_bytes(&self) -> Result<Vec<u8>> {
        let mut sections = Vec::new();

        // Payload type 0
        sections.push(0);
        sections.extend(self.document_payload.as_bytes());

        for document_sequence in &self.document_sequences {
            // Payload type 1
            sections.push(1);

            let identifier_bytes = document_sequence.identifier.as_bytes();

            let documents_size = document_sequence
                .documents
                .iter()
                .fold(0, |running_size, document| {
                    running_size + document.as_bytes().len()
                });

            // Size bytes + identifier bytes + null-terminator byte + document bytes
            let size = Checked::new(4) + identifier_bytes.len() + 1 + documents_size;
            sections.extend(size.try_into::<i32>()?.to_le_bytes());

            sections.extend(identifier_bytes);
            sections.push(0);

            for document in &document_sequence.documents {
                sections.extend(document.as_bytes());
            }
        }

        Ok(sections)
    }
}

const DEFAULT_MAX_MESSAGE_SIZE_BYTES: i32 = 48 * 1024 * 1024;

bitflags! {
    /// Represents the bitwise flags for an OP_MSG as defined in the spec.
    #[derive(Debug)]
    pub(crate) struct MessageFlags: u32 {
        const CHECKSUM_PRESENT = 0b_0000_0000_0000_0000_0000_0000_0000_0001;
        const MORE_TO_COME     = 0b_0000_0000_0000_0000_0000_0000_0000_0010;
        const EXHAUST_ALLOWED  = 0b_0000_0000_0000_0001_0000_0000_0000_0000;
    }
}

/// rumongo patch: a reply the official Node driver's parser refuses, in its words (see
/// `Message::read_op_common`): js-bson's `RangeError` and `BSONOffsetError` messages, or the
/// driver's own. rumongo gives each the official driver's class (its `src/error.rs`).
fn node_parse_failure(message: impl Into<String>) -> Error {
    ErrorKind::InvalidResponse {
        message: message.into(),
    }
    .into()
}

/// rumongo patch: the little-endian int32 at `offset`, or the official driver's `readInt32LE`
/// failure (mongodb 7 `lib/bson.js`) when it does not fit in `data`.
fn read_i32_at(data: &[u8], offset: usize) -> Result<i32> {
    match data.get(offset..offset.saturating_add(4)) {
        Some(bytes) => Ok(i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
        None => Err(out_of_bounds(data.len(), offset)),
    }
}

/// rumongo patch: the official driver's `readInt32LE` failure for 4 bytes at `offset` of a
/// buffer of `length` bytes.
fn out_of_bounds(length: usize, offset: usize) -> Error {
    node_parse_failure(format!(
        "Attempt to access memory outside buffer bounds: buffer length: {length}, offset: \
         {offset}, length: 4"
    ))
}

/// rumongo patch: the checks js-bson's `parseToElements` makes of a reply's body before the
/// official driver reads it, with its `BSONOffsetError` messages: at least 5 bytes, a length that
/// fits in them, a last byte 0. The body's own elements are checked where they are read.
fn check_body(body: &[u8]) -> Result<()> {
    if body.len() < 5 {
        return Err(node_parse_failure(format!(
            "Input must be at least 5 bytes, got {} bytes. offset: 0",
            body.len()
        )));
    }
    let Ok(length) = usize::try_from(read_i32_at(body, 0)?) else {
        return Err(node_parse_failure(
            "BSON size cannot be negative. offset: 0",
        ));
    };
    if length > body.len() {
        return Err(node_parse_failure(format!(
            "Parsed documentSize ({length} bytes) does not match input length ({} bytes). offset: \
             0",
            body.len()
        )));
    }
    if length < 5 || body[length - 1] != 0 {
        return Err(node_parse_failure(format!(
            "BSON documents must end in 0x00. offset: {length}"
        )));
    }
    Ok(())
}
