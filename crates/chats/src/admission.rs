//! Whether a caller may start a completion now, and on which plan: the plan decides which
//! models its organization may use, the organization's credit budget whether it may generate
//! at all, and the caller's credential (an API key or a client) may narrow both with an
//! allow-list of models and a budget of its own. A port, so a service embedding the chats
//! domain brings its own plans and budgets, or uses [`PlansAndBudgets`]: plans from a
//! [`PlanSource`], monthly [`CreditQuotas`], credentials' limits from a
//! [`CredentialLimitsSource`], and spend from the usage domain's [`BudgetGuard`].

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use async_trait::async_trait;
use tessera_kernel::{Caller, DomainError, OrganizationId};
use tessera_organizations::{OrganizationService, Plan};
use tessera_usage::{BudgetGuard, BudgetPeriod, Spender};

use crate::{BudgetSpent, ChatError, CredentialBudgetSpent};

/// What a caller is admitted with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// The organization's plan.
    pub plan: Plan,
    /// The model ids the caller's credential may name; `None`: every model of the plan.
    pub models: Option<BTreeSet<String>>,
}

impl Admitted {
    /// Admitted on `plan`, with every model of it.
    pub fn on(plan: Plan) -> Self {
        Self { plan, models: None }
    }

    /// `Ok` when the caller may name `model_id`, else [`ChatError::ModelNotAllowed`].
    pub fn may_use(&self, model_id: &str) -> Result<(), ChatError> {
        match &self.models {
            Some(models) if !models.contains(model_id) => {
                Err(ChatError::ModelNotAllowed(model_id.to_owned()))
            }
            _ => Ok(()),
        }
    }
}

/// What a caller is admitted to do: spend credits (a completion, an embedding) or only read
/// what a request would cost (counting its tokens), which budgets do not refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spends {
    /// Budgets apply: a spent one refuses.
    Credits,
    /// Budgets do not apply; the plan and the allow-list still do.
    Nothing,
}

/// Admits callers to completions. Asked once per completion, before anything else.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Admission: Send + Sync {
    /// The caller's plan and models, or, when it [`Spends::Credits`],
    /// [`ChatError::BudgetSpent`] (its organization's budget) or
    /// [`ChatError::CredentialBudgetSpent`] (its credential's) when it may not spend.
    async fn admit(&self, caller: &Caller, spends: Spends) -> Result<Admitted, ChatError>;
}

/// Every organization on one plan, without a budget (tests, single-tenant embeddings).
#[derive(Debug, Clone, Copy)]
pub struct FixedPlan(pub Plan);

#[async_trait]
impl Admission for FixedPlan {
    async fn admit(&self, _: &Caller, _: Spends) -> Result<Admitted, ChatError> {
        Ok(Admitted::on(self.0))
    }
}

/// The limits of a caller's credential (an API key or a client), as admission applies them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialLimits {
    /// The credential's id (`key_…`, `cli_…`): usage records name it as their principal.
    pub credential: String,
    /// The model ids it may name; `None`: every model of the plan.
    pub models: Option<BTreeSet<String>>,
    /// Credits it may spend per period; `None`: no budget of its own.
    pub budget: Option<(u64, BudgetPeriod)>,
}

/// Where credentials' limits come from (the identity domain's, in the server).
#[async_trait]
pub trait CredentialLimitsSource: Send + Sync {
    /// The limits of the caller's credential, if it has any.
    async fn limits(&self, caller: &Caller) -> Result<Option<CredentialLimits>, DomainError>;
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

/// Admission by plan, monthly credit budget and the caller's credential's limits: an
/// organization whose spend this month has reached its budget is refused until the budget
/// renews, and so is a credential whose spend this period has reached its own budget (the
/// organization's other credentials are unaffected).
pub struct PlansAndBudgets {
    pub plans: Arc<dyn PlanSource>,
    pub quotas: CreditQuotas,
    pub budgets: BudgetGuard,
    /// Limits of API keys and clients (`None`: credentials have none).
    pub credentials: Option<Arc<dyn CredentialLimitsSource>>,
}

#[async_trait]
impl Admission for PlansAndBudgets {
    async fn admit(&self, caller: &Caller, spends: Spends) -> Result<Admitted, ChatError> {
        let organization = caller.organization();
        let plan = self.plans.plan(organization).await?;
        let budgets_apply = spends == Spends::Credits;
        if let Some(budget) = self
            .quotas
            .monthly_credits(organization, plan)
            .filter(|_| budgets_apply)
        {
            let status = self.budgets.status(organization, budget).await?;
            if status.exhausted() {
                return Err(ChatError::BudgetSpent(BudgetSpent {
                    monthly_credits: status.credits,
                    used_credits: status.used,
                    resets_at: status.resets_at,
                }));
            }
        }
        let limits = match &self.credentials {
            Some(source) => source.limits(caller).await?,
            None => None,
        };
        let Some(limits) = limits else {
            return Ok(Admitted::on(plan));
        };
        if let Some((credits, period)) = limits.budget.filter(|_| budgets_apply) {
            let spender = Spender {
                organization: organization.clone(),
                principal: Some(limits.credential.clone()),
            };
            let status = self.budgets.spent_of(&spender, period, credits).await?;
            if status.exhausted() {
                return Err(ChatError::CredentialBudgetSpent(CredentialBudgetSpent {
                    credential: limits.credential,
                    credits: status.credits,
                    period,
                    used_credits: status.used,
                    resets_at: status.resets_at,
                }));
            }
        }
        Ok(Admitted {
            plan,
            models: limits.models,
        })
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
                cached: false,
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
            credentials: None,
        };
        let Err(ChatError::BudgetSpent(spent)) =
            admission.admit(&user_of(&acme), Spends::Credits).await
        else {
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
            admission
                .admit(&user_of(&org("org_rich")), Spends::Credits)
                .await
                .unwrap(),
            Admitted::on(Plan::Enterprise)
        );
        // Counting what a request would cost spends nothing: no budget refuses it.
        assert_eq!(
            admission
                .admit(&user_of(&acme), Spends::Nothing)
                .await
                .unwrap(),
            Admitted::on(Plan::Free)
        );
    }

    fn user_of(organization: &OrganizationId) -> Caller {
        caller_of(organization, "alice", PrincipalKind::User)
    }

    fn caller_of(organization: &OrganizationId, subject: &str, kind: PrincipalKind) -> Caller {
        Caller::of(tessera_kernel::Principal {
            organization_id: organization.clone(),
            subject: subject.into(),
            kind,
            scopes: tessera_kernel::ScopeSet::default(),
            origin: None,
        })
    }

    /// Limits by organization and credential; like the identity domain's, none for users.
    struct Limits(Vec<(OrganizationId, CredentialLimits)>);

    #[async_trait]
    impl CredentialLimitsSource for Limits {
        async fn limits(&self, caller: &Caller) -> Result<Option<CredentialLimits>, DomainError> {
            if caller.principal_kind() == Some(PrincipalKind::User) {
                return Ok(None);
            }
            Ok((self.0.iter())
                .find(|(org, l)| org == caller.organization() && l.credential == caller.subject())
                .map(|(_, l)| l.clone()))
        }
    }

    #[tokio::test]
    async fn a_credentials_budget_and_models_narrow_its_admission_only() {
        let now = Utc.with_ymd_and_hms(2026, 12, 3, 12, 0, 0).unwrap();
        let clock = Arc::new(ManualClock::new(now));
        let usage = Arc::new(InMemoryUsageStore::new());
        let acme = org("org_acme");
        for (principal, kind, credits) in [
            ("key_spent", PrincipalKind::ApiKey, 50),
            ("key_other", PrincipalKind::ApiKey, 10),
            ("alice", PrincipalKind::User, 500),
        ] {
            usage
                .record(&UsageRecord {
                    id: UsageId::generate(),
                    organization_id: acme.clone(),
                    principal: principal.into(),
                    principal_kind: kind,
                    chat_id: String::new(),
                    message_id: principal.into(),
                    model_id: "m".into(),
                    parent_model_id: "m".into(),
                    provider: "local".into(),
                    tokens: Tokens::default(),
                    credits,
                    latency_ms: 1,
                    finish_reason: "stop".into(),
                    created_at: now,
                    cached: false,
                })
                .await
                .unwrap();
        }
        let limited = |credential: &str, models: Option<&[&str]>| {
            let limits = CredentialLimits {
                credential: credential.into(),
                models: models.map(|m| m.iter().map(|s| s.to_string()).collect()),
                budget: Some((50, BudgetPeriod::Day)),
            };
            (acme.clone(), limits)
        };
        let mut plans = MockPlanSource::new();
        plans.expect_plan().returning(|_| Ok(Plan::Pro));
        let admission = PlansAndBudgets {
            plans: Arc::new(plans),
            quotas: CreditQuotas::default(),
            budgets: BudgetGuard::new(usage, clock, chrono::Duration::seconds(10)),
            credentials: Some(Arc::new(Limits(vec![
                limited("key_spent", None),
                limited("key_other", Some(&["local/small"])),
                // A user is never limited, whatever a record says.
                limited("alice", Some(&[])),
            ]))),
        };
        let Err(ChatError::CredentialBudgetSpent(spent)) = admission
            .admit(
                &caller_of(&acme, "key_spent", PrincipalKind::ApiKey),
                Spends::Credits,
            )
            .await
        else {
            panic!("a credential's spent budget is refused")
        };
        assert_eq!(
            (spent.credential.as_str(), spent.credits, spent.used_credits),
            ("key_spent", 50, 50)
        );
        assert_eq!(
            spent.resets_at,
            Utc.with_ymd_and_hms(2026, 12, 4, 0, 0, 0).unwrap()
        );
        let counting = admission
            .admit(
                &caller_of(&acme, "key_spent", PrincipalKind::ApiKey),
                Spends::Nothing,
            )
            .await
            .unwrap();
        assert_eq!(counting, Admitted::on(Plan::Pro));
        let other = admission
            .admit(
                &caller_of(&acme, "key_other", PrincipalKind::ApiKey),
                Spends::Credits,
            )
            .await
            .unwrap();
        assert!(other.may_use("local/small").is_ok());
        assert!(matches!(
            other.may_use("local/large"),
            Err(ChatError::ModelNotAllowed(model)) if model == "local/large"
        ));
        let alice = admission
            .admit(&user_of(&acme), Spends::Credits)
            .await
            .unwrap();
        assert_eq!(alice, Admitted::on(Plan::Pro));
        // The same key id in another organization is another credential.
        let elsewhere = admission
            .admit(
                &caller_of(&org("org_else"), "key_spent", PrincipalKind::Client),
                Spends::Credits,
            )
            .await
            .unwrap();
        assert_eq!(elsewhere, Admitted::on(Plan::Pro));
    }
}
