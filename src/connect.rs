//! The client options that a connection string cannot carry, set on the parsed `ClientOptions`.

use mongodb::options::{ClientOptions, DriverInfo, ServerApi, ServerApiVersion};
use napi_derive::napi;

use crate::error::{Error, Result};

/// The Stable API declaration (`serverApi`), already validated by the TypeScript layer.
#[napi(object)]
pub struct ServerApiOptions {
    /// `"1"`: the only version the server defines.
    pub version: String,
    pub strict: Option<bool>,
    pub deprecation_errors: Option<bool>,
}

/// `driverInfo`: a library wrapping rumongo names itself in the handshake.
#[napi(object)]
pub struct DriverInfoOptions {
    pub name: Option<String>,
    pub version: Option<String>,
    pub platform: Option<String>,
}

/// Options given next to the connection string (the official driver takes them only as objects).
#[napi(object)]
pub struct ConnectOptions {
    pub server_api: Option<ServerApiOptions>,
    pub driver_info: Option<DriverInfoOptions>,
    /// The password (decoded): the URI holds a stand-in for it, so that no message of the crate
    /// that quotes the URI can quote the password.
    pub password: Option<String>,
    /// Command events for `monitorCommands` listeners (see `events.rs`).
    pub monitor_commands: Option<bool>,
    /// Command events for OpenTelemetry spans.
    pub trace_commands: Option<bool>,
}

/// Parses `uri` and applies `options` to it.
pub async fn client_options(uri: &str, options: Option<ConnectOptions>) -> Result<ClientOptions> {
    let mut parsed = ClientOptions::parse(uri).await.map_err(Error::from_uri_error)?;
    let Some(options) = options else {
        return Ok(parsed);
    };
    if let (Some(credential), Some(password)) = (parsed.credential.as_mut(), options.password) {
        credential.password = Some(password);
    }
    if let Some(api) = options.server_api {
        let version = match api.version.as_str() {
            "1" => ServerApiVersion::V1,
            other => return Err(Error::Parse(format!("Invalid server API version={other}"))),
        };
        let server_api = ServerApi::builder()
            .version(version)
            .strict(api.strict)
            .deprecation_errors(api.deprecation_errors)
            .build();
        parsed.server_api = Some(server_api);
    }
    if let Some(info) = options.driver_info {
        if let Some(name) = info.name.filter(|name| !name.is_empty()) {
            let driver_info = DriverInfo::builder()
                .name(name)
                .version(info.version)
                .platform(info.platform)
                .build();
            parsed.driver_info = Some(driver_info);
        }
    }
    Ok(parsed)
}
