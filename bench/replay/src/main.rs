//! rumongo-replay: a MongoDB wire-protocol server that answers reads from pre-encoded documents,
//! so that a benchmark measures the client and not the server. See README.md.

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

use crate::commands::Server;
use crate::datasets::Collection;

const USAGE: &str =
    "usage: rumongo-replay [--port <port>] [--host <host>] [--docs <n>] [--load <name>=<path>]...";

struct Options {
    host: String,
    port: u16,
    docs: u64,
    loads: Vec<(String, String)>,
}

fn parse_options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        host: "127.0.0.1".into(),
        port: 27017,
        docs: 1_000_000,
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
async fn connection(stream: TcpStream, server: Arc<Server>) {
    if let Err(error) = wire::serve(stream, server).await {
        if !matches!(error.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) {
            eprintln!("rumongo-replay: connection closed: {error}");
        }
    }
}

/// Listens until SIGTERM or SIGINT.
async fn serve(options: Options) -> Result<(), String> {
    let server = Arc::new(Server::new(collections(&options)?));
    let address = (options.host.as_str(), options.port);
    let listener = TcpListener::bind(address)
        .await
        .map_err(|error| format!("listen on {address:?}: {error}"))?;
    let mut terminate = signal(SignalKind::terminate()).map_err(|error| error.to_string())?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|error| error.to_string())?;
    let local = listener.local_addr().map_err(|error| error.to_string())?;
    // The line scripts/replay.mjs waits for; with --port 0 it carries the port picked.
    println!("replay ready mongodb://{local}/");
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(connection(stream, server.clone()));
                }
                Err(error) => {
                    // Such as EMFILE: wait for connections to close rather than spin.
                    eprintln!("rumongo-replay: accept: {error}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = terminate.recv() => return Ok(()),
            _ = interrupt.recv() => return Ok(()),
        }
    }
}
