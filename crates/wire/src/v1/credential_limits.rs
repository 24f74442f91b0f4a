//! The bodies of `/v1/api-keys/{id}/limits` and `/v1/clients/{id}/limits`: a credential's
//! credit budget and model allow-list, as set and as answered.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_identity::{CredentialLimits, NewCredentialBudget, NewCredentialLimits};
use utoipa::ToSchema;
use validator::Validate;

/// A credit budget as set.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BudgetIn {
    /// Credits the credential may spend per period (a positive whole number).
    #[schema(minimum = 1, example = 5000)]
    pub credits: i64,
    /// The UTC calendar period the budget renews with: `day`, `week` (from Monday) or
    /// `month`.
    #[schema(example = "month")]
    pub period: String,
    /// What happens once it is spent: `refuse` (the default) refuses the credential's
    /// completions with 402 `credential_budget_exhausted` until the period renews.
    #[schema(example = "refuse")]
    pub on_spent: Option<String>,
}

/// A credential's limits: they replace any earlier ones whole.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CredentialLimitsIn {
    /// The model ids the credential may use, as requests name them (catalog ids such as
    /// `local/smollm2-135m-instruct`, or the organization's own `mdl_…`); a continued chat
    /// counts as its model. Absent or `null`: every model its organization may use. At most
    /// 256.
    #[schema(example = json!(["local/smollm2-135m-instruct"]))]
    pub models: Option<Vec<String>>,
    /// Absent or `null`: no budget of its own (the organization's still applies).
    pub budget: Option<BudgetIn>,
}

impl From<CredentialLimitsIn> for NewCredentialLimits {
    fn from(body: CredentialLimitsIn) -> Self {
        Self {
            models: body.models,
            budget: body.budget.map(|budget| NewCredentialBudget {
                credits: budget.credits,
                period: budget.period,
                on_spent: budget.on_spent,
            }),
        }
    }
}

/// A credit budget as answered, with what the credential has spent of it this period.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetOut {
    pub credits: u64,
    #[schema(example = "month")]
    pub period: String,
    #[schema(example = "refuse")]
    pub on_spent: String,
    /// Credits spent in the current period (read through a cache of `quotas.cache_secs`).
    pub used_credits: u64,
    /// When the current period ends and the budget starts afresh.
    pub resets_at: DateTime<Utc>,
}

/// What a credential has spent of its budget in the current period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spent {
    pub used_credits: u64,
    pub resets_at: DateTime<Utc>,
}

/// A credential's limits; both `null` when none are set.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialLimitsOut {
    /// The API key's or client's id.
    #[schema(example = "key_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub credential: String,
    /// The models it may use; `null`: every model its organization may use.
    pub models: Option<Vec<String>>,
    pub budget: Option<BudgetOut>,
    /// When the limits were last set; `null` when none are.
    pub updated_at: Option<DateTime<Utc>>,
}

impl CredentialLimitsOut {
    /// `limits` of `credential`, or none, with what it has `spent` of its budget.
    pub fn of(credential: &str, limits: Option<CredentialLimits>, spent: Option<Spent>) -> Self {
        let Some(limits) = limits else {
            return Self {
                credential: credential.to_owned(),
                models: None,
                budget: None,
                updated_at: None,
            };
        };
        Self {
            credential: limits.credential,
            models: limits.models.map(|models| models.into_iter().collect()),
            budget: limits.budget.zip(spent).map(|(budget, spent)| BudgetOut {
                credits: budget.credits,
                period: budget.period.as_str().to_owned(),
                on_spent: budget.on_spent.as_str().to_owned(),
                used_credits: spent.used_credits,
                resets_at: spent.resets_at,
            }),
            updated_at: Some(limits.updated_at),
        }
    }
}
