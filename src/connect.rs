//! The client options that a connection string cannot carry, set on the parsed `ClientOptions`.

use std::net::SocketAddr;

use mongodb::options::{ClientOptions, DriverInfo, ResolverConfig, ServerApi, ServerApiVersion};
use napi_derive::napi;

use crate::{
    error::{Error, Result},
    oidc::{self, OidcCallbackFunction},
};

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
    /// The name servers `node:dns` uses (`dns.getServers()`, `ip` or `ip:port`), for the SRV and
    /// TXT lookups of a `mongodb+srv` connection string: the official driver resolves them with
    /// `node:dns`, so `dns.setServers()` applies to both drivers.
    pub dns_servers: Option<Vec<String>>,
    /// The OIDC callback passed to `connect` is `OIDC_HUMAN_CALLBACK` (else `OIDC_CALLBACK`).
    pub oidc_human_callback: Option<bool>,
}

/// `dns.getServers()` entries as socket addresses (port 53 unless given).
fn resolver_config(servers: &[String]) -> Result<ResolverConfig> {
    let addresses = servers
        .iter()
        .map(|server| {
            server
                .parse::<SocketAddr>()
                .or_else(|_| server.parse().map(|ip| SocketAddr::new(ip, 53)))
                .map_err(|_| Error::InvalidArgument(format!("invalid DNS server address {server}")))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ResolverConfig::with_name_servers(&addresses))
}

/// Parses `uri` and applies `options` and the OIDC callback to it.
pub async fn client_options(
    uri: &str,
    options: Option<ConnectOptions>,
    oidc_callback: Option<OidcCallbackFunction>,
) -> Result<ClientOptions> {
    let dns_servers = options
        .as_ref()
        .and_then(|options| options.dns_servers.as_deref());
    let mut parsed = match dns_servers {
        Some(servers) if !servers.is_empty() => {
            ClientOptions::parse(uri)
                .resolver_config(resolver_config(servers)?)
                .await
        }
        _ => ClientOptions::parse(uri).await,
    }
    .map_err(Error::from_uri_error)?;
    let Some(options) = options else {
        return Ok(parsed);
    };
    if let (Some(credential), Some(password)) = (parsed.credential.as_mut(), options.password) {
        credential.password = Some(password);
    }
    if let (Some(credential), Some(function)) = (parsed.credential.as_mut(), oidc_callback) {
        credential.oidc_callback = oidc::callback(function, options.oidc_human_callback.unwrap_or(false));
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
