//! One error type for the addon and its single conversion into a JS error.
//!
//! The TypeScript layer rebuilds the official driver's error classes, so the JS error carries a
//! machine-readable payload: `RUMONGO_ERROR_PREFIX` followed by a JSON object with the kind, the
//! message and, for server errors, `code`, `codeName` and `errorLabels`.

use mongodb::error::ErrorKind;
use serde_json::json;

use crate::oidc::CallbackFailure;

/// Marks a native error message whose remainder is a JSON payload for `ts/errors.ts`.
pub const RUMONGO_ERROR_PREFIX: &str = "rumongo-error:";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller passed something the driver cannot use.
    #[error("{0}")]
    InvalidArgument(String),
    /// The connection string (or an option merged into it) is invalid.
    #[error("{0}")]
    Parse(String),
    /// An operation on a client or cursor that was already closed.
    #[error("{0} is closed")]
    Closed(&'static str),
    /// An operation in flight when its client closed (the official driver's message).
    #[error("Operation interrupted because client was closed")]
    ClientClosed,
    /// A read of a cursor whose earlier read failed.
    #[error("cursor is exhausted: an earlier read failed")]
    CursorFailed,
    /// A getMore left running by its cursor's `close()` that the server did not answer in time
    /// (see `SharedCursor::read`): dropped, its command events end with this.
    #[error("Cursor is exhausted: it was closed during this getMore, which the server did not answer")]
    CursorClosed,
    /// BSON that does not parse: from the server, or a corrupted buffer from the JS side.
    #[error("invalid BSON: {0}")]
    Bson(#[from] bson::error::Error),
    /// BSON whose framing is broken, found by rumongo's own checks.
    #[error("invalid BSON: {0}")]
    MalformedBson(&'static str),
    /// A bug in rumongo, reported instead of crashing the process.
    #[error("internal error: {0}")]
    Internal(&'static str),
    /// The server sent something the driver cannot read.
    #[error("invalid server response: {0}")]
    InvalidResponse(&'static str),
    /// The operation's `timeoutMS` expired (client-side deadline, see `deadline.rs`).
    #[error("operation timed out: timeoutMS of {0} ms expired")]
    OperationTimeout(u64),
    /// One round trip to the server took longer than `socketTimeoutMS`.
    #[error("no reply from the server within socketTimeoutMS ({0} ms)")]
    SocketTimeout(u64),
    #[error(transparent)]
    Driver(#[from] mongodb::error::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Classifies a failure to parse a connection string: the crate reports it as an invalid
    /// argument, the official driver as a `MongoParseError`.
    pub fn from_uri_error(error: mongodb::error::Error) -> Self {
        match error.kind.as_ref() {
            ErrorKind::InvalidArgument { message, .. } => Error::Parse(message.clone()),
            _ => Error::Driver(error),
        }
    }

    fn payload(&self) -> serde_json::Value {
        match self {
            Error::InvalidArgument(message) => json!({ "kind": "invalidArgument", "message": message }),
            Error::Parse(message) => json!({ "kind": "parse", "message": message }),
            Error::Closed(what) => json!({ "kind": "closed", "message": self.to_string(), "what": what }),
            Error::ClientClosed => json!({ "kind": "clientClosed", "message": self.to_string() }),
            Error::CursorFailed | Error::CursorClosed => {
                json!({ "kind": "cursorExhausted", "message": self.to_string() })
            }
            Error::Bson(_) | Error::MalformedBson(_) => {
                json!({ "kind": "bson", "message": self.to_string() })
            }
            Error::OperationTimeout(_) => json!({ "kind": "operationTimeout", "message": self.to_string() }),
            Error::SocketTimeout(_) => json!({ "kind": "networkTimeout", "message": self.to_string() }),
            Error::InvalidResponse(_) | Error::Internal(_) => {
                json!({ "kind": "driver", "message": self.to_string() })
            }
            Error::Driver(error) => driver_payload(error),
        }
    }
}

/// What the crate's `Checked` conversions say (mongodb 3.9 `checked.rs`): a `TryFromIntError`, or
/// an overflow.
const CHECKED_ARITHMETIC_MESSAGES: [&str; 2] = [
    "out of range integral type conversion attempted",
    "checked arithmetic failure",
];

/// How the crate reports an `ok: 0` reply it cannot read as a command error (mongodb 3.9
/// `client/executor.rs`).
const COMMAND_ERROR_WITHOUT_CODE: &str = "error deserializing command error:";

/// How the vendored crate refuses a malformed reply, in the official driver's words (vendor/README.md,
/// `Message::read_op_common`, `read_op_compressed_from`), and the class the official driver throws
/// for each (the payload's kind): MongoParseError for a negative message length, its own
/// MongoRuntimeError for a document sequence, its `readInt32LE`'s `RangeError` for a length past
/// the message's end, js-bson's `BSONOffsetError` for a body whose length is wrong,
/// MongoDecompressionError for a compressed reply it cannot decompress.
const NODE_PARSE_FAILURES: [(&str, &str); 10] = [
    ("Message size cannot be negative: ", "parse"),
    ("OP_MSG Payload Type 1 detected unsupported protocol", "driver"),
    ("Attempt to access memory outside buffer bounds: ", "range"),
    ("Input must be at least 5 bytes, ", "bsonOffset"),
    ("BSON size cannot be negative", "bsonOffset"),
    ("Parsed documentSize (", "bsonOffset"),
    ("BSON documents must end in 0x00", "bsonOffset"),
    (
        "Server sent message compressed using an unsupported compressor.",
        "decompression",
    ),
    (
        "Message body and message header must be the same length",
        "decompression",
    ),
    // A compressed reply the compressor refused: node:zlib's plain `Error` (`Z_DATA_ERROR`) in
    // the official driver, or a missing package's error for snappy and zstd; so the class it
    // throws for the decompression failures it finds itself.
    ("Could not decompress message with ", "decompression"),
];

/// How the vendored crate's SRV host checks start their messages (vendor/README.md, `srv.rs`).
const SRV_HOST_MISMATCH: &str = "Server record does not ";

/// The labels the official driver can add to an error itself, in the order it adds them (a network
/// error of a command: `RetryableWriteError`, then `ResetPool`). The crate keeps labels in a set.
const LABEL_ORDER: [&str; 8] = [
    "RetryableWriteError",
    "TransientTransactionError",
    "UnknownTransactionCommitResult",
    "ResumableChangeStreamError",
    "HandshakeError",
    "SystemOverloadedError",
    "RetryableError",
    "ResetPool",
];

/// An error's labels in a stable order: the official driver's own (`LABEL_ORDER`) first, then the
/// others (the server's) by name.
fn ordered_labels(error: &mongodb::error::Error) -> Vec<&String> {
    in_label_order(error.labels().iter().collect())
}

fn in_label_order(mut labels: Vec<&String>) -> Vec<&String> {
    labels.sort_by_key(|label| {
        let rank = LABEL_ORDER.iter().position(|known| known == label);
        (rank.unwrap_or(LABEL_ORDER.len()), label.as_str())
    });
    labels.dedup();
    labels
}

fn driver_payload(error: &mongodb::error::Error) -> serde_json::Value {
    let labels = ordered_labels(error);
    let message = error.kind.to_string();
    match error.kind.as_ref() {
        ErrorKind::Command(command) => json!({
            "kind": "server",
            "message": command.message,
            "code": command.code,
            "codeName": command.code_name,
            "errorLabels": labels,
        }),
        ErrorKind::ServerSelection { message, .. } => server_selection_payload(message),
        ErrorKind::Io(io) => {
            let mut payload = network_payload(io.kind(), &io.to_string(), None);
            payload["errorLabels"] = json!(labels);
            payload
        }
        ErrorKind::ConnectionPoolCleared { .. } => {
            json!({ "kind": "network", "message": message, "errorLabels": labels })
        }
        ErrorKind::WaitQueueTimeout { address, .. } => {
            json!({ "kind": "waitQueueTimeout", "message": message, "address": address })
        }
        // The crate's checked arithmetic on lengths the server sent (a negative or too small
        // `messageLength`): a protocol fault, which the official driver reports as MongoParseError.
        ErrorKind::InvalidArgument { message, .. }
            if CHECKED_ARITHMETIC_MESSAGES.contains(&message.as_str()) =>
        {
            json!({ "kind": "parse", "message": format!("invalid message from the server: a length out of range ({message})") })
        }
        ErrorKind::InvalidArgument { message, .. } => {
            json!({ "kind": "invalidArgument", "message": message })
        }
        ErrorKind::InvalidResponse { message, .. } | ErrorKind::Internal { message, .. }
            if node_parse_failure(message).is_some() =>
        {
            node_parse_failure(message).unwrap()
        }
        // `{ ok: 0 }` without a `code`: still the server's refusal, a MongoServerError (without a
        // code) in the official driver. The crate keeps neither its `errmsg` nor the reply.
        ErrorKind::InvalidResponse { message, .. } if message.starts_with(COMMAND_ERROR_WITHOUT_CODE) => {
            json!({
                "kind": "server",
                "message": "the server refused the command without an error code",
                "errorLabels": labels,
            })
        }
        // A JS callback (OIDC) that threw or rejected: ts/errors.ts gives back the JS error.
        ErrorKind::Custom(_) if error.get_custom::<CallbackFailure>().is_some() => {
            let CallbackFailure(id) = error.get_custom::<CallbackFailure>().unwrap();
            json!({ "kind": "callbackFailure", "message": "the OIDC callback failed", "id": id })
        }
        ErrorKind::Authentication { message, .. } => match server_refusal(error) {
            // The server refused the login: its own error, as the official driver reports it
            // ("Authentication failed.", 18), not the crate's "SCRAM failure: ..." wrapping.
            // The login's labels (`HandshakeError`) are on the crate's wrapping error.
            Some(refusal) => {
                let mut payload = driver_payload(refusal);
                let labels = in_label_order(error.labels().iter().chain(refusal.labels()).collect());
                payload["errorLabels"] = json!(labels);
                payload
            }
            None => json!({ "kind": "authentication", "message": message }),
        },
        // A host of the SRV record outside the domain of the connection string: the vendored
        // crate says it in the official driver's words, which throws it as MongoAPIError.
        ErrorKind::DnsResolve { message, .. } if message.starts_with(SRV_HOST_MISMATCH) => {
            json!({ "kind": "api", "message": message })
        }
        ErrorKind::DnsResolve { message, .. } => {
            dns_payload(message).unwrap_or_else(|| json!({ "kind": "parse", "message": message }))
        }
        ErrorKind::InvalidTlsConfig { message, .. } => json!({ "kind": "parse", "message": message }),
        // js-bson's BSONError, the class the official driver's parser throws for such a reply (a
        // BSONOffsetError), not a MongoRuntimeError.
        kind if is_unparsable_bson(kind) => {
            json!({ "kind": "bson", "message": format!("invalid BSON: {message}") })
        }
        // A load balancer whose hello has no `serviceId`: the crate's message is the official
        // driver's, behind its own "The server does not support a database operation: ".
        ErrorKind::IncompatibleServer { message, .. } => {
            json!({ "kind": "compatibility", "message": message })
        }
        ErrorKind::Shutdown => json!({ "kind": "closed", "message": "client is closed", "what": "client" }),
        _ => json!({ "kind": "driver", "message": message, "errorLabels": labels }),
    }
}

/// The server's error reply that an authentication error wraps, when there is one.
fn server_refusal(error: &mongodb::error::Error) -> Option<&mongodb::error::Error> {
    // The crate keeps it boxed (`Option<Box<Error>>`), so the source's type is the box.
    let source = std::error::Error::source(error)?.downcast_ref::<Box<mongodb::error::Error>>()?;
    matches!(source.kind.as_ref(), ErrorKind::Command(_)).then_some(source)
}

/// The Node.js code of an I/O failure (`ECONNREFUSED`, ...) and the system call Node.js names with
/// it, as in the official driver's messages (`connect ECONNREFUSED 127.0.0.1:1`).
fn io_code(kind: std::io::ErrorKind, text: &str) -> Option<(&'static str, &'static str)> {
    use std::io::ErrorKind as Io;
    Some(match kind {
        Io::ConnectionRefused => ("connect", "ECONNREFUSED"),
        Io::TimedOut => ("connect", "ETIMEDOUT"),
        Io::HostUnreachable => ("connect", "EHOSTUNREACH"),
        Io::NetworkUnreachable => ("connect", "ENETUNREACH"),
        Io::AddrNotAvailable => ("connect", "EADDRNOTAVAIL"),
        Io::ConnectionReset => ("read", "ECONNRESET"),
        Io::ConnectionAborted => ("read", "ECONNABORTED"),
        Io::BrokenPipe => ("write", "EPIPE"),
        // std's getaddrinfo failure has no kind of its own, only this text.
        _ if text.contains("failed to lookup address information") => {
            if text.contains("Temporary failure") {
                ("getaddrinfo", "EAI_AGAIN")
            } else {
                ("getaddrinfo", "ENOTFOUND")
            }
        }
        _ => return None,
    })
}

/// A network error in the official driver's words. `address` is the server's `host:port`, when
/// known: a refused connection reads `connect ECONNREFUSED 127.0.0.1:1`, an unknown host
/// `getaddrinfo ENOTFOUND db.example.com`.
fn network_payload(kind: std::io::ErrorKind, text: &str, address: Option<&str>) -> serde_json::Value {
    if let Some((message, code)) = tls_failure(text, address) {
        return json!({ "kind": "network", "message": message, "code": code });
    }
    let Some((syscall, code)) = io_code(kind, text) else {
        return json!({ "kind": "network", "message": text });
    };
    let target = match (syscall, address) {
        ("getaddrinfo", Some(address)) => Some(host_of(address)),
        (_, address) => address,
    };
    let message = match target {
        Some(target) => format!("{syscall} {code} {target}"),
        None => format!("{syscall} {code}"),
    };
    json!({ "kind": "network", "message": message, "code": code, "syscall": syscall, "address": address })
}

/// A refused server certificate in OpenSSL's words (the crate's verifier says them, see
/// vendor/README.md) and the `code` Node.js gives it.
const CERTIFICATE_REFUSALS: [(&str, &str); 8] = [
    (
        "unable to verify the first certificate",
        "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    ),
    ("self-signed certificate", "DEPTH_ZERO_SELF_SIGNED_CERT"),
    (
        "self-signed certificate in certificate chain",
        "SELF_SIGNED_CERT_IN_CHAIN",
    ),
    (
        "unable to get local issuer certificate",
        "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
    ),
    ("certificate has expired", "CERT_HAS_EXPIRED"),
    ("certificate is not yet valid", "CERT_NOT_YET_VALID"),
    ("certificate signature failure", "CERT_SIGNATURE_FAILURE"),
    ("certificate revoked", "CERT_REVOKED"),
];

/// How Node.js's `checkServerIdentity` starts its message (the crate's verifier writes the rest).
const NAME_MISMATCH: &str = "Hostname/IP does not match certificate's altnames: ";

/// A TLS alert from the server as rustls names it, and as OpenSSL (so Node.js) reports it: its
/// message without the thread id and source file OpenSSL adds, and Node.js's `code`.
const TLS_ALERTS: [(&str, &str, &str); 4] = [
    (
        "CertificateRequired",
        "error:0A00045C:SSL routines:ssl3_read_bytes:tlsv13 alert certificate required:SSL alert number 116",
        "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED",
    ),
    (
        "UnknownCA",
        "error:0A000418:SSL routines:ssl3_read_bytes:tlsv1 alert unknown ca:SSL alert number 48",
        "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA",
    ),
    (
        "BadCertificate",
        "error:0A000412:SSL routines:ssl3_read_bytes:sslv3 alert bad certificate:SSL alert number 42",
        "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE",
    ),
    (
        "HandshakeFailure",
        "error:0A000410:SSL routines:ssl3_read_bytes:sslv3 alert handshake failure:SSL alert number 40",
        "ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE",
    ),
];

/// A TLS failure as Node.js reports it to the official driver: its message and `code` (none for a
/// closed connection). rustls's
/// own texts (with a docs.rs link for a missing close_notify) never reach the user.
fn tls_failure(text: &str, address: Option<&str>) -> Option<(String, Option<&'static str>)> {
    if let Some((refusal, code)) = CERTIFICATE_REFUSALS.iter().find(|(refusal, _)| *refusal == text) {
        return Some((refusal.to_string(), Some(code)));
    }
    if text.starts_with(NAME_MISMATCH) {
        return Some((text.to_owned(), Some("ERR_TLS_CERT_ALTNAME_INVALID")));
    }
    if let Some(alert) = text.strip_prefix("received fatal alert: ") {
        let (_, message, code) = TLS_ALERTS.iter().find(|(name, ..)| *name == alert)?;
        return Some((message.to_string(), Some(code)));
    }
    if text == "tls handshake eof" {
        let message = "Client network socket disconnected before secure TLS connection was established";
        return Some((message.to_owned(), Some("ECONNRESET")));
    }
    if text.starts_with("peer closed connection without sending TLS close_notify") {
        // A server selection's error is its monitor's, which the official driver names so.
        let message = match address {
            Some(address) => format!("connection <monitor> to {address} closed"),
            None => "connection closed".to_owned(),
        };
        return Some((message, None));
    }
    None
}

/// `host` of `host:port` (an IPv6 host is bracketed: `[::1]:27017`).
fn host_of(address: &str) -> &str {
    address
        .rsplit_once(':')
        .map_or(address, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']')
}

/// A server-selection failure as the official driver reports it: the first server's error as the
/// message, and each server's address, type and error. The crate gives the topology only as text
/// (`Topology: { Type: Unknown, Servers: [ { Address: h:p, Type: Unknown, Error: Kind: I/O error:
/// Connection refused (os error 111), labels: {...}, ... } ] }`), read here and nowhere else.
fn server_selection_payload(message: &str) -> serde_json::Value {
    let (summary, topology) = message
        .split_once(". Topology: { Type: ")
        .unwrap_or((message, ""));
    let topology_type = topology.split([',', ' ']).next().unwrap_or("Unknown");
    let servers: Vec<serde_json::Value> = topology
        .split("{ Address: ")
        .skip(1)
        .filter_map(server_report)
        .collect();
    json!({
        "kind": "serverSelection",
        "message": selection_timeout_message(summary),
        "topologyType": topology_type,
        "servers": servers,
    })
}

/// The official driver's message for a selection that found no suitable server: `Server
/// selection timed out after 3000 ms` (the vendored crate starts its own with it, then says why in
/// its own terms, a Rust debug dump of the read preference among them).
fn selection_timeout_message(summary: &str) -> String {
    match summary.split_once(" ms: ") {
        Some((timed_out, _)) if timed_out.starts_with("Server selection timed out after ") => {
            format!("{timed_out} ms")
        }
        _ => format!(
            "Server selection timed out: {}",
            summary.trim_start_matches("Server selection timeout: ")
        ),
    }
}

/// One server of a topology's text: `h:p, Type: Unknown, Error: Kind: ..., labels: {...}, ...`.
fn server_report(entry: &str) -> Option<serde_json::Value> {
    let (address, rest) = entry.split_once(", Type: ")?;
    let server_type = rest.split([',', ' ']).next()?;
    let error = rest.split_once(", Error: Kind: ").and_then(|(_, error)| {
        let (text, rest) = error.split_once(", labels: {")?;
        let labels: Vec<&str> = rest
            .split_once('}')?
            .0
            .split(", ")
            .filter_map(|label| label.strip_prefix('"')?.strip_suffix('"'))
            .collect();
        let mut payload = match text.strip_prefix("I/O error: ") {
            Some(io) => network_payload(io_kind_of(io), io, Some(address)),
            None => json!({ "kind": "driver", "message": text }),
        };
        payload["errorLabels"] = json!(labels);
        Some(payload)
    });
    Some(json!({ "address": address, "type": server_type, "error": error }))
}

/// The kind of an I/O error known only by its text: from its `(os error N)`.
fn io_kind_of(text: &str) -> std::io::ErrorKind {
    text.rsplit_once("(os error ")
        .and_then(|(_, code)| code.trim_end_matches(')').parse().ok())
        .map_or(std::io::ErrorKind::Other, |code| {
            std::io::Error::from_raw_os_error(code).kind()
        })
}

/// A failed SRV or TXT lookup, a network condition: the official driver gives Node.js's
/// `querySrv ENOTFOUND _mongodb._tcp.<host>`. `None` for a DNS answer the crate refuses (records
/// outside the domain, ...), which is a configuration error.
fn dns_payload(message: &str) -> Option<serde_json::Value> {
    let syscall = if message.contains("query_type: TXT") {
        "queryTxt"
    } else {
        "querySrv"
    };
    let code = if message.contains("no records found") {
        if message.ends_with("(NODATA)") {
            "ENODATA"
        } else {
            "ENOTFOUND"
        }
    } else if message.contains("timed out") {
        "ETIMEOUT"
    } else {
        return None;
    };
    let name = message
        .split_once("name: Name(\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(name, _)| name.trim_end_matches('.'));
    let message = match name {
        Some(name) => format!("{syscall} {code} {name}"),
        None => format!("{syscall} {code}"),
    };
    // node:dns's own error, which the official driver throws as it is (a plain `Error`).
    Some(json!({ "kind": "dns", "message": message, "code": code, "syscall": syscall, "hostname": name }))
}

/// A malformed reply the vendored crate refused as the official driver does (`NODE_PARSE_FAILURES`):
/// the official driver's message, without the crate's "The server returned an invalid reply ..."
/// in front, and for a `BSONOffsetError` its `offset`, which the class adds to the message itself.
fn node_parse_failure(message: &str) -> Option<serde_json::Value> {
    let (_, kind) = NODE_PARSE_FAILURES
        .iter()
        .find(|(start, _)| message.starts_with(start))?;
    if *kind != "bsonOffset" {
        return Some(json!({ "kind": kind, "message": message }));
    }
    let (text, offset) = message.rsplit_once(". offset: ")?;
    Some(json!({ "kind": kind, "message": text, "offset": offset.parse::<u64>().ok()? }))
}

/// Whether the crate could not parse BSON it received (a reply a broken server or proxy cut or
/// bent: a wrong document or message length).
fn is_unparsable_bson(kind: &ErrorKind) -> bool {
    match kind {
        ErrorKind::Bson(_) | ErrorKind::BsonDeserialization(_) => true,
        ErrorKind::InvalidResponse { message, .. } => message.contains("BSON error"),
        _ => false,
    }
}

/// A failure on a connection to the server at `address` (a heartbeat's), as `napi::Error`'s
/// reason carries it: a network error names the server, as the official driver's do
/// (`connect ECONNREFUSED 127.0.0.1:27017`), where an operation's error cannot.
pub fn server_failure_reason(error: mongodb::error::Error, address: &str) -> String {
    let payload = match error.kind.as_ref() {
        ErrorKind::Io(io) => {
            let mut payload = network_payload(io.kind(), &io.to_string(), Some(address));
            payload["errorLabels"] = json!(ordered_labels(&error));
            payload
        }
        _ => Error::Driver(error).payload(),
    };
    format!("{RUMONGO_ERROR_PREFIX}{payload}")
}

impl From<Error> for napi::Error {
    fn from(error: Error) -> Self {
        napi::Error::new(
            napi::Status::GenericFailure,
            format!("{RUMONGO_ERROR_PREFIX}{}", error.payload()),
        )
    }
}
