//! OP_COMPRESSED as mongod speaks it: the client lists the compressors it supports in its
//! handshake (`compression: [...]`), the server answers with the first of them it supports, and
//! from then on answers every compressed request with a reply compressed the same way. The bytes
//! each compressor took in and gave out are reported by `serverStatus` under
//! `network.compression`, as mongod reports them, so a test can see what was negotiated.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicI64, Ordering};

use bson::{RawBsonRef, RawDocument};

pub const OP_COMPRESSED: i32 = 2012;

/// The compressors this server supports (all of mongod's but the no-op).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compressor {
    Snappy,
    Zlib,
    Zstd,
}

pub const ALL: [Compressor; 3] = [Compressor::Snappy, Compressor::Zlib, Compressor::Zstd];

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

impl Compressor {
    /// The id OP_COMPRESSED carries.
    pub fn id(self) -> u8 {
        match self {
            Compressor::Snappy => 1,
            Compressor::Zlib => 2,
            Compressor::Zstd => 3,
        }
    }

    pub fn from_id(id: u8) -> Option<Self> {
        ALL.into_iter().find(|compressor| compressor.id() == id)
    }

    pub fn name(self) -> &'static str {
        match self {
            Compressor::Snappy => "snappy",
            Compressor::Zlib => "zlib",
            Compressor::Zstd => "zstd",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    pub fn compress(self, bytes: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Compressor::Snappy => {
                let start = out.len();
                out.resize(start + snap::raw::max_compress_len(bytes.len()), 0);
                let written = snap::raw::Encoder::new()
                    .compress(bytes, &mut out[start..])
                    .map_err(|error| invalid(error.to_string()))?;
                out.truncate(start + written);
            }
            Compressor::Zlib => {
                let mut encoder = flate2::write::ZlibEncoder::new(out, flate2::Compression::default());
                encoder.write_all(bytes)?;
                encoder.finish()?;
            }
            Compressor::Zstd => zstd::stream::copy_encode(bytes, out, zstd::DEFAULT_COMPRESSION_LEVEL)?,
        }
        Ok(())
    }

    pub fn decompress(self, bytes: &[u8], size: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(size);
        match self {
            Compressor::Snappy => {
                out = snap::raw::Decoder::new()
                    .decompress_vec(bytes)
                    .map_err(|error| invalid(error.to_string()))?;
            }
            Compressor::Zlib => {
                flate2::read::ZlibDecoder::new(bytes).read_to_end(&mut out)?;
            }
            Compressor::Zstd => zstd::stream::copy_decode(bytes, &mut out)?,
        }
        if out.len() != size {
            return Err(invalid(format!(
                "OP_COMPRESSED announced {size} bytes, decompressed to {}",
                out.len()
            )));
        }
        Ok(out)
    }
}

/// The compressor a handshake negotiates: the first the client lists that this server supports.
pub fn negotiate(hello: &RawDocument) -> Option<Compressor> {
    let Ok(Some(RawBsonRef::Array(names))) = hello.get("compression") else {
        return None;
    };
    names.into_iter().find_map(|name| match name {
        Ok(RawBsonRef::String(name)) => ALL.into_iter().find(|compressor| compressor.name() == name),
        _ => None,
    })
}

/// Bytes in and out of each compressor, as `serverStatus().network.compression` reports them.
#[derive(Default)]
pub struct Stats {
    /// Per compressor: compressor bytesIn, bytesOut, decompressor bytesIn, bytesOut.
    counters: [[AtomicI64; 4]; 3],
}

impl Stats {
    pub fn compressed(&self, compressor: Compressor, bytes_in: usize, bytes_out: usize) {
        let counters = &self.counters[compressor.index()];
        counters[0].fetch_add(bytes_in as i64, Ordering::Relaxed);
        counters[1].fetch_add(bytes_out as i64, Ordering::Relaxed);
    }

    pub fn decompressed(&self, compressor: Compressor, bytes_in: usize, bytes_out: usize) {
        let counters = &self.counters[compressor.index()];
        counters[2].fetch_add(bytes_in as i64, Ordering::Relaxed);
        counters[3].fetch_add(bytes_out as i64, Ordering::Relaxed);
    }

    /// `{ snappy: { compressor: { bytesIn, bytesOut }, decompressor: { ... } }, zlib: ..., zstd: ... }`
    pub fn document(&self) -> bson::RawDocumentBuf {
        let mut document = bson::RawDocumentBuf::new();
        for compressor in ALL {
            let counters = &self.counters[compressor.index()];
            let value = |at: usize| counters[at].load(Ordering::Relaxed);
            let entry = bson::rawdoc! {
                "compressor": { "bytesIn": value(0), "bytesOut": value(1) },
                "decompressor": { "bytesIn": value(2), "bytesOut": value(3) },
            };
            let name: &bson::raw::CStr = compressor.name().try_into().expect("no NUL in the name");
            document.append(name, entry);
        }
        document
    }
}
