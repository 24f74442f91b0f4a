//! Routing a model's requests over its deployments: the order they are tried in (priority,
//! then weight among the healthy), retries and fallbacks before the first token, the
//! timeouts of each attempt, and the circuit that cools a failing deployment down. Once a
//! token has reached the caller nothing is retried: a later failure ends the stream.

mod circuit;
mod deployment;
mod report;
mod router;
mod watchdog;

pub use circuit::{CircuitBoard, CircuitPhase, CircuitPolicy, CircuitState, InProcessCircuits};
pub use deployment::{Deployment, Timeouts};
pub use report::{FailedAttempt, Route};
pub use router::{RetryPolicy, RoutedChatModel};

#[cfg(test)]
mod tests;
