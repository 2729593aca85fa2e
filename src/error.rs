//! One error type for the addon and its single conversion into a JS error.
//!
//! The TypeScript layer rebuilds the official driver's error classes, so the JS error carries a
//! machine-readable payload: `RUMONGO_ERROR_PREFIX` followed by a JSON object with the kind, the
//! message and, for server errors, `code`, `codeName` and `errorLabels`.

use mongodb::error::ErrorKind;
use serde_json::json;

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
    /// A read of a cursor whose earlier read failed.
    #[error("cursor is exhausted: an earlier read failed")]
    CursorFailed,
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
            Error::CursorFailed => json!({ "kind": "cursorExhausted", "message": self.to_string() }),
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

fn driver_payload(error: &mongodb::error::Error) -> serde_json::Value {
    let labels: Vec<&String> = error.labels().iter().collect();
    let message = error.kind.to_string();
    match error.kind.as_ref() {
        ErrorKind::Command(command) => json!({
            "kind": "server",
            "message": command.message,
            "code": command.code,
            "codeName": command.code_name,
            "errorLabels": labels,
        }),
        ErrorKind::ServerSelection { message, .. } => {
            json!({ "kind": "serverSelection", "message": message })
        }
        ErrorKind::Io(_) | ErrorKind::ConnectionPoolCleared { .. } => {
            json!({ "kind": "network", "message": message, "errorLabels": labels })
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
        // `{ ok: 0 }` without a `code`: still the server's refusal, a MongoServerError (without a
        // code) in the official driver. The crate keeps neither its `errmsg` nor the reply.
        ErrorKind::InvalidResponse { message, .. } if message.starts_with(COMMAND_ERROR_WITHOUT_CODE) => {
            json!({
                "kind": "server",
                "message": "the server refused the command without an error code",
                "errorLabels": labels,
            })
        }
        ErrorKind::Authentication { message, .. } => json!({ "kind": "authentication", "message": message }),
        ErrorKind::DnsResolve { message, .. } | ErrorKind::InvalidTlsConfig { message, .. } => {
            json!({ "kind": "parse", "message": message })
        }
        ErrorKind::Shutdown => json!({ "kind": "closed", "message": "client is closed", "what": "client" }),
        _ => json!({ "kind": "driver", "message": message, "errorLabels": labels }),
    }
}

impl From<Error> for napi::Error {
    fn from(error: Error) -> Self {
        napi::Error::new(
            napi::Status::GenericFailure,
            format!("{RUMONGO_ERROR_PREFIX}{}", error.payload()),
        )
    }
}
