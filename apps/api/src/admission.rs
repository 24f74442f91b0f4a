//! The chats domain's `Admission` port over this deployment's organizations (their plans),
//! configured quotas (monthly credits per plan or organization) and the usage domain's
//! budget guard.

use async_trait::async_trait;
use tessera_chats::{Admission, BudgetSpent, ChatError};
use tessera_kernel::{DomainError, OrganizationId};
use tessera_organizations::{OrganizationService, Plan};
use tessera_usage::BudgetGuard;

use crate::config::QuotaSettings;

/// Plans from the organizations, budgets from the quotas and this month's spend.
pub struct PlansAndBudgets {
    pub organizations: OrganizationService,
    pub quotas: QuotaSettings,
    pub budgets: BudgetGuard,
}

#[async_trait]
impl Admission for PlansAndBudgets {
    async fn admit(&self, organization: &OrganizationId) -> Result<Plan, ChatError> {
        let plan = self
            .organizations
            .plan(organization)
            .await
            .map_err(DomainError::from)?;
        if let Some(budget) = self.quotas.monthly_credits(organization, plan) {
            let status = self.budgets.status(organization, budget).await?;
            if status.exhausted() {
                crate::metrics::refused("credit_budget");
                return Err(ChatError::BudgetSpent(BudgetSpent {
                    monthly_credits: status.monthly_credits,
                    used_credits: status.used,
                    resets_at: status.resets_at,
                }));
            }
        }
        Ok(plan)
    }
}
