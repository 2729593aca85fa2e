use crate::error::{Error, ErrorKind, Result};

/// Decompresses the given message with the decompression algorithm indicated by the given
/// ID. Returns an error if decompression fails or if the ID is unsupported.
pub(crate) fn decompress_message(message: &[u8], compressor_id: u8) -> Result<Vec<u8>> {
    if compressor_id == super::NOOP_COMPRESSOR_ID {
        return Ok(message.into());
    }

    #[cfg(feature = "zstd-compression")]
    if compressor_id == super::ZSTD_COMPRESSOR_ID {
        return decompress_zstd(message);
    }

    #[cfg(feature = "zlib-compression")]
    if compressor_id == super::ZLIB_COMPRESSOR_ID {
        return decompress_zlib(message);
    }

    #[cfg(feature = "snappy-compression")]
    if compressor_id == super::SNAPPY_COMPRESSOR_ID {
        return decompress_snappy(message);
    }

    Err(unsupported_compressor(compressor_id))
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
fn decompress_zstd(message: &[u8]) -> Result<Vec<u8>> {
    let mut decompressed = Vec::new();
    zstd::stream::copy_decode(message, &mut decompressed).map_err(|error| ErrorKind::Internal {
        message: format!("Could not decompress message with zstd: {error}"),
    })?;
    Ok(decompressed)
}

#[cfg(feature = "zlib-compression")]
fn decompress_zlib(message: &[u8]) -> Result<Vec<u8>> {
    use std::io::Write;

    use flate2::write::ZlibDecoder;

    let mut decoder = ZlibDecoder::new(Vec::new());
    // rumongo patch: bytes that are not zlib's fail here as they fail in `finish` (the crate's `?`
    // made them an I/O error: a network error, retried, that clears the pool).
    decoder
        .write_all(message)
        .map_err(|error| ErrorKind::Internal {
            message: format!("Could not decompress message with zlib: {error}"),
        })?;
    decoder.finish().map_err(|error| {
        ErrorKind::Internal {
            message: format!("Could not decompress message with zlib: {error}"),
        }
        .into()
    })
}

#[cfg(feature = "snappy-compression")]
fn decompress_snappy(message: &[u8]) -> Result<Vec<u8>> {
    use snap::raw::Decoder;

    let mut decoder = Decoder::new();
    decoder.decompress_vec(message).map_err(|error| {
        ErrorKind::Internal {
            message: format!("Could not decompress message with snappy: {error}"),
        }
        .into()
    })
}
