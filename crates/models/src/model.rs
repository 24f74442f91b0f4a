use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use tessera_kernel::OrganizationId;
use tessera_prompts::{Description, Name, SystemPromptId};

use crate::{BaseModel, LifecycleState, ModelId, lifecycle_state};

/// An organization's model: a base model of the catalog with its own name, system prompt
/// and metadata. Provider, model name, capabilities and credits come from the parent.
#[derive(Debug, Clone, PartialEq)]
pub struct UserModel {
    pub id: ModelId,
    pub organization_id: OrganizationId,
    /// The catalog id of the base model.
    pub parent_model_id: String,
    pub display_name: String,
    pub description: Option<String>,
    /// The system prompt composed for chats, unless `system_prompt` overrides it.
    pub system_prompt_id: Option<SystemPromptId>,
    /// A full system prompt; when set, composition is bypassed.
    pub system_prompt: Option<String>,
    pub metadata: Map<String, Value>,
    pub enabled: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A user model with its parent as the catalog has it now (`None` when the operator removed
/// it from the catalog) and its lifecycle state.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelView {
    pub model: UserModel,
    pub parent: Option<BaseModel>,
    pub lifecycle: LifecycleState,
}

impl ModelView {
    pub fn new(model: UserModel, parent: Option<BaseModel>, now: DateTime<Utc>) -> Self {
        let lifecycle = match &parent {
            Some(parent) => {
                lifecycle_state(parent.enabled && model.enabled, parent.end_of_life_at, now)
            }
            None => LifecycleState::EndOfLife,
        };
        Self {
            model,
            parent,
            lifecycle,
        }
    }
}

/// What a new user model is made of (validated by the caller's types and the service).
#[derive(Debug, Clone)]
pub struct NewUserModel {
    pub parent_model_id: String,
    pub display_name: Name,
    pub description: Option<Description>,
    pub system_prompt_id: Option<SystemPromptId>,
    pub system_prompt: Option<String>,
    pub metadata: Map<String, Value>,
}

/// Changes of a user model; `Some(None)` clears an optional field.
#[derive(Debug, Clone, Default)]
pub struct ModelChanges {
    pub display_name: Option<Name>,
    pub description: Option<Option<Description>>,
    pub parent_model_id: Option<String>,
    pub system_prompt_id: Option<Option<SystemPromptId>>,
    pub system_prompt: Option<Option<String>>,
    pub metadata: Option<Map<String, Value>>,
    pub enabled: Option<bool>,
}
