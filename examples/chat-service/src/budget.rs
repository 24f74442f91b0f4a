//! The example's [`Admission`]: a fixed credit budget per organization, spent by the usage
//! its stored answers recorded.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{Days, Utc};
use tessera_chats::{Admission, BudgetSpent, ChatError, memory::InMemoryChatStore};
use tessera_kernel::OrganizationId;
use tessera_organizations::Plan;

pub struct CreditBudget {
    credits: u64,
    chats: Arc<InMemoryChatStore>,
}

impl CreditBudget {
    pub fn new(credits: u64, chats: Arc<InMemoryChatStore>) -> Self {
        Self { credits, chats }
    }
}

#[async_trait]
impl Admission for CreditBudget {
    async fn admit(&self, organization: &OrganizationId) -> Result<Plan, ChatError> {
        let used: u64 = (self.chats.usage_records().iter())
            .filter(|record| &record.organization_id == organization)
            .map(|record| record.credits)
            .sum();
        if used >= self.credits {
            return Err(ChatError::BudgetSpent(BudgetSpent {
                monthly_credits: self.credits,
                used_credits: used,
                // This example's budget never renews; a day from now is what it reports.
                resets_at: Utc::now()
                    .checked_add_days(Days::new(1))
                    .unwrap_or_else(Utc::now),
            }));
        }
        Ok(Plan::Free)
    }
}
