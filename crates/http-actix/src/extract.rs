//! Request extractors that parse and validate with `tessera_wire::parse`, every problem a
//! 422 with `loc`, `msg` and `type`, plus error handlers that keep actix's own extractors
//! from answering in plain text.

use std::future::Future;
use std::pin::Pin;

use actix_web::{
    FromRequest, HttpRequest,
    dev::Payload,
    error::{JsonPayloadError, PathError, PayloadError, QueryPayloadError},
    http::{StatusCode, header},
    web,
};
use serde::de::DeserializeOwned;
use tessera_kernel::FieldError;
use tessera_wire::parse;
use validator::Validate;

use crate::problem::ApiError;

/// A JSON body, deserialized and then validated with `validator`.
#[derive(Debug)]
pub struct ValidJson<T>(pub T);

/// A query string, deserialized and then validated with `validator`.
#[derive(Debug)]
pub struct ValidQuery<T>(pub T);

impl<T: DeserializeOwned + Validate + 'static> FromRequest for ValidJson<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let content_type_ok = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                let essence = v
                    .split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase();
                essence == "application/json" || essence.ends_with("+json")
            })
            .unwrap_or(true);
        let body = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            if !content_type_ok {
                return Err(ApiError::unsupported_media_type(
                    "unsupported_media_type",
                    "the request body must be JSON (Content-Type: application/json)",
                ));
            }
            let bytes = body.await.map_err(|e| payload_error(&e))?;
            Ok(ValidJson(parse::json(&bytes)?))
        })
    }
}

impl<T: DeserializeOwned + Validate + 'static> FromRequest for ValidQuery<T> {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(
            parse::query(req.query_string())
                .map(ValidQuery)
                .map_err(ApiError::from),
        )
    }
}

fn payload_error(error: &actix_web::Error) -> ApiError {
    let too_large = || {
        ApiError::payload_too_large(
            "payload_too_large",
            "the request body is larger than allowed",
        )
    };
    match error.as_error::<PayloadError>() {
        Some(PayloadError::Overflow) => too_large(),
        // The framework's own error, known only by its status.
        _ if error.as_response_error().status_code() == StatusCode::PAYLOAD_TOO_LARGE => {
            too_large()
        }
        _ => ApiError::bad_request(
            "bad_request",
            format!("cannot read the request body: {error}"),
        ),
    }
}

/// Error handlers for actix's own `Json`, `Query` and `Path` extractors.
pub fn json_config(limit: usize) -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(limit)
        .error_handler(|error, _| {
            match error {
                JsonPayloadError::Overflow { .. }
                | JsonPayloadError::OverflowKnownLength { .. } => {
                    ApiError::payload_too_large("payload_too_large", error.to_string())
                }
                JsonPayloadError::ContentType => ApiError::unsupported_media_type(
                    "unsupported_media_type",
                    "the request body must be JSON",
                ),
                other => ApiError::validation(vec![FieldError::new(
                    ["body".into()],
                    other.to_string(),
                    "json_invalid",
                )]),
            }
            .into()
        })
}

pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|error: QueryPayloadError, _| {
        ApiError::validation(vec![FieldError::new(
            ["query".into()],
            error.to_string(),
            "value_error",
        )])
        .into()
    })
}

pub fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|error: PathError, _| {
        ApiError::validation(vec![FieldError::new(
            ["path".into()],
            error.to_string(),
            "value_error",
        )])
        .into()
    })
}
