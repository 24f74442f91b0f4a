//! The lifecycle rule, shared by the model endpoints (what `lifecycleState` says) and chats
//! (whether a model may be used, and with which warnings).

use chrono::{DateTime, Utc};
use serde::Serialize;
use tessera_organizations::Plan;

use crate::{BaseModel, ModelError, ModelTier};

/// Where a model is in its life, derived at read time from `enabled` and `endOfLifeAt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleState {
    Active,
    /// Switched off by an administrator (or its provider has no key).
    Disabled,
    /// Works, but `endOfLifeAt` is scheduled.
    Deprecated,
    /// Retired: `endOfLifeAt` has passed.
    EndOfLife,
}

impl LifecycleState {
    pub fn as_str(self) -> &'static str {
        match self {
            LifecycleState::Active => "active",
            LifecycleState::Disabled => "disabled",
            LifecycleState::Deprecated => "deprecated",
            LifecycleState::EndOfLife => "end_of_life",
        }
    }

    /// Whether a completion may name a model in this state now: active or deprecated (a
    /// deprecated model still answers, with a notice).
    pub fn takes_completions(self) -> bool {
        matches!(self, LifecycleState::Active | LifecycleState::Deprecated)
    }
}

/// Retirement is final, so it wins over being disabled.
pub fn lifecycle_state(
    enabled: bool,
    end_of_life_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> LifecycleState {
    match end_of_life_at {
        Some(at) if at <= now => LifecycleState::EndOfLife,
        _ if !enabled => LifecycleState::Disabled,
        Some(_) => LifecycleState::Deprecated,
        None => LifecycleState::Active,
    }
}

/// What a deprecated or retired base model tells its users (`deprecationMessage`): the
/// catalog's own message, or when it has none, when it retires and what replaces it. `None`
/// while it is active or merely disabled.
pub fn deprecation_notice(base: &BaseModel, state: LifecycleState) -> Option<String> {
    match state {
        LifecycleState::Deprecated | LifecycleState::EndOfLife => {
            Some(base.deprecation_message.clone().unwrap_or_else(|| {
                let when = base
                    .end_of_life_at
                    .map(|at| at.to_rfc3339())
                    .unwrap_or_default();
                match &base.replacement_model_id {
                    Some(next) => format!("{} retires at {when}; use {next}", base.id),
                    None => format!("{} retires at {when}", base.id),
                }
            }))
        }
        LifecycleState::Active | LifecycleState::Disabled => None,
    }
}

/// A usable model, possibly with a retirement to announce (`Deprecation`/`Sunset` headers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Usability {
    Usable,
    Deprecated {
        sunset: DateTime<Utc>,
        replacement_model_id: Option<String>,
    },
}

/// Whether an organization on `plan` may use a model built on `base` (with the user model's
/// own `enabled`): end of life → gone, disabled → conflict, premium on a free plan → forbidden.
pub fn usability(
    base: &BaseModel,
    enabled: bool,
    plan: Plan,
    now: DateTime<Utc>,
) -> Result<Usability, ModelError> {
    match lifecycle_state(base.enabled && enabled, base.end_of_life_at, now) {
        LifecycleState::EndOfLife => Err(ModelError::EndOfLife {
            model: base.id.clone(),
            replacement: base.replacement_model_id.clone(),
        }),
        LifecycleState::Disabled => Err(ModelError::Disabled(base.id.clone())),
        state => {
            if base.tier == ModelTier::Premium && plan == Plan::Free {
                return Err(ModelError::PlanRequired(base.id.clone()));
            }
            Ok(match (state, base.end_of_life_at) {
                (LifecycleState::Deprecated, Some(sunset)) => Usability::Deprecated {
                    sunset,
                    replacement_model_id: base.replacement_model_id.clone(),
                },
                _ => Usability::Usable,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};

    use super::*;
    use crate::Capabilities;

    #[test]
    fn only_active_and_deprecated_models_take_completions() {
        assert!(LifecycleState::Active.takes_completions());
        assert!(LifecycleState::Deprecated.takes_completions());
        assert!(!LifecycleState::Disabled.takes_completions());
        assert!(!LifecycleState::EndOfLife.takes_completions());
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap()
    }

    fn base(tier: ModelTier, end_of_life_at: Option<DateTime<Utc>>) -> BaseModel {
        BaseModel {
            id: "x/model".into(),
            display_name: "Model".into(),
            description: None,
            provider: "x".into(),
            model_name: "model".into(),
            deployments: Vec::new(),
            context_window: 1000,
            max_tokens_per_request: None,
            capabilities: Capabilities::default(),
            credit_multiplier: 1,
            tier,
            enabled: true,
            end_of_life_at,
            replacement_model_id: Some("x/next".into()),
            deprecation_message: None,
            is_recommended: false,
        }
    }

    #[test]
    fn only_deprecated_and_retired_models_carry_a_notice() {
        let retiring = base(ModelTier::Standard, Some(now() + Duration::days(1)));
        let when = (now() + Duration::days(1)).to_rfc3339();
        assert_eq!(
            deprecation_notice(&retiring, LifecycleState::Deprecated),
            Some(format!("x/model retires at {when}; use x/next"))
        );
        let without_replacement = BaseModel {
            replacement_model_id: None,
            ..retiring.clone()
        };
        assert_eq!(
            deprecation_notice(&without_replacement, LifecycleState::EndOfLife),
            Some(format!("x/model retires at {when}"))
        );
        let worded = BaseModel {
            deprecation_message: Some("Retired; move to x/next.".into()),
            ..retiring.clone()
        };
        assert_eq!(
            deprecation_notice(&worded, LifecycleState::Deprecated).as_deref(),
            Some("Retired; move to x/next.")
        );
        for state in [LifecycleState::Active, LifecycleState::Disabled] {
            assert_eq!(deprecation_notice(&worded, state), None);
        }
    }

    #[test]
    fn states_follow_enabled_and_end_of_life() {
        let past = Some(now() - Duration::days(1));
        let future = Some(now() + Duration::days(1));
        assert_eq!(lifecycle_state(true, None, now()), LifecycleState::Active);
        assert_eq!(
            lifecycle_state(false, None, now()),
            LifecycleState::Disabled
        );
        assert_eq!(
            lifecycle_state(true, future, now()),
            LifecycleState::Deprecated
        );
        assert_eq!(
            lifecycle_state(false, future, now()),
            LifecycleState::Disabled
        );
        assert_eq!(
            lifecycle_state(true, past, now()),
            LifecycleState::EndOfLife
        );
        assert_eq!(
            lifecycle_state(false, past, now()),
            LifecycleState::EndOfLife
        );
        assert_eq!(
            lifecycle_state(true, Some(now()), now()),
            LifecycleState::EndOfLife
        );
    }

    #[test]
    fn usability_refuses_retired_disabled_and_plan_gated_models() {
        let standard = base(ModelTier::Standard, None);
        assert_eq!(
            usability(&standard, true, Plan::Free, now()),
            Ok(Usability::Usable)
        );
        assert_eq!(
            usability(&standard, false, Plan::Pro, now()),
            Err(ModelError::Disabled("x/model".into()))
        );
        let premium = base(ModelTier::Premium, None);
        assert_eq!(
            usability(&premium, true, Plan::Free, now()),
            Err(ModelError::PlanRequired("x/model".into()))
        );
        assert_eq!(
            usability(&premium, true, Plan::Enterprise, now()),
            Ok(Usability::Usable)
        );
        let sunset = now() + Duration::days(30);
        assert_eq!(
            usability(
                &base(ModelTier::Standard, Some(sunset)),
                true,
                Plan::Free,
                now()
            ),
            Ok(Usability::Deprecated {
                sunset,
                replacement_model_id: Some("x/next".into())
            })
        );
        assert!(matches!(
            usability(
                &base(ModelTier::Standard, Some(now())),
                true,
                Plan::Pro,
                now()
            ),
            Err(ModelError::EndOfLife { .. })
        ));
    }
}
