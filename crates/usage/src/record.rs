use chrono::{DateTime, Utc};
use tessera_kernel::{OrganizationId, PrincipalKind};

tessera_kernel::entity_id!(
    /// A usage record's id.
    UsageId,
    "usg"
);

/// The finish reason recorded for a completion that failed after consuming tokens.
pub const FAILED: &str = "error";

/// Token counts of one completion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    /// Part of `output` the model spent reasoning.
    pub reasoning: u64,
    /// Part of `input` read from a cache (a reused prefix) rather than processed.
    pub cached_input: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.input + self.output
    }

    /// Credits charged for these tokens on a model whose credit multiplier is `multiplier`.
    pub fn credits(&self, multiplier: u32) -> u64 {
        self.total().saturating_mul(u64::from(multiplier))
    }
}

/// What one completion consumed: written with the completion's message, in the same
/// transaction, exactly once (the answer's message id is unique among records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRecord {
    pub id: UsageId,
    pub organization_id: OrganizationId,
    /// The principal's subject (a user's subject claim or a client's id).
    pub principal: String,
    pub principal_kind: PrincipalKind,
    pub chat_id: String,
    /// The answer's message id (also for a failed completion, whose answer was not stored).
    pub message_id: String,
    /// The model the chat runs on: a user model's id or a catalog model's id.
    pub model_id: String,
    /// The catalog (base) model that served it.
    pub parent_model_id: String,
    pub provider: String,
    pub tokens: Tokens,
    /// `tokens.total()` × the base model's credit multiplier.
    pub credits: u64,
    /// From the request's acceptance to the end of the answer.
    pub latency_ms: u64,
    /// The provider's finish reason, or [`FAILED`].
    pub finish_reason: String,
    pub created_at: DateTime<Utc>,
    /// Answered from the response cache: no provider was called; credits are 0.
    pub cached: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credits_multiply_every_token() {
        let tokens = Tokens {
            input: 10,
            output: 5,
            reasoning: 2,
            cached_input: 4,
        };
        assert_eq!(tokens.total(), 15);
        assert_eq!(tokens.credits(1), 15);
        assert_eq!(tokens.credits(3), 45);
        assert_eq!(tokens.credits(0), 0);
    }
}
