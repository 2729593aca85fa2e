//! rumongo-replay: a MongoDB wire-protocol server that answers reads from pre-encoded documents,
//! so that a benchmark measures the client and not the server. See README.md.

mod change_stream;
mod commands;
mod compression;
mod datasets;
mod generate;
mod wire;

use std::collections::HashMap;
use std::io::ErrorKind;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};

use crate::commands::{ReplicaSet, Role, Server};
use crate::datasets::Collection;

const USAGE: &str = "usage: rumongo-replay [--port <port>] [--host <host>] [--docs <n>] \
                     [--replica-set <members>] [--load <name>=<path>]...";

struct Options {
    host: String,
    port: u16,
    docs: u64,
    /// `--replica-set N`: N listeners answering as the members of replica set `rs` (the first on
    /// `--port`, the others on the next ports, or all on free ports with `--port 0`).
    members: Option<usize>,
    loads: Vec<(String, String)>,
}

fn parse_options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        host: "127.0.0.1".into(),
        port: 27017,
        docs: 1_000_000,
        members: None,
        loads: Vec::new(),
    };
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--host" => options.host = value()?,
            "--port" => options.port = value()?.parse().map_err(|_| "--port: not a port number")?,
            "--docs" => {
                options.docs = value()?.parse().map_err(|_| "--docs: not a number")?;
                // `n` is an int32 holding the index.
                if options.docs > 1 << 31 {
                    return Err("--docs: at most 2^31 documents".into());
                }
            }
            "--replica-set" => {
                let members = value()?.parse().map_err(|_| "--replica-set: not a number")?;
                if !(1..=50).contains(&members) {
                    return Err("--replica-set: 1 to 50 members".into());
                }
                options.members = Some(members);
            }
            "--load" => {
                let load = value()?;
                let (name, path) = load.split_once('=').ok_or("--load: expected <name>=<path>")?;
                options.loads.push((name.into(), path.into()));
            }
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    Ok(options)
}

fn collections(options: &Options) -> Result<HashMap<String, Collection>, String> {
    let mut collections: HashMap<String, Collection> = generate::DATASETS
        .iter()
        .map(|&(name, generate)| {
            (
                name.to_owned(),
                Collection::generated(name, generate, options.docs),
            )
        })
        .collect();
    for (name, path) in &options.loads {
        let bytes = std::fs::read(path).map_err(|error| format!("--load {name}={path}: {error}"))?;
        let collection =
            Collection::load(&bytes).map_err(|error| format!("--load {name}={path}: {error}"))?;
        collections.insert(name.clone(), collection);
    }
    Ok(collections)
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match parse_options(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("rumongo-replay: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match serve(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rumongo-replay: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Serves one client; reports malformed messages, not clients that drop their sockets.
async fn connection(stream: TcpStream, server: Arc<Server>, role: Role) {
    if let Err(error) = wire::serve(stream, server, role).await {
        if !matches!(error.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) {
            eprintln!("rumongo-replay: connection closed: {error}");
        }
    }
}

/// Binds the listeners: one for a standalone, one per member of a replica set.
async fn listen(options: &Options) -> Result<(Vec<(TcpListener, Role)>, String), String> {
    let mut listeners = Vec::new();
    for index in 0..options.members.unwrap_or(1) {
        let port = match options.port {
            0 => 0,
            port => port
                .checked_add(index as u16)
                .ok_or("--port: no room for the members' ports")?,
        };
        let address = (options.host.as_str(), port);
        let listener = TcpListener::bind(address)
            .await
            .map_err(|error| format!("listen on {address:?}: {error}"))?;
        listeners.push(listener);
    }
    let hosts = listeners
        .iter()
        .map(|listener| listener.local_addr().map(|local| local.to_string()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| error.to_string())?;
    if options.members.is_none() {
        let uri = format!("mongodb://{}/", hosts[0]);
        let roles = listeners.into_iter().map(|listener| (listener, Role::default()));
        return Ok((roles.collect(), uri));
    }
    let uri = format!("mongodb://{}/?replicaSet=rs", hosts.join(","));
    let set = Arc::new(ReplicaSet {
        name: "rs".into(),
        hosts,
    });
    let roles = (0..listeners.len()).map(|index| Role {
        set: Some(set.clone()),
        index,
    });
    Ok((listeners.into_iter().zip(roles).collect(), uri))
}

/// Accepts connections on `listener` for as long as the process runs.
async fn accept(listener: TcpListener, server: Arc<Server>, role: Role) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(connection(stream, server.clone(), role.clone()));
            }
            Err(error) => {
                // Such as EMFILE: wait for connections to close rather than spin.
                eprintln!("rumongo-replay: accept: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Listens until SIGTERM or SIGINT.
async fn serve(options: Options) -> Result<(), String> {
    let server = Arc::new(Server::new(collections(&options)?));
    let (listeners, uri) = listen(&options).await?;
    let mut terminate = signal(SignalKind::terminate()).map_err(|error| error.to_string())?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|error| error.to_string())?;
    for (listener, role) in listeners {
        tokio::spawn(accept(listener, server.clone(), role));
    }
    // The line scripts/replay.mjs waits for; with --port 0 it carries the ports picked.
    println!("replay ready {uri}");
    tokio::select! {
        _ = terminate.recv() => Ok(()),
        _ = interrupt.recv() => Ok(()),
    }
}
