//! MONGODB-OIDC with a JS callback: `authMechanismProperties.OIDC_CALLBACK` (or
//! `OIDC_HUMAN_CALLBACK`) is a JS function, which a connection string cannot carry (the crate refuses
//! it there: "OIDC_CALLBACK must only be specified through client options"). The TypeScript layer
//! (`ts/oidc.ts`) wraps it in one function of the shape below and passes it here apart from the URI;
//! the crate calls it, from its own threads, whenever a connection needs a token.

use std::time::{Duration, Instant};

use futures_util::FutureExt;
use mongodb::options::oidc::{Callback, CallbackContext, IdpServerResponse};
use napi::{bindgen_prelude::Promise, threadsafe_function::ThreadsafeFunction, Status};
use napi_derive::napi;

/// What the crate knows when it asks for a token, as `ts/oidc.ts` turns it into the official
/// driver's `OIDCCallbackParams`.
#[napi(object, object_from_js = false)]
pub struct OidcCallbackContext {
    /// The callback API version (1).
    pub version: u32,
    /// Milliseconds left before the crate stops waiting (the official driver's `timeoutContext`).
    pub timeout_ms: Option<f64>,
    /// The refresh token of the last answer (human flow only).
    pub refresh_token: Option<String>,
    /// The identity provider the server named (human flow only).
    pub idp_info: Option<OidcIdpInfo>,
}

#[napi(object, object_from_js = false)]
pub struct OidcIdpInfo {
    pub issuer: String,
    pub client_id: Option<String>,
    pub request_scopes: Option<Vec<String>>,
}

/// The callback's answer, already checked by `ts/oidc.ts` (an `accessToken` string).
#[napi(object, object_to_js = false)]
pub struct OidcCallbackResult {
    pub access_token: String,
    pub expires_in_seconds: Option<f64>,
    pub refresh_token: Option<String>,
}

/// The wrapped JS callback. Weak: a client waiting for nothing keeps no process alive.
pub type OidcCallbackFunction = ThreadsafeFunction<
    OidcCallbackContext,
    Promise<OidcCallbackResult>,
    OidcCallbackContext,
    Status,
    false,
    true,
>;

/// A JS callback that threw or rejected: `ts/oidc.ts` keeps the JS error under this number and
/// rejects with the number, so the error reaches the user as the official driver gives it (the
/// callback's own error, or the official class for a bad answer), never through the crate's text.
#[derive(Debug)]
pub struct CallbackFailure(pub u32);

/// The crate's OIDC callback calling `function`: a machine callback, or a human one
/// (`OIDC_HUMAN_CALLBACK`, which also gets the identity provider and refresh token).
pub fn callback(function: OidcCallbackFunction, human: bool) -> Callback {
    let function = std::sync::Arc::new(function);
    let call = move |context: CallbackContext| {
        let function = function.clone();
        async move {
            let timeout_ms = context
                .timeout
                .map(|deadline| deadline.saturating_duration_since(Instant::now()).as_millis() as f64);
            let context = OidcCallbackContext {
                version: context.version,
                timeout_ms,
                refresh_token: context.refresh_token,
                idp_info: context.idp_info.map(|info| OidcIdpInfo {
                    issuer: info.issuer,
                    client_id: info.client_id,
                    request_scopes: info.request_scopes,
                }),
            };
            let failed = |error: napi::Error| {
                mongodb::error::Error::custom(CallbackFailure(error.reason.parse().unwrap_or(0)))
            };
            let answer = function
                .call_async_catch(context)
                .await
                .map_err(failed)?
                .await
                .map_err(failed)?;
            Ok(IdpServerResponse::builder()
                .access_token(answer.access_token)
                .expires(
                    answer
                        .expires_in_seconds
                        .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
                        .map(|seconds| Instant::now() + Duration::from_secs_f64(seconds)),
                )
                .refresh_token(answer.refresh_token)
                .build())
        }
        .boxed()
    };
    if human {
        Callback::human(call)
    } else {
        Callback::machine(call)
    }
}
