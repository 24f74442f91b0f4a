//! One place a model is served from.

use std::{sync::Arc, time::Duration};

use crate::ChatModel;

/// How long one attempt on a deployment may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening the connection (applied by the adapter).
    pub connect: Duration,
    /// From sending the request to the answer's first token.
    pub first_token: Duration,
    /// The longest silence between two chunks of an answer.
    pub idle: Duration,
    /// The whole answer, first token to last.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            first_token: Duration::from_secs(60),
            idle: Duration::from_secs(60),
            total: Duration::from_secs(600),
        }
    }
}

/// A provider serving a catalog model under its own name.
#[derive(Clone)]
pub struct Deployment {
    /// Unique among the model's deployments; shown in routes and health.
    pub name: String,
    /// The catalog provider's key.
    pub provider: String,
    /// The provider's own name of the model (sent as the request's `model`).
    pub model_name: String,
    /// Share of traffic among healthy deployments of the same priority (at least 1).
    pub weight: u32,
    /// Lower is tried first.
    pub priority: u32,
    pub timeouts: Timeouts,
    pub model: Arc<dyn ChatModel>,
}

impl std::fmt::Debug for Deployment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deployment")
            .field("name", &self.name)
            .field("provider", &self.provider)
            .field("model_name", &self.model_name)
            .field("weight", &self.weight)
            .field("priority", &self.priority)
            .field("timeouts", &self.timeouts)
            .finish_non_exhaustive()
    }
}
