//! Anthropic's model objects: what `GET /anthropic/v1/models` lists (the catalog models an
//! organization may use and its own models; embedding models answer no messages) and a
//! page of them by `after_id`/`before_id`, as Anthropic's clients page.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use tessera_models::{BaseModel, ModelView};
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

/// A model, as Anthropic describes one.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AnthropicModel {
    /// What to pass as `model`: a catalog id (`local/smollm2-135m-instruct`) or an
    /// organization's model (`mdl_…`).
    pub id: String,
    /// Always `model`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub display_name: String,
    /// RFC 3339: when the catalog was loaded, or when the organization's model was made.
    pub created_at: String,
    /// Always `active`: only models a request may name are listed.
    pub lifecycle: &'static str,
    /// The context window.
    pub max_input_tokens: Option<u32>,
    /// The most `max_tokens` a request may ask for, when the catalog limits it.
    pub max_tokens: Option<u32>,
}

/// A page of models, oldest first as listed.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnthropicModelList {
    pub data: Vec<AnthropicModel>,
    pub has_more: bool,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
}

/// Which page.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListModelsQuery {
    /// Models per page, 1 to 1000 (default 20).
    #[validate(range(min = 1, max = 1000))]
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// The models after this one.
    pub after_id: Option<String>,
    /// The models before this one.
    pub before_id: Option<String>,
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl AnthropicModel {
    /// A catalog model, `created_at` when the catalog was loaded.
    pub fn of_base(base: BaseModel, loaded: DateTime<Utc>) -> Self {
        Self {
            max_input_tokens: Some(base.context_window),
            max_tokens: base.max_tokens_per_request,
            id: base.id,
            kind: "model",
            display_name: base.display_name,
            created_at: rfc3339(loaded),
            lifecycle: "active",
        }
    }

    /// One of the organization's own models, with its base model's limits.
    pub fn of_user(view: &ModelView) -> Self {
        Self {
            id: view.model.id.to_string(),
            kind: "model",
            display_name: view.model.display_name.clone(),
            created_at: rfc3339(view.model.created_at),
            lifecycle: "active",
            max_input_tokens: view.parent.as_ref().map(|parent| parent.context_window),
            max_tokens: view
                .parent
                .as_ref()
                .and_then(|parent| parent.max_tokens_per_request),
        }
    }
}

impl AnthropicModelList {
    /// The page `query` asks for, of every model in order; `None` when `after_id` or
    /// `before_id` names no listed model.
    pub fn page(models: Vec<AnthropicModel>, query: &ListModelsQuery) -> Option<Self> {
        let limit = query.limit.unwrap_or(20) as usize;
        let position = |id: &str| models.iter().position(|model| model.id == id);
        let (start, end) = match (&query.after_id, &query.before_id) {
            (Some(after), _) => {
                let start = position(after)? + 1;
                (start, (start + limit).min(models.len()))
            }
            (None, Some(before)) => {
                let end = position(before)?;
                (end.saturating_sub(limit), end)
            }
            (None, None) => (0, limit.min(models.len())),
        };
        let has_more = if query.before_id.is_some() && query.after_id.is_none() {
            start > 0
        } else {
            end < models.len()
        };
        let data: Vec<AnthropicModel> = models[start..end].to_vec();
        Some(Self {
            first_id: data.first().map(|model| model.id.clone()),
            last_id: data.last().map(|model| model.id.clone()),
            has_more,
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn models(n: usize) -> Vec<AnthropicModel> {
        (0..n)
            .map(|i| AnthropicModel {
                id: format!("m{i}"),
                kind: "model",
                display_name: format!("M{i}"),
                created_at: rfc3339(Utc::now()),
                lifecycle: "active",
                max_input_tokens: None,
                max_tokens: None,
            })
            .collect()
    }

    fn query(limit: u32, after: Option<&str>, before: Option<&str>) -> ListModelsQuery {
        ListModelsQuery {
            limit: Some(limit),
            after_id: after.map(str::to_owned),
            before_id: before.map(str::to_owned),
        }
    }

    #[test]
    fn pages_follow_after_and_before() {
        let first = AnthropicModelList::page(models(5), &query(2, None, None)).unwrap();
        assert_eq!(
            (
                first.first_id.as_deref(),
                first.last_id.as_deref(),
                first.has_more
            ),
            (Some("m0"), Some("m1"), true)
        );
        let last = AnthropicModelList::page(models(5), &query(2, Some("m3"), None)).unwrap();
        assert_eq!((last.data.len(), last.has_more), (1, false));
        let before = AnthropicModelList::page(models(5), &query(2, None, Some("m3"))).unwrap();
        assert_eq!(
            (before.first_id.as_deref(), before.has_more),
            (Some("m1"), true)
        );
        assert!(AnthropicModelList::page(models(5), &query(2, Some("gone"), None)).is_none());
    }
}
