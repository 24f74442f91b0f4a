//! The example's [`Admission`]: a fixed credit budget per organization, spent by the usage
//! its answers recorded.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{Days, Utc};
use tessera_chats::{Admission, Admitted, BudgetSpent, ChatError, Spends};
use tessera_kernel::Caller;
use tessera_organizations::Plan;
use tessera_usage::memory::InMemoryUsageStore;

pub struct CreditBudget {
    credits: u64,
    usage: Arc<InMemoryUsageStore>,
}

impl CreditBudget {
    pub fn new(credits: u64, usage: Arc<InMemoryUsageStore>) -> Self {
        Self { credits, usage }
    }
}

#[async_trait]
impl Admission for CreditBudget {
    async fn admit(&self, caller: &Caller, spends: Spends) -> Result<Admitted, ChatError> {
        let organization = caller.organization();
        let used: u64 = (self.usage.all().iter())
            .filter(|record| &record.organization_id == organization)
            .map(|record| record.credits)
            .sum();
        if spends == Spends::Credits && used >= self.credits {
            return Err(ChatError::BudgetSpent(BudgetSpent {
                monthly_credits: self.credits,
                used_credits: used,
                // This example's budget never renews; a day from now is what it reports.
                resets_at: Utc::now()
                    .checked_add_days(Days::new(1))
                    .unwrap_or_else(Utc::now),
            }));
        }
        Ok(Admitted::on(Plan::Free))
    }
}
