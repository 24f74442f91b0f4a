//! The bodies of `/v1/system-prompts`: a system prompt (or system profile) with its
//! particle placements, its page, the composed prompt, the create, update and placement
//! requests, and the list's and composition's queries, each mapped from the prompts
//! domain's records.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_prompts::{
    Composition, NewAssociation, ParticleId, ParticleVersionId, ResolvedAssociation,
    SystemPromptView, composition_warnings,
};
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use crate::paged;
use crate::v1::particles::{CategoryDto, WarningOut, warnings_out};

/// A particle placed in a system prompt.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParticlePlacementOut {
    #[schema(example = "spa_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    pub particle_id: String,
    /// Position within the particle's category (categories always compose in the order
    /// role, tone, guardrails, constraints, format).
    pub order: u32,
    pub particle_name: String,
    pub particle_category: CategoryDto,
    /// The version in effect: the pinned one, else the particle's latest.
    pub particle_version_id: String,
    /// The version number in effect.
    pub version: u32,
    /// The pinned version number; `null` when the placement follows the latest version.
    pub pinned_version: Option<u32>,
    pub token_count: u32,
}

impl From<&ResolvedAssociation> for ParticlePlacementOut {
    fn from(entry: &ResolvedAssociation) -> Self {
        Self {
            id: entry.association.id.to_string(),
            particle_id: entry.association.particle_id.to_string(),
            order: entry.association.order,
            particle_name: entry.particle_name.clone(),
            particle_category: entry.category.into(),
            particle_version_id: entry.version.id.to_string(),
            version: entry.version.number,
            pinned_version: entry.association.pin.as_ref().map(|pin| pin.number),
            token_count: entry.version.token_count,
        }
    }
}

/// A system prompt.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemPromptOut {
    #[schema(example = "spr_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    /// `null` for system profiles.
    pub organization_id: Option<String>,
    pub name: String,
    pub description: String,
    pub enabled: bool,
    /// True for a read-only system profile.
    pub is_system: bool,
    /// Stable kebab-case identifier of a system profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    /// The sum of the current particles' token counts.
    pub total_token_count: u32,
    pub particle_count: u32,
    /// In composition order; present when expanded (`expand[]=particles`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub particles: Option<Vec<ParticlePlacementOut>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Size guidance for the whole composition (never blocks the request).
    pub warnings: Vec<WarningOut>,
}

impl SystemPromptOut {
    pub fn from(view: SystemPromptView, expand_particles: bool) -> Self {
        let layout = &view.layout;
        let prompt = view.prompt;
        Self {
            id: prompt.id.to_string(),
            organization_id: prompt.owner.organization().map(ToString::to_string),
            name: prompt.name,
            description: prompt.description,
            enabled: prompt.enabled,
            is_system: prompt.owner.is_system(),
            slug: prompt.slug,
            total_token_count: layout.total_token_count(),
            particle_count: layout.particle_count(),
            particles: expand_particles.then(|| {
                layout
                    .entries()
                    .iter()
                    .map(ParticlePlacementOut::from)
                    .collect()
            }),
            created_at: prompt.created_at,
            updated_at: prompt.updated_at,
            warnings: warnings_out(composition_warnings(
                layout.particle_count(),
                layout.total_token_count(),
            )),
        }
    }
}

paged!(SystemPromptOut => SystemPromptPage, "A page of system prompts.");

/// One particle of a composition.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComposedParticleOut {
    pub id: String,
    pub category: CategoryDto,
    pub version: u32,
    pub version_id: String,
    pub token_count: u32,
}

/// A system prompt rendered to text.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComposedPromptOut {
    /// The particles' contents (trimmed) in composition order, separated by a blank line.
    pub composed_prompt: String,
    /// Tokens of `composedPrompt` itself, separators included.
    pub total_tokens: u32,
    /// The tokenizer encoding that counted, e.g. `o200k_base`.
    pub encoding: String,
    pub particles: Vec<ComposedParticleOut>,
    /// The moment composed; `null` for now.
    pub at: Option<DateTime<Utc>>,
    pub warnings: Vec<WarningOut>,
}

impl ComposedPromptOut {
    pub fn from(composition: Composition, encoding: &str, at: Option<DateTime<Utc>>) -> Self {
        let count = u32::try_from(composition.particles.len()).unwrap_or(u32::MAX);
        Self {
            warnings: warnings_out(composition_warnings(count, composition.total_tokens)),
            composed_prompt: composition.text,
            total_tokens: composition.total_tokens,
            encoding: encoding.to_owned(),
            particles: composition
                .particles
                .into_iter()
                .map(|p| ComposedParticleOut {
                    id: p.id.to_string(),
                    category: p.category.into(),
                    version: p.version,
                    version_id: p.version_id.to_string(),
                    token_count: p.token_count,
                })
                .collect(),
            at,
        }
    }
}

/// A particle to place.
#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlaceParticle {
    #[schema(value_type = String, example = "par_0190f5c1a3e27c3d9b1e4a0c5d6e7f80", pattern = "^par_[0-9a-f]{32}$")]
    pub particle_id: ParticleId,
    /// Position within the particle's category, 0 or more.
    #[validate(range(min = 0, max = 1000000))]
    #[schema(minimum = 0, maximum = 1000000)]
    pub order: i64,
    /// Pins this version; omit to follow the particle's latest version.
    #[schema(value_type = Option<String>, pattern = "^pav_[0-9a-f]{32}$")]
    pub particle_version_id: Option<ParticleVersionId>,
}

impl PlaceParticle {
    pub fn into_new(self) -> NewAssociation {
        NewAssociation {
            particle_id: self.particle_id,
            order: u32::try_from(self.order).unwrap_or_default(),
            pin: self.particle_version_id,
        }
    }
}

/// A new system prompt, optionally with its first particles.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateSystemPrompt {
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    #[validate(length(max = 1000))]
    #[schema(max_length = 1000)]
    #[serde(default)]
    pub description: String,
    /// Default true.
    pub enabled: Option<bool>,
    #[validate(length(max = 100), nested)]
    #[schema(max_items = 100)]
    #[serde(default)]
    pub particles: Vec<PlaceParticle>,
}

/// Changes of a system prompt's own fields.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateSystemPrompt {
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub name: Option<String>,
    #[validate(length(max = 1000))]
    #[schema(max_length = 1000)]
    pub description: Option<String>,
    pub enabled: Option<bool>,
}

/// Moves a placement and/or pins or unpins it.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdatePlacement {
    #[validate(range(min = 0, max = 1000000))]
    #[schema(minimum = 0, maximum = 1000000)]
    pub order: Option<i64>,
    /// A version id pins it; `null` unpins (follow the latest); absent leaves it.
    #[serde(default, deserialize_with = "crate::nullable")]
    #[schema(value_type = Option<String>, pattern = "^pav_[0-9a-f]{32}$")]
    pub particle_version_id: Option<Option<ParticleVersionId>>,
}

/// Page through system prompts.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListSystemPrompts {
    /// `true` lists the read-only system profiles instead of the organization's prompts.
    pub system: Option<bool>,
    /// 1 to 100, default 20.
    #[validate(range(min = 1, max = 100))]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

/// When to compose.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ComposeQuery {
    /// Compose as of this moment (RFC 3339; not in the future). Default: now.
    pub at: Option<DateTime<Utc>>,
}
