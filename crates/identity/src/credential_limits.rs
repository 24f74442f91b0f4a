//! What a credential (an API key or a client) may spend and which models it may name: an
//! optional credit budget per UTC day, week or month, and an optional allow-list of models.
//! Both are checked where completions are admitted; the allow-list also narrows the model
//! lists the credential is shown.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use tessera_kernel::{FieldError, LocSegment, OrganizationId, text};
use tessera_usage::BudgetPeriod;

use crate::{ApiKeyId, ClientId};

/// The most models one allow-list may name.
pub const MAX_ALLOWED_MODELS: usize = 256;

/// The longest model id an allow-list may name, in characters.
pub const MAX_MODEL_ID_CHARS: usize = 255;

/// A credential whose limits are set: an API key or a client of the organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    ApiKey(ApiKeyId),
    Client(ClientId),
}

impl Credential {
    /// The id usage records and principals name the credential by (`key_…`, `cli_…`).
    pub fn as_str(&self) -> &str {
        match self {
            Self::ApiKey(id) => id.as_str(),
            Self::Client(id) => id.as_str(),
        }
    }

    /// The audit log's resource type of the credential.
    pub fn resource_type(&self) -> &'static str {
        match self {
            Self::ApiKey(_) => "api_key",
            Self::Client(_) => "client",
        }
    }
}

/// What happens once a credential's budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSpent {
    /// Its completions are refused (402) until the period renews; the organization's other
    /// credentials are unaffected.
    Refuse,
}

impl OnSpent {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refuse => "refuse",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        (text == "refuse").then_some(Self::Refuse)
    }
}

/// A credential's credit budget: `credits` per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CredentialBudget {
    pub credits: u64,
    pub period: BudgetPeriod,
    pub on_spent: OnSpent,
}

/// A credential's limits as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialLimits {
    pub organization_id: OrganizationId,
    /// The credential's id (`key_…` or `cli_…`).
    pub credential: String,
    /// The model ids (as requests name them) the credential may use; `None`: every model
    /// its organization may use.
    pub models: Option<BTreeSet<String>>,
    pub budget: Option<CredentialBudget>,
    pub updated_at: DateTime<Utc>,
}

impl CredentialLimits {
    /// Whether the credential may name `model_id`.
    pub fn allows_model(&self, model_id: &str) -> bool {
        self.models
            .as_ref()
            .is_none_or(|models| models.contains(model_id))
    }
}

/// A budget as a caller asks for it (checked by [`NewCredentialLimits::check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCredentialBudget {
    pub credits: i64,
    pub period: String,
    /// `None`: `refuse`.
    pub on_spent: Option<String>,
}

/// Limits as a caller asks for them: they replace the credential's earlier ones whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewCredentialLimits {
    pub models: Option<Vec<String>>,
    pub budget: Option<NewCredentialBudget>,
}

fn invalid(loc: Vec<LocSegment>, msg: impl Into<String>) -> FieldError {
    FieldError::new(loc, msg, "value_error")
}

/// Checked limits: the allow-list and the budget.
pub type CheckedLimits = (Option<BTreeSet<String>>, Option<CredentialBudget>);

impl NewCredentialLimits {
    /// The limits, or every problem with them at once (located under `body`).
    pub fn check(self) -> Result<CheckedLimits, Vec<FieldError>> {
        self.check_under(&["body".into()])
    }

    /// The limits, or every problem with them at once, located under `base` (`body.limits`
    /// where they come with a new credential).
    pub fn check_under(self, base: &[LocSegment]) -> Result<CheckedLimits, Vec<FieldError>> {
        let at = |path: &[LocSegment]| base.iter().chain(path).cloned().collect::<Vec<_>>();
        let mut errors = Vec::new();
        let models = self.models.map(|models| {
            if models.len() > MAX_ALLOWED_MODELS {
                errors.push(invalid(
                    at(&["models".into()]),
                    format!("at most {MAX_ALLOWED_MODELS} models"),
                ));
            }
            for (index, model) in models.iter().enumerate() {
                let loc = at(&["models".into(), index.into()]);
                if !text::is_storable(model) {
                    errors.push(text::nul_error(loc));
                } else if model.trim() != model
                    || !(1..=MAX_MODEL_ID_CHARS).contains(&model.chars().count())
                {
                    errors.push(invalid(
                        loc,
                        format!(
                            "a model id is 1 to {MAX_MODEL_ID_CHARS} characters without surrounding spaces"
                        ),
                    ));
                }
            }
            models.into_iter().collect::<BTreeSet<_>>()
        });
        let budget = self.budget.and_then(|budget| {
            let at = |field: &str| at(&["budget".into(), field.into()]);
            let credits = u64::try_from(budget.credits).ok().filter(|&c| c > 0);
            if credits.is_none() {
                errors.push(invalid(at("credits"), "must be a positive whole number"));
            }
            let period = BudgetPeriod::parse(&budget.period);
            if period.is_none() {
                errors.push(invalid(at("period"), "must be `day`, `week` or `month`"));
            }
            let on_spent = match budget.on_spent.as_deref() {
                None => Some(OnSpent::Refuse),
                Some(text) => OnSpent::parse(text),
            };
            if on_spent.is_none() {
                errors.push(invalid(at("onSpent"), "must be `refuse`"));
            }
            Some(CredentialBudget {
                credits: credits?,
                period: period?,
                on_spent: on_spent?,
            })
        });
        if errors.is_empty() {
            Ok((models, budget))
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locs(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(|e| format!("{:?}", e.loc)).collect()
    }

    #[test]
    fn limits_are_checked_whole() {
        let (models, budget) = NewCredentialLimits {
            models: Some(vec!["b".into(), "a".into(), "a".into()]),
            budget: Some(NewCredentialBudget {
                credits: 500,
                period: "week".into(),
                on_spent: None,
            }),
        }
        .check()
        .unwrap();
        assert_eq!(models.unwrap().into_iter().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(
            budget,
            Some(CredentialBudget {
                credits: 500,
                period: BudgetPeriod::Week,
                on_spent: OnSpent::Refuse
            })
        );

        let errors = NewCredentialLimits {
            models: Some(vec![" a".into(), String::new(), "ok".into()]),
            budget: Some(NewCredentialBudget {
                credits: 0,
                period: "year".into(),
                on_spent: Some("shrug".into()),
            }),
        }
        .check()
        .unwrap_err();
        assert_eq!(errors.len(), 5, "{}", locs(&errors).join(", "));

        let many = NewCredentialLimits {
            models: Some((0..=MAX_ALLOWED_MODELS).map(|i| i.to_string()).collect()),
            budget: None,
        };
        assert_eq!(many.check().unwrap_err().len(), 1);
        // No limits at all is a valid choice: every model, no budget.
        assert_eq!(NewCredentialLimits::default().check(), Ok((None, None)));
    }

    #[test]
    fn an_allow_list_names_what_may_be_used() {
        let limits = |models: Option<&[&str]>| CredentialLimits {
            organization_id: OrganizationId::generate(),
            credential: "key_x".into(),
            models: models.map(|m| m.iter().map(|s| s.to_string()).collect()),
            budget: None,
            updated_at: Utc::now(),
        };
        assert!(limits(None).allows_model("anything"));
        assert!(limits(Some(&["a"])).allows_model("a"));
        assert!(!limits(Some(&["a"])).allows_model("b"));
        assert!(!limits(Some(&[])).allows_model("a"));
    }
}
