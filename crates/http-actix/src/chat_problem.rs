//! What a chat failure answers with over HTTP: the chats domain's errors that say more than
//! their `DomainError` (a provider's failure, a spent budget, a schema mismatch, a retired
//! model) as problems of their own.

use tessera_chats::ChatError;
use tessera_kernel::DomainError;
use tessera_models::{ModelError, ProviderError};

use crate::problem::{ApiError, ProblemKind};

/// The problem a chat failure answers with: provider failures are 502/503/504 with the
/// provider's message, a strict-schema mismatch is 502 with the violations, a retired
/// model names its replacement.
pub fn chat_error(error: ChatError) -> ApiError {
    match error {
        ChatError::Provider(provider) => match provider {
            ProviderError::Unavailable {
                message,
                retry_after,
            } => ApiError::unavailable(
                "provider_unavailable",
                format!("the model provider is unavailable: {message}"),
            )
            .with_retry_after(retry_after.map_or(1, |d| d.as_secs().max(1))),
            ProviderError::Timeout => ApiError::new(
                ProblemKind::GatewayTimeout,
                "provider_timeout",
                "the model provider did not answer in time",
            ),
            ProviderError::Upstream { status, message } => ApiError::new(
                ProblemKind::BadGateway,
                "provider_error",
                format!("the model provider failed: {message}"),
            )
            .with("upstreamStatus", status),
            ProviderError::InvalidRequest(message) => ApiError::new(
                ProblemKind::BadGateway,
                "provider_refused",
                format!("the model provider refused the request: {message}"),
            ),
        },
        // 402: the organization spent its monthly credits; the body says how much and until when.
        ChatError::BudgetSpent(spent) => ApiError::new(
            ProblemKind::PaymentRequired,
            "credit_budget_exhausted",
            ChatError::BudgetSpent(spent.clone()).to_string(),
        )
        .with("monthlyCredits", spent.monthly_credits)
        .with("usedCredits", spent.used_credits)
        .with("resetsAt", spent.resets_at.to_rfc3339()),
        // 402 too: the caller's own credential spent its budget for this period; the
        // organization's other credentials go on.
        ChatError::CredentialBudgetSpent(spent) => ApiError::new(
            ProblemKind::PaymentRequired,
            "credential_budget_exhausted",
            ChatError::CredentialBudgetSpent(spent.clone()).to_string(),
        )
        .with("credential", spent.credential.as_str())
        .with("credits", spent.credits)
        .with("period", spent.period.as_str())
        .with("usedCredits", spent.used_credits)
        .with("resetsAt", spent.resets_at.to_rfc3339()),
        ChatError::SchemaMismatch(violations) => ApiError::new(
            ProblemKind::BadGateway,
            "response_schema_mismatch",
            "the model's answer does not conform to the response schema",
        )
        .with("errors", violations),
        ChatError::Model(ModelError::EndOfLife { model, replacement }) => {
            let message = ModelError::EndOfLife {
                model,
                replacement: replacement.clone(),
            }
            .to_string();
            ApiError::new(ProblemKind::Gone, "model_end_of_life", message)
                .with("replacementModelId", replacement)
        }
        other => DomainError::from(other).into(),
    }
}
