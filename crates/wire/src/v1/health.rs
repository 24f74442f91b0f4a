//! The bodies of `/v1/health` and `/v1/health/ready`: the liveness answer, and the readiness
//! answer with the check of each dependency (the same checks a not-ready problem carries).

use serde::Serialize;
use utoipa::ToSchema;

/// Liveness answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// Always `ok` when the process answers.
    #[schema(example = "ok")]
    pub status: &'static str,
    /// The service version.
    #[schema(example = "0.1.0")]
    pub version: &'static str,
}

/// The state of one dependency.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    #[schema(example = "database")]
    pub name: &'static str,
    /// `ok` or `unavailable`.
    #[schema(example = "ok")]
    pub status: &'static str,
    pub latency_ms: f64,
    /// Why the dependency is unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Readiness answer: every dependency's check.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ready` when every check passed.
    #[schema(example = "ready")]
    pub status: &'static str,
    pub checks: Vec<Check>,
}
