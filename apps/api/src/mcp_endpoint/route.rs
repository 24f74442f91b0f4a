//! The actix side of `/mcp`: rmcp's Streamable HTTP server is a tower service over the
//! `http` 1 types, actix's are its own; this route copies the request across (with the
//! authenticated caller and the app state in its extensions, where rmcp hands them to the
//! handler) and streams rmcp's response back.

use std::sync::LazyLock;

use actix_web::{HttpRequest, HttpResponse, http::StatusCode, post, web};
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
};
use tower_service::Service;

use super::{invocation::Invocation, server::TesseraServer};
use crate::{
    caller::Caller,
    problem::{ApiError, Problem},
    state::AppState,
};

/// One stateless service for the process: no session lives between requests, so any
/// replica answers any request and nothing is kept for a client that goes away.
static SERVICE: LazyLock<StreamableHttpService<TesseraServer, NeverSessionManager>> =
    LazyLock::new(|| {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            // Host checks guard unauthenticated servers on a developer's machine against DNS
            // rebinding; every request here carries a bearer token, and Tessera is reached
            // under whatever names its operators give it.
            .disable_allowed_hosts();
        StreamableHttpService::new(
            || Ok(TesseraServer),
            NeverSessionManager::default().into(),
            config,
        )
    });

/// The Model Context Protocol over Streamable HTTP: one JSON-RPC message per request
/// (`initialize`, `tools/list`, `tools/call`, `resources/list`, `resources/read`, …),
/// answered as JSON. Any valid token may connect; each tool and resource checks the scope
/// of its REST twin and lists only what the token may use.
#[utoipa::path(
    tag = "MCP",
    operation_id = "mcp",
    request_body(
        content = serde_json::Value,
        description = "A JSON-RPC 2.0 message of the Model Context Protocol",
        content_type = "application/json"
    ),
    params(
        ("MCP-Protocol-Version" = Option<String>, Header, description = "The protocol version the client negotiated (every request after `initialize`)")
    ),
    responses(
        (status = 200, description = "The JSON-RPC response", body = serde_json::Value, content_type = "application/json"),
        (status = 202, description = "A notification or response, accepted"),
        (status = 400, description = "Not a JSON-RPC message, or a protocol version this server does not speak", body = serde_json::Value, content_type = "application/json"),
        (status = 406, description = "`Accept` lists neither `application/json` nor `text/event-stream`", body = serde_json::Value, content_type = "application/json"),
        (status = 415, description = "Not `application/json`", body = serde_json::Value, content_type = "application/json"),
        (status = 500, description = "The server failed", body = Problem, content_type = "application/problem+json")
    )
)]
#[post("/mcp")]
pub async fn mcp(
    req: HttpRequest,
    caller: Caller,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let mut request = http::Request::builder()
        .method(http::Method::POST)
        .uri(req.uri().to_string());
    for (name, value) in req.headers() {
        request = request.header(name.as_str(), value.as_bytes());
    }
    let mut request = request.body(Full::new(body)).map_err(|error| {
        ApiError::bad_request(
            "bad_request",
            format!("the request cannot be read: {error}"),
        )
    })?;
    request
        .extensions_mut()
        .insert(Invocation { state, caller });
    let response = match SERVICE.clone().call(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let (parts, body) = response.into_parts();
    // rmcp answers with its own `http` status type: translated number for number.
    let status =
        StatusCode::from_u16(parts.status.as_u16()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut builder = HttpResponse::build(status);
    for (name, value) in &parts.headers {
        builder.append_header((name.as_str(), value.as_bytes()));
    }
    Ok(builder.streaming(
        body.into_data_stream()
            .map(|chunk| chunk.map_err(|never| -> std::io::Error { match never {} })),
    ))
}
