//! `Idempotency-Key` on authenticated POSTs: the first request with a key runs and its
//! response is stored; a retry with the same key and the same request (method, path,
//! canonical body) gets the stored response back with `Idempotent-Replayed: true`. The same
//! key with another request is 422 `idempotency_key_reused`; a retry while the first still
//! runs is 409 `idempotency_key_in_flight`. Responses marked `Cache-Control: no-store`
//! (they carry secrets) are recorded without their body: a retry then gets 409
//! `idempotent_response_withheld` with the created record's `Location`, never a second
//! record and never a stored secret. Event streams are passed through unbuffered and
//! recorded the same way (a retry learns the chat's `Location` and can re-attach). Uploads
//! (`multipart/form-data`) are not buffered: the key alone identifies them. Public
//! POSTs (token requests) ignore the header. The keys are kept by the
//! `web::Data<IdempotencyService>` of the app's data; an app without it ignores the header.

use actix_web::{
    Error, FromRequest, HttpMessage, HttpResponse,
    body::{BoxBody, MessageBody},
    dev::{Payload, ServiceRequest, ServiceResponse},
    http::{
        Method, StatusCode,
        header::{self, HeaderName, HeaderValue},
    },
    middleware::Next,
    web,
};
use tessera_idempotency::{
    Begin, Fingerprint, IdempotencyKey, IdempotencyService, KeyOwner, Refusal, StoredResponse,
};
use tessera_kernel::{DomainError, FieldError, Principal};

use crate::problem::ApiError;

pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
pub const REPLAYED: &str = "idempotent-replayed";

/// Response headers kept for a replay (the others are per-response: request id, limits).
const REPLAYED_HEADERS: [HeaderName; 2] = [header::CONTENT_TYPE, header::LOCATION];

pub async fn idempotent(
    req: ServiceRequest,
    next: Next<BoxBody>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    if req.method() != Method::POST {
        return next.call(req).await;
    }
    let Some(value) = req.headers().get(IDEMPOTENCY_KEY).cloned() else {
        return next.call(req).await;
    };
    let Some(principal) = req.extensions().get::<Principal>().cloned() else {
        return next.call(req).await;
    };
    let Some(keys) = req.app_data::<web::Data<IdempotencyService>>().cloned() else {
        return next.call(req).await;
    };
    let key = match value.to_str().ok().map(IdempotencyKey::parse) {
        Some(Ok(key)) => key,
        Some(Err(e)) => return Ok(refuse(req, invalid_key(e.to_string()))),
        None => return Ok(refuse(req, invalid_key("must be visible ASCII".into()))),
    };
    let path = req
        .uri()
        .path_and_query()
        .map_or("", |p| p.as_str())
        .to_owned();
    let (req, fingerprint) = if is_multipart(&req) {
        // An upload (up to 50 MB) is never buffered to be fingerprinted: the key alone
        // identifies it, so a retry of an upload gets the first upload's record back.
        (req, Fingerprint::of("POST", &path, b"multipart/form-data"))
    } else {
        let (http, mut payload) = req.into_parts();
        let body = match web::Bytes::from_request(&http, &mut payload).await {
            Ok(body) => body,
            Err(error) => return Ok(ServiceResponse::from_err(error, http)),
        };
        let fingerprint = Fingerprint::of("POST", &path, &canonical_body(&body));
        (
            ServiceRequest::from_parts(http, Payload::from(body)),
            fingerprint,
        )
    };
    let owner = KeyOwner {
        organization_id: principal.organization_id.clone(),
        principal: principal.subject.clone(),
    };
    let refusal = match keys.begin(&owner, &key, &fingerprint).await {
        Err(error) => ApiError::from(error),
        Ok(Begin::Replay(stored)) => return Ok(req.into_response(replay(stored))),
        Ok(Begin::Refuse(refusal)) => return Ok(req.into_response(refused(refusal))),
        Ok(Begin::Proceed) => return run(req, next, &keys, &owner, &key).await,
    };
    Ok(refuse(req, refusal))
}

/// Runs a request that claimed its key and stores what it answered.
async fn run(
    req: ServiceRequest,
    next: Next<BoxBody>,
    keys: &IdempotencyService,
    owner: &KeyOwner,
    key: &IdempotencyKey,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let response = match next.call(req).await {
        Ok(response) => response,
        Err(error) => {
            release(keys, owner, key).await;
            return Err(error);
        }
    };
    if is_event_stream(response.response()) {
        // A stream is not buffered (that would hold it back until it ends) nor stored: its
        // record withholds the body, so a retry is told where the chat is and can re-attach.
        let stored = stored_response(response.response(), None);
        if let Err(error) = keys.finish(owner, key, stored).await {
            tracing::warn!(%error, "idempotency record not stored");
        }
        return Ok(response);
    }
    let (http, response) = response.into_parts();
    let status = response.status();
    let headers = response.headers().clone();
    let body = match response.into_body().try_into_bytes() {
        Ok(bytes) => bytes,
        Err(body) => match actix_web::body::to_bytes(body).await {
            Ok(bytes) => bytes,
            Err(_) => {
                release(keys, owner, key).await;
                let error = ApiError::internal("the response could not be produced");
                return Ok(ServiceResponse::new(http, HttpResponse::from_error(error)));
            }
        },
    };
    let withheld = headers
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("no-store"));
    let mut rebuilt = HttpResponse::build(status);
    for (name, value) in &headers {
        rebuilt.append_header((name.clone(), value.clone()));
    }
    let rebuilt = rebuilt.body(body.clone());
    let stored = stored_response(&rebuilt, (!withheld).then(|| body.to_vec()));
    if let Err(error) = keys.finish(owner, key, stored).await {
        // The request succeeded; only its replay is lost. A retry then sees "in flight"
        // until the key expires, which is safer than running it twice.
        tracing::warn!(%error, "idempotency record not stored");
    }
    Ok(ServiceResponse::new(http, rebuilt))
}

fn is_multipart(req: &ServiceRequest) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .trim_start()
                .get(..10)
                .is_some_and(|start| start.eq_ignore_ascii_case("multipart/"))
        })
}

fn is_event_stream<B>(response: &HttpResponse<B>) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// What a replay needs of a response: status, the replayed headers, and the body unless
/// it is withheld.
fn stored_response<B>(response: &HttpResponse<B>, body: Option<Vec<u8>>) -> StoredResponse {
    StoredResponse {
        status: response.status().as_u16(),
        headers: REPLAYED_HEADERS
            .iter()
            .filter_map(|name| {
                let value = response.headers().get(name)?.to_str().ok()?;
                Some((name.as_str().to_owned(), value.to_owned()))
            })
            .collect(),
        body,
    }
}

async fn release(keys: &IdempotencyService, owner: &KeyOwner, key: &IdempotencyKey) {
    if let Err(error) = keys.abandon(owner, key).await {
        tracing::warn!(%error, "idempotency key not released");
    }
}

/// The body in canonical form: JSON re-serialized with sorted keys and no insignificant
/// whitespace, anything else as sent.
fn canonical_body(body: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => {
            let mut out = String::new();
            write_canonical(&value, &mut out);
            out.into_bytes()
        }
        Err(_) => body.to_vec(),
    }
}

fn write_canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (name, value)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn replay(stored: StoredResponse) -> HttpResponse {
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    let mut response = HttpResponse::build(status);
    for (name, value) in &stored.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::from_str(value),
        ) {
            response.append_header((name, value));
        }
    }
    response.insert_header((REPLAYED, "true"));
    response.body(stored.body.unwrap_or_default())
}

fn refused(refusal: Refusal) -> HttpResponse {
    let detail = refusal.to_string();
    match refusal {
        // A validation problem like every 422 (its `detail` lists the offending value), with
        // its own code.
        Refusal::Mismatch => HttpResponse::from_error(ApiError {
            code: "idempotency_key_reused",
            ..ApiError::validation(vec![FieldError::new(
                ["header".into(), "Idempotency-Key".into()],
                detail,
                "idempotency_key_reused",
            )])
        }),
        Refusal::InFlight => {
            let mut response =
                HttpResponse::from_error(ApiError::conflict("idempotency_key_in_flight", detail));
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
        Refusal::Withheld(stored) => {
            let location = stored
                .headers
                .iter()
                .find(|(name, _)| name == header::LOCATION.as_str())
                .map(|(_, value)| value.clone());
            let detail = match &location {
                Some(location) => format!("{detail}; the record is {location}"),
                None => detail,
            };
            let mut response = HttpResponse::from_error(ApiError::conflict(
                "idempotent_response_withheld",
                detail,
            ));
            if let Some(value) = location.and_then(|l| HeaderValue::from_str(&l).ok()) {
                response.headers_mut().insert(header::LOCATION, value);
            }
            response
        }
    }
}

fn invalid_key(msg: String) -> ApiError {
    DomainError::Validation(vec![FieldError::new(
        ["header".into(), "Idempotency-Key".into()],
        msg,
        "value_error",
    )])
    .into()
}

fn refuse(req: ServiceRequest, error: ApiError) -> ServiceResponse<BoxBody> {
    req.into_response(HttpResponse::from_error(error))
}

/// Documents the optional `Idempotency-Key` header on every authenticated POST.
pub fn apply_to_openapi(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{
        Required,
        path::{ParameterBuilder, ParameterIn},
    };
    for item in document.paths.paths.values_mut() {
        let Some(operation) = item.post.as_mut() else {
            continue;
        };
        let public = operation
            .security
            .as_ref()
            .is_some_and(|requirements| requirements.is_empty());
        if public {
            continue;
        }
        let parameter = ParameterBuilder::new()
            .name("Idempotency-Key")
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some(
                "Makes a retry safe: the same key and request within 24 h replays the first \
                 response (`Idempotent-Replayed: true`); the same key with another request is \
                 422 `idempotency_key_reused`; while the first still runs, 409 \
                 `idempotency_key_in_flight`. 1-255 visible ASCII characters.",
            ))
            .schema(Some(
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .min_length(Some(1))
                    .max_length(Some(255)),
            ))
            .build();
        operation
            .parameters
            .get_or_insert_with(Vec::new)
            .push(parameter);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_ignores_key_order_and_whitespace() {
        let a = canonical_body(br#"{"b": [1, {"y": 2, "x": "\u00e9"}], "a": null}"#);
        let b = canonical_body(r#"{"a":null,"b":[1,{"x":"é","y":2}]}"#.as_bytes());
        assert_eq!(a, b);
        assert_eq!(
            String::from_utf8(a).unwrap(),
            r#"{"a":null,"b":[1,{"x":"é","y":2}]}"#
        );
        assert_ne!(canonical_body(br#"{"a":1}"#), canonical_body(br#"{"a":2}"#));
        assert_eq!(canonical_body(b"not json"), b"not json");
    }
}
