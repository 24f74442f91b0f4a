//! The chats domain's admission (plans and monthly credit budgets, `PlansAndBudgets`),
//! counted: each refusal for a spent budget moves the refusals metric.

use async_trait::async_trait;
use tessera_chats::{Admission, ChatError, PlansAndBudgets};
use tessera_kernel::OrganizationId;
use tessera_organizations::Plan;

/// [`PlansAndBudgets`], with its refusals recorded.
pub struct MeteredAdmission(pub PlansAndBudgets);

#[async_trait]
impl Admission for MeteredAdmission {
    async fn admit(&self, organization: &OrganizationId) -> Result<Plan, ChatError> {
        let admitted = self.0.admit(organization).await;
        if let Err(ChatError::BudgetSpent(_)) = &admitted {
            tessera_metrics_prometheus::refused("credit_budget");
        }
        admitted
    }
}
