//! Native functions only tests and benchmarks call, compiled with the `test-hooks` feature:
//! `npm test` and `npm run bench` build with it (`scripts/build.mjs --test-hooks`), the published
//! build (`npm run build`) does not.

use std::sync::Arc;

use napi::{
    bindgen_prelude::{Buffer, PromiseRaw},
    Env,
};
use napi_derive::napi;

use crate::{
    batch::array_documents,
    connect::{client_options, ConnectOptions},
    error::{Error, Result},
    format::{encode_documents, BatchOutput, DocumentBatch, SharedReply},
    task::{on_rayon, spawn},
};

/// Encodes the batch in a BSON document `{ batch: [doc, ...] }` the way a server reply's
/// `firstBatch` is encoded: lets tests and benchmarks feed any bytes through the same path.
#[napi(catch_unwind)]
pub fn encode_test_batch(reply: Buffer, output: BatchOutput) -> napi::Result<DocumentBatch> {
    // Only the Arrow output keeps the reply past this call; the others read the documents where
    // they are, as a query reads its server reply (a copy here would be a cost no query pays, in
    // the side-by-side JSON bench, bench/json_anchor.mjs).
    if let BatchOutput::ArrowRaw = output {
        let shared: SharedReply = Arc::new(reply.to_vec());
        let documents = test_batch_documents((*shared).as_ref())?;
        return Ok(encode_documents(&documents, output, &shared)?);
    }
    let unused: SharedReply = Arc::new(Vec::<u8>::new());
    Ok(encode_documents(&test_batch_documents(&reply)?, output, &unused)?)
}

/// The bytes of the spare JSON text buffers kept for the next batches (see `handover::TextBuffer`).
#[napi]
pub fn test_spare_text_bytes() -> u32 {
    // At most `SPARE_TEXT_LIMIT_BYTES` (32 MiB).
    crate::handover::spare_text_bytes() as u32
}

/// The documents of a `{ batch: [doc, ...] }` reply.
fn test_batch_documents(reply: &[u8]) -> Result<Vec<&[u8]>> {
    let reply = bson::RawDocument::from_bytes(reply).map_err(Error::from)?;
    array_documents(reply.get_array("batch").map_err(Error::from)?)
}

/// Panics in the place `place` names (`"sync"`: the exported function itself, `"async"`: a spawned
/// future, `"decoder"`: a rayon decode task), which must reach JS as an error.
#[napi(catch_unwind, ts_return_type = "Promise<void>")]
pub fn test_panic(env: &Env, place: String) -> napi::Result<PromiseRaw<'_, ()>> {
    match place.as_str() {
        "sync" => panic_now("sync").map_err(napi::Error::from),
        "async" => spawn(env, async { panic_now("async") }),
        "decoder" => spawn(env, on_rayon(|| panic_now("decoder"))),
        _ => Err(Error::InvalidArgument(format!("testPanic: unknown place '{place}'")).into()),
    }
}

fn panic_now<T>(place: &str) -> Result<T> {
    panic!("rumongo test panic ({place})")
}

/// What the connection string path makes of `uri` with the name servers `dnsServers` (as
/// `NativeClient.connect` gets them): the seed list, and the options a `mongodb+srv` TXT record
/// can set, as JSON. A test can check the SRV and TXT lookups against a DNS server on loopback
/// without connecting: the hosts an SRV record names must be subdomains, which only DNS resolves,
/// and connections resolve names with the system resolver, which a test cannot point anywhere.
#[napi(catch_unwind)]
pub async fn test_resolve_connection_string(uri: String, dns_servers: Vec<String>) -> napi::Result<String> {
    let options = ConnectOptions {
        server_api: None,
        driver_info: None,
        password: None,
        monitor_commands: None,
        trace_commands: None,
        dns_servers: Some(dns_servers),
        oidc_human_callback: None,
    };
    let parsed = client_options(&uri, Some(options), None).await?;
    let resolved = serde_json::json!({
        "hosts": parsed.hosts.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "replicaSet": parsed.repl_set_name,
        "authSource": parsed.credential.as_ref().and_then(|credential| credential.source.clone()),
        "loadBalanced": parsed.load_balanced,
    });
    Ok(resolved.to_string())
}
