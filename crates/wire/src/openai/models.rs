//! OpenAI's model object: what `GET /openai/v1/models` lists (the catalog models, an
//! organization's own and the embedding model) and what a completion may name as `model`.

use serde::Serialize;
use tessera_kernel::OrganizationId;
use tessera_models::{BaseModel, ModelView};
use utoipa::ToSchema;

use super::unix;

/// A model, as OpenAI describes one.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OpenAiModel {
    /// What to pass as `model`: a catalog id (`local/smollm2-135m-instruct`) or an
    /// organization's model (`mdl_…`).
    pub id: String,
    /// Always `model`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: i64,
    /// The provider of a catalog model, the organization of its own models, `tessera` for
    /// the embedding model.
    pub owned_by: String,
}

/// The model list.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiModelList {
    /// Always `list`.
    pub object: &'static str,
    pub data: Vec<OpenAiModel>,
}

impl OpenAiModel {
    /// A catalog model, `created` when the catalog was loaded.
    pub fn of_base(base: BaseModel, created: i64) -> Self {
        Self {
            id: base.id,
            object: "model",
            created,
            owned_by: base.provider,
        }
    }

    /// One of the organization's own models.
    pub fn of_user(view: &ModelView, organization: &OrganizationId) -> Self {
        Self {
            id: view.model.id.to_string(),
            object: "model",
            created: unix(view.model.created_at),
            owned_by: organization.to_string(),
        }
    }

    /// The embedding model (`owned_by: tessera`).
    pub fn of_embeddings(id: &str, created: i64) -> Self {
        Self {
            id: id.to_owned(),
            object: "model",
            created,
            owned_by: "tessera".into(),
        }
    }
}

impl OpenAiModelList {
    pub fn of(data: Vec<OpenAiModel>) -> Self {
        Self {
            object: "list",
            data,
        }
    }
}
