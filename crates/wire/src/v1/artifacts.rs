//! The bodies of `/v1/artifacts`: an artifact as listed (without its content) and its page,
//! an artifact with its content, and the list query, mapped from the chats domain's
//! artifacts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_chats::Artifact;
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use crate::paged;

/// An artifact without its content.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactSummary {
    pub id: String,
    pub chat_id: String,
    /// The assistant message it was found in.
    pub message_id: String,
    /// `markdown`, `code`, `html`, `svg` or `mermaid`.
    pub kind: String,
    /// The code's language (`code` only, when the answer named one).
    pub language: Option<String>,
    pub title: String,
    /// Names the artifact within its chat; a later answer with the same identifier is a
    /// new version of it.
    pub identifier: String,
    pub version: u32,
    /// The media type `GET …/content` serves it with.
    pub media_type: String,
    pub size: usize,
    pub created_at: DateTime<Utc>,
}

/// An artifact with its content.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactOut {
    #[serde(flatten)]
    pub artifact: ArtifactSummary,
    pub content: String,
}

paged!(ArtifactSummary => ArtifactPage, "A page of artifacts.");

/// Page through artifacts, newest first.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ListArtifacts {
    /// Only this chat's artifacts.
    pub chat_id: Option<String>,
    /// 1 to 100, default 20.
    #[validate(range(min = 1, max = 100))]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

/// The artifact as listed: everything but its content.
pub fn summary(artifact: &Artifact) -> ArtifactSummary {
    ArtifactSummary {
        id: artifact.id.to_string(),
        chat_id: artifact.chat_id.to_string(),
        message_id: artifact.message_id.to_string(),
        kind: artifact.kind.as_str().to_owned(),
        language: artifact.language.clone(),
        title: artifact.title.clone(),
        identifier: artifact.identifier.clone(),
        version: artifact.version,
        media_type: artifact.kind.media_type().to_owned(),
        size: artifact.content.len(),
        created_at: artifact.created_at,
    }
}
