use crate::error::{Error, ErrorKind, Result};

/// Decompresses the given message with the decompression algorithm indicated by the given
/// ID. Returns an error if decompression fails or if the ID is unsupported.
///
/// rumongo patch: exactly `size` bytes, the uncompressed size the message declares; fewer or more
/// fail with `size_mismatch`, more as soon as the decompressor gives one byte too many. The crate
/// decompressed whatever the bytes held: a reply of a few MB of zeros through zlib (a ratio of
/// 1000 and more) could ask for more memory than the machine has, and an allocation failure
/// aborts the process.
pub(crate) fn decompress_message(
    message: &[u8],
    compressor_id: u8,
    size: usize,
) -> Result<Vec<u8>> {
    let decompressed = decompress_at_most(message, compressor_id, size)?;
    if decompressed.len() != size {
        return Err(size_mismatch());
    }
    Ok(decompressed)
}

fn decompress_at_most(message: &[u8], compressor_id: u8, size: usize) -> Result<Vec<u8>> {
    if compressor_id == super::NOOP_COMPRESSOR_ID {
        return Ok(message.into());
    }

    #[cfg(feature = "zstd-compression")]
    if compressor_id == super::ZSTD_COMPRESSOR_ID {
        return decompress_zstd(message, size);
    }

    #[cfg(feature = "zlib-compression")]
    if compressor_id == super::ZLIB_COMPRESSOR_ID {
        return decompress_zlib(message, size);
    }

    #[cfg(feature = "snappy-compression")]
    if compressor_id == super::SNAPPY_COMPRESSOR_ID {
        return decompress_snappy(message, size);
    }

    Err(unsupported_compressor(compressor_id))
}

/// rumongo patch: a compressed message whose uncompressed size is not the one it declares, in the
/// official Node driver's words (`decompressResponse`), which throws it as a
/// MongoDecompressionError (the crate said "The server's message claims that the uncompressed
/// length is ..., but was computed to be ...").
pub(crate) fn size_mismatch() -> Error {
    ErrorKind::InvalidResponse {
        message: "Message body and message header must be the same length".into(),
    }
    .into()
}

/// rumongo patch: everything `decoder` gives, up to one byte more than `size` (enough to tell
/// that it has more), or the decompressor's failure in the crate's words.
#[cfg(any(feature = "zstd-compression", feature = "zlib-compression"))]
fn read_at_most(
    decoder: std::io::Result<impl std::io::Read>,
    size: usize,
    compressor: &str,
) -> Result<Vec<u8>> {
    use std::io::Read;

    let failure = |error: std::io::Error| ErrorKind::Internal {
        message: format!("Could not decompress message with {compressor}: {error}"),
    };
    let mut decompressed = Vec::with_capacity(size);
    decoder
        .map_err(failure)?
        .take(size as u64 + 1)
        .read_to_end(&mut decompressed)
        .map_err(failure)?;
    Ok(decompressed)
}

/// rumongo patch: a compressor the driver does not know, in the official Node driver's words
/// (`decompress`, mongodb 7 `lib/cmap/wire_protocol/compression.js`), which throws it as a
/// MongoDecompressionError (the crate said "Unsupported compressor ID returned from the server").
pub(crate) fn unsupported_compressor(compressor_id: impl std::fmt::Display) -> Error {
    ErrorKind::InvalidResponse {
        message: format!(
            "Server sent message compressed using an unsupported compressor. (Received \
             compressor ID {compressor_id})"
        ),
    }
    .into()
}

#[cfg(feature = "zstd-compression")]
fn decompress_zstd(message: &[u8], size: usize) -> Result<Vec<u8>> {
    read_at_most(zstd::stream::read::Decoder::new(message), size, "zstd")
}

#[cfg(feature = "zlib-compression")]
fn decompress_zlib(message: &[u8], size: usize) -> Result<Vec<u8>> {
    read_at_most(Ok(flate2::read::ZlibDecoder::new(message)), size, "zlib")
}

#[cfg(feature = "snappy-compression")]
fn decompress_snappy(message: &[u8], size: usize) -> Result<Vec<u8>> {
    use snap::raw::{decompress_len, Decoder};

    let failure = |error: snap::Error| ErrorKind::Internal {
        message: format!("Could not decompress message with snappy: {error}"),
    };
    // The length snappy's preamble declares, checked before any allocation.
    if decompress_len(message).map_err(failure)? != size {
        return Err(size_mismatch());
    }
    Decoder::new()
        .decompress_vec(message)
        .map_err(|error| failure(error).into())
}
