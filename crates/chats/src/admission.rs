//! Whether an organization may start a completion now, and on which plan: the plan decides
//! which models it may use, the credit budget whether it may generate at all. A port, so a
//! service embedding the chats domain brings its own plans and budgets.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::OrganizationId;
use tessera_organizations::Plan;

use crate::ChatError;

/// Why an organization may not generate now: its monthly credits are spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetSpent {
    pub monthly_credits: u64,
    pub used_credits: u64,
    /// When the budget renews.
    pub resets_at: DateTime<Utc>,
}

/// Admits organizations to completions. Asked once per completion, before anything else.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Admission: Send + Sync {
    /// The organization's plan, or [`ChatError::BudgetSpent`] when it may not generate.
    async fn admit(&self, organization: &OrganizationId) -> Result<Plan, ChatError>;
}

/// Every organization on one plan, without a budget (tests, single-tenant embeddings).
#[derive(Debug, Clone, Copy)]
pub struct FixedPlan(pub Plan);

#[async_trait]
impl Admission for FixedPlan {
    async fn admit(&self, _: &OrganizationId) -> Result<Plan, ChatError> {
        Ok(self.0)
    }
}
