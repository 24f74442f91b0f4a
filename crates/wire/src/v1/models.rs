//! The bodies of `/v1/models`: a model (a catalog base model or an organization's model
//! built on one), the catalog, the organization's page of models, the catalog models'
//! deployments with their circuits, and the create and update requests, each mapped from the
//! models domain's records.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tessera_models::{
    BaseModel, CircuitPhase, DeploymentHealth, LifecycleState, ModelView, deprecation_notice,
};
use tessera_prompts::SystemPromptId;
use utoipa::ToSchema;
use validator::Validate;

use crate::paged;

/// A model: a base model of the catalog (`isSystemModel: true`) or an organization's model
/// built on one (provider, model name and credits inherited from `parentModelId`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelOut {
    #[schema(example = "mdl_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    pub display_name: String,
    pub description: Option<String>,
    /// `null` for user models (inherited from the parent).
    pub provider: Option<String>,
    /// `null` for user models.
    pub model_name: Option<String>,
    pub context_window: u32,
    pub max_tokens_per_request: Option<u32>,
    pub supports_streaming: bool,
    pub supports_tools: bool,
    pub supports_vision: bool,
    pub supports_reasoning: bool,
    pub supports_json_schema: bool,
    pub enabled: bool,
    pub is_system_model: bool,
    /// Base models only; user models inherit their parent's.
    pub credit_multiplier: Option<u32>,
    /// `standard` (all plans) or `premium` (pro and enterprise plans).
    pub model_tier: String,
    /// `active`, `disabled`, `deprecated` or `end_of_life`, derived from `enabled` and
    /// `endOfLifeAt` when read.
    pub lifecycle_state: String,
    pub end_of_life_at: Option<DateTime<Utc>>,
    /// Present when deprecated or at end of life.
    pub deprecation_message: Option<String>,
    pub replacement_model_id: Option<String>,
    pub is_recommended: bool,
    pub metadata: Option<Map<String, Value>>,
    pub parent_model_id: Option<String>,
    pub system_prompt_id: Option<String>,
    pub system_prompt: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl ModelOut {
    pub fn base(base: BaseModel, state: LifecycleState, loaded_at: DateTime<Utc>) -> Self {
        Self {
            deprecation_message: deprecation_notice(&base, state),
            id: base.id,
            display_name: base.display_name,
            description: base.description,
            provider: Some(base.provider),
            model_name: Some(base.model_name),
            context_window: base.context_window,
            max_tokens_per_request: base.max_tokens_per_request,
            supports_streaming: base.capabilities.streaming,
            supports_tools: base.capabilities.tools,
            supports_vision: base.capabilities.vision,
            supports_reasoning: base.capabilities.reasoning,
            supports_json_schema: base.capabilities.json_schema,
            enabled: base.enabled,
            is_system_model: true,
            credit_multiplier: Some(base.credit_multiplier),
            model_tier: base.tier.as_str().to_owned(),
            lifecycle_state: state.as_str().to_owned(),
            end_of_life_at: base.end_of_life_at,
            replacement_model_id: base.replacement_model_id,
            is_recommended: base.is_recommended,
            metadata: None,
            parent_model_id: None,
            system_prompt_id: None,
            system_prompt: None,
            created_at: loaded_at,
            updated_at: loaded_at,
        }
    }

    pub fn user(view: ModelView) -> Self {
        let model = view.model;
        let parent = view.parent;
        let state = view.lifecycle;
        let capabilities = parent.as_ref().map(|p| p.capabilities).unwrap_or_default();
        Self {
            deprecation_message: match &parent {
                Some(base) => deprecation_notice(base, state),
                None => Some(format!(
                    "the base model {} is no longer offered; choose another parentModelId",
                    model.parent_model_id
                )),
            },
            id: model.id.to_string(),
            display_name: model.display_name,
            description: model.description,
            provider: None,
            model_name: None,
            context_window: parent.as_ref().map_or(0, |p| p.context_window),
            max_tokens_per_request: parent.as_ref().and_then(|p| p.max_tokens_per_request),
            supports_streaming: capabilities.streaming,
            supports_tools: capabilities.tools,
            supports_vision: capabilities.vision,
            supports_reasoning: capabilities.reasoning,
            supports_json_schema: capabilities.json_schema,
            enabled: model.enabled,
            is_system_model: false,
            credit_multiplier: None,
            model_tier: parent
                .as_ref()
                .map_or("standard", |p| p.tier.as_str())
                .to_owned(),
            lifecycle_state: state.as_str().to_owned(),
            end_of_life_at: parent.as_ref().and_then(|p| p.end_of_life_at),
            replacement_model_id: parent.as_ref().and_then(|p| p.replacement_model_id.clone()),
            is_recommended: false,
            metadata: Some(model.metadata),
            parent_model_id: Some(model.parent_model_id),
            system_prompt_id: model.system_prompt_id.map(|id| id.to_string()),
            system_prompt: model.system_prompt,
            created_at: model.created_at,
            updated_at: model.updated_at,
        }
    }
}

/// The base models.
#[derive(Debug, Serialize, ToSchema)]
pub struct Catalog {
    pub items: Vec<ModelOut>,
}

paged!(ModelOut => ModelPage, "A page of the organization's models.");

/// A new model built on a base model.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateModel {
    /// A base model's id from `GET /v1/models/catalog`.
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub parent_model_id: String,
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub display_name: String,
    #[validate(length(max = 1000))]
    #[schema(max_length = 1000)]
    pub description: Option<String>,
    /// A system prompt of the organization, or a system profile.
    #[schema(value_type = Option<String>)]
    pub system_prompt_id: Option<SystemPromptId>,
    /// A full system prompt; when set, the composition is bypassed.
    pub system_prompt: Option<String>,
    /// Free-form object (at most 64 keys).
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// Changes of a model; `null` clears `description`, `systemPromptId` or `systemPrompt`.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateModel {
    /// Switches the base model; the model keeps its id (new chats use the new base).
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub parent_model_id: Option<String>,
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub display_name: Option<String>,
    #[serde(default, deserialize_with = "crate::nullable")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::nullable")]
    #[schema(value_type = Option<String>)]
    pub system_prompt_id: Option<Option<SystemPromptId>>,
    #[serde(default, deserialize_with = "crate::nullable")]
    #[schema(value_type = Option<String>)]
    pub system_prompt: Option<Option<String>>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
    pub enabled: Option<bool>,
}

/// A deployment of a catalog model and the state of its circuit.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentOut {
    pub name: String,
    /// The catalog's provider key.
    pub provider: String,
    /// The provider's name of the model.
    pub model_name: String,
    pub weight: u32,
    /// Lower is tried first.
    pub priority: u32,
    /// `closed` (serving), `open` (cooling down until `openUntil`) or `half_open` (its next
    /// attempt decides).
    pub circuit: String,
    /// Failures in a row since its last success or opening.
    pub consecutive_failures: u32,
    pub open_until: Option<DateTime<Utc>>,
}

/// A catalog model served by a remote provider, and where.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelDeploymentsOut {
    pub model_id: String,
    pub deployments: Vec<DeploymentOut>,
}

/// Catalog models' deployments.
#[derive(Debug, Serialize, ToSchema)]
pub struct Deployments {
    pub items: Vec<ModelDeploymentsOut>,
}

impl DeploymentOut {
    /// A deployment and its circuit's phase when it was read.
    pub fn of(deployment: DeploymentHealth) -> Self {
        let (shown, open_until) = match deployment.phase {
            CircuitPhase::Open { until } => ("open", Some(until)),
            CircuitPhase::HalfOpen => ("half_open", None),
            CircuitPhase::Closed => ("closed", None),
        };
        Self {
            name: deployment.name,
            provider: deployment.provider,
            model_name: deployment.model_name,
            weight: deployment.weight,
            priority: deployment.priority,
            circuit: shown.to_owned(),
            consecutive_failures: deployment.circuit.failures,
            open_until,
        }
    }
}
