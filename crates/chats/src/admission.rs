//! Whether an organization may start a completion now, and on which plan: the plan decides
//! which models it may use, the credit budget whether it may generate at all. A port, so a
//! service embedding the chats domain brings its own plans and budgets, or uses
//! [`PlansAndBudgets`]: plans from a [`PlanSource`], monthly [`CreditQuotas`], and the
//! month's spend from the usage domain's [`BudgetGuard`].

use std::{collections::BTreeMap, sync::Arc};

use async_trait::async_trait;
use tessera_kernel::{DomainError, OrganizationId};
use tessera_organizations::{OrganizationService, Plan};
use tessera_usage::BudgetGuard;

use crate::{BudgetSpent, ChatError};

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

/// Where organizations' plans come from.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait PlanSource: Send + Sync {
    async fn plan(&self, organization: &OrganizationId) -> Result<Plan, DomainError>;
}

#[async_trait]
impl PlanSource for OrganizationService {
    async fn plan(&self, organization: &OrganizationId) -> Result<Plan, DomainError> {
        Ok(OrganizationService::plan(self, organization).await?)
    }
}

/// Monthly credit budgets: one per plan (none: unlimited), and budgets of single
/// organizations that replace their plan's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreditQuotas {
    pub free: Option<u64>,
    pub pro: Option<u64>,
    pub enterprise: Option<u64>,
    /// By organization id.
    pub organizations: BTreeMap<String, u64>,
}

impl CreditQuotas {
    /// The organization's monthly budget on `plan`, if it has one.
    pub fn monthly_credits(&self, organization: &OrganizationId, plan: Plan) -> Option<u64> {
        self.organizations
            .get(organization.as_str())
            .copied()
            .or(match plan {
                Plan::Free => self.free,
                Plan::Pro => self.pro,
                Plan::Enterprise => self.enterprise,
            })
    }
}

/// Admission by plan and monthly credit budget: an organization whose spend this month has
/// reached its budget is refused until the budget renews.
pub struct PlansAndBudgets {
    pub plans: Arc<dyn PlanSource>,
    pub quotas: CreditQuotas,
    pub budgets: BudgetGuard,
}

#[async_trait]
impl Admission for PlansAndBudgets {
    async fn admit(&self, organization: &OrganizationId) -> Result<Plan, ChatError> {
        let plan = self.plans.plan(organization).await?;
        if let Some(budget) = self.quotas.monthly_credits(organization, plan) {
            let status = self.budgets.status(organization, budget).await?;
            if status.exhausted() {
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

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use tessera_kernel::{ManualClock, PrincipalKind};
    use tessera_usage::{Tokens, UsageId, UsageRecord, UsageStore, memory::InMemoryUsageStore};

    use super::*;

    fn org(id: &str) -> OrganizationId {
        id.parse().unwrap()
    }

    #[test]
    fn an_organizations_own_budget_replaces_its_plans() {
        let quotas = CreditQuotas {
            free: Some(1000),
            pro: Some(20_000),
            enterprise: None,
            organizations: [("org_big".to_owned(), 50_000)].into(),
        };
        assert_eq!(
            quotas.monthly_credits(&org("org_big"), Plan::Free),
            Some(50_000)
        );
        assert_eq!(
            quotas.monthly_credits(&org("org_small"), Plan::Free),
            Some(1000)
        );
        assert_eq!(
            quotas.monthly_credits(&org("org_small"), Plan::Pro),
            Some(20_000)
        );
        assert_eq!(
            quotas.monthly_credits(&org("org_small"), Plan::Enterprise),
            None
        );
    }

    #[tokio::test]
    async fn a_spent_budget_refuses_until_it_renews_and_unbudgeted_plans_pass() {
        let now = Utc.with_ymd_and_hms(2026, 3, 14, 12, 0, 0).unwrap();
        let clock = Arc::new(ManualClock::new(now));
        let usage = Arc::new(InMemoryUsageStore::new());
        let acme = org("org_acme");
        usage
            .record(&UsageRecord {
                id: UsageId::generate(),
                organization_id: acme.clone(),
                principal: "alice".into(),
                principal_kind: PrincipalKind::User,
                chat_id: String::new(),
                message_id: String::new(),
                model_id: "m".into(),
                parent_model_id: "m".into(),
                provider: "local".into(),
                tokens: Tokens::default(),
                credits: 120,
                latency_ms: 1,
                finish_reason: "stop".into(),
                created_at: now,
            })
            .await
            .unwrap();
        let mut plans = MockPlanSource::new();
        plans.expect_plan().returning(|org| {
            Ok(if org.as_str() == "org_acme" {
                Plan::Free
            } else {
                Plan::Enterprise
            })
        });
        let admission = PlansAndBudgets {
            plans: Arc::new(plans),
            quotas: CreditQuotas {
                free: Some(100),
                ..CreditQuotas::default()
            },
            budgets: BudgetGuard::new(usage, clock, chrono::Duration::seconds(10)),
        };
        let Err(ChatError::BudgetSpent(spent)) = admission.admit(&acme).await else {
            panic!("a spent budget is refused")
        };
        assert_eq!(
            spent,
            BudgetSpent {
                monthly_credits: 100,
                used_credits: 120,
                resets_at: Utc.with_ymd_and_hms(2026, 4, 1, 0, 0, 0).unwrap(),
            }
        );
        assert_eq!(
            admission.admit(&org("org_rich")).await.unwrap(),
            Plan::Enterprise
        );
    }
}
