//! The chats domain's admission (plans, monthly credit budgets and credentials' limits,
//! `PlansAndBudgets`), counted: each refusal for a spent budget moves the refusals metric;
//! and the identity domain's credential limits as the chats domain's `CredentialLimitsSource`.

use async_trait::async_trait;
use tessera_chats::{
    Admission, Admitted, ChatError, CredentialLimitsSource, PlansAndBudgets, Spends,
};
use tessera_identity::CredentialLimitsService;
use tessera_kernel::{Caller, DomainError};

/// The identity domain's limits of API keys and clients, as admission reads them.
pub struct CredentialLimitsOf(pub CredentialLimitsService);

#[async_trait]
impl CredentialLimitsSource for CredentialLimitsOf {
    async fn limits(
        &self,
        caller: &Caller,
    ) -> Result<Option<tessera_chats::CredentialLimits>, DomainError> {
        let limits = self.0.of_caller(caller).await?;
        Ok(limits.map(|limits| tessera_chats::CredentialLimits {
            credential: limits.credential,
            models: limits.models,
            budget: limits.budget.map(|budget| (budget.credits, budget.period)),
        }))
    }
}

/// [`PlansAndBudgets`], with its refusals recorded.
pub struct MeteredAdmission(pub PlansAndBudgets);

#[async_trait]
impl Admission for MeteredAdmission {
    async fn admit(&self, caller: &Caller, spends: Spends) -> Result<Admitted, ChatError> {
        let admitted = self.0.admit(caller, spends).await;
        match &admitted {
            Err(ChatError::BudgetSpent(_)) => tessera_metrics_prometheus::refused("credit_budget"),
            Err(ChatError::CredentialBudgetSpent(_)) => {
                tessera_metrics_prometheus::refused("credential_budget")
            }
            _ => {}
        }
        admitted
    }
}
