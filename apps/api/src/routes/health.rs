//! Liveness and readiness, unauthenticated, for orchestrators. Its bodies are
//! `tessera_wire::v1::health`.

use std::time::{Duration, Instant};

use actix_web::{HttpResponse, get, http::header, web};
use tessera_wire::v1::health::{Check, Health, Readiness};

use crate::{problem::PROBLEM_JSON, state::AppState};

/// How long a readiness check may take before the dependency counts as down.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Liveness: the process is up and serving.
#[utoipa::path(
    tag = "Health",
    operation_id = "health",
    responses((status = 200, description = "The process is alive", body = Health))
)]
#[get("/v1/health")]
pub async fn health() -> web::Json<Health> {
    web::Json(Health {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
    })
}

/// Readiness: the service can serve requests (its database answers).
#[utoipa::path(
    tag = "Health",
    operation_id = "ready",
    responses(
        (status = 200, description = "Every dependency answers", body = Readiness),
        (status = 503, description = "A dependency is down (the body is a problem with the same `checks`), or the instance is shutting down (`shutting_down`)", body = crate::problem::Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/health/ready")]
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    if state.draining.is_draining() {
        let body = serde_json::json!({
            "type": "urn:tessera:problem:shutting_down",
            "title": "Service Unavailable",
            "status": 503,
            "detail": "this instance is shutting down: running generations are finishing",
            "code": "shutting_down",
            "checks": [],
        });
        return HttpResponse::ServiceUnavailable()
            .insert_header((header::CONTENT_TYPE, PROBLEM_JSON))
            .insert_header((header::RETRY_AFTER, "1"))
            .body(body.to_string());
    }
    let started = Instant::now();
    let outcome = tokio::time::timeout(CHECK_TIMEOUT, state.database.ping()).await;
    let error = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(_) => Some(format!("no answer within {} ms", CHECK_TIMEOUT.as_millis())),
    };
    let check = Check {
        name: "database",
        status: if error.is_none() { "ok" } else { "unavailable" },
        latency_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
        error,
    };
    if check.error.is_none() {
        return HttpResponse::Ok().json(Readiness {
            status: "ready",
            checks: vec![check],
        });
    }
    tracing::warn!(error = ?check.error, "readiness check failed");
    let body = serde_json::json!({
        "type": "urn:tessera:problem:not_ready",
        "title": "Service Unavailable",
        "status": 503,
        "detail": "a dependency of the service is unavailable",
        "code": "not_ready",
        "checks": [check],
    });
    HttpResponse::ServiceUnavailable()
        .insert_header((header::CONTENT_TYPE, PROBLEM_JSON))
        .insert_header((header::RETRY_AFTER, "5"))
        .body(body.to_string())
}
