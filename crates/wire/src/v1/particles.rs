//! The bodies of `/v1/particles`: a particle with its latest version, its immutable
//! versions and their pages, the create, replace and update requests, the list's query, the
//! particle category and the size warnings (shared with the system prompts), each mapped from
//! the prompts domain's records.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_prompts::{Category, Particle, ParticleVersion, Warning, particle_warnings};
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use crate::paged;

/// What part of a system prompt a particle fills; also the composition order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = ParticleCategory)]
pub enum CategoryDto {
    Role,
    Tone,
    Guardrails,
    Constraints,
    Format,
}

impl From<CategoryDto> for Category {
    fn from(category: CategoryDto) -> Self {
        match category {
            CategoryDto::Role => Category::Role,
            CategoryDto::Tone => Category::Tone,
            CategoryDto::Guardrails => Category::Guardrails,
            CategoryDto::Constraints => Category::Constraints,
            CategoryDto::Format => Category::Format,
        }
    }
}

impl From<Category> for CategoryDto {
    fn from(category: Category) -> Self {
        match category {
            Category::Role => CategoryDto::Role,
            Category::Tone => CategoryDto::Tone,
            Category::Guardrails => CategoryDto::Guardrails,
            Category::Constraints => CategoryDto::Constraints,
            Category::Format => CategoryDto::Format,
        }
    }
}

/// A non-blocking note: the record was saved, but is outside a recommendation.
#[derive(Debug, Serialize, ToSchema)]
pub struct WarningOut {
    /// `particle_size` or `composition_size`.
    #[schema(example = "particle_size")]
    pub code: String,
    pub message: String,
}

impl From<Warning> for WarningOut {
    fn from(warning: Warning) -> Self {
        Self {
            code: warning.code.to_owned(),
            message: warning.message,
        }
    }
}

pub fn warnings_out(warnings: Vec<Warning>) -> Vec<WarningOut> {
    warnings.into_iter().map(WarningOut::from).collect()
}

/// A particle with its latest version.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParticleOut {
    #[schema(example = "par_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    /// `null` for system particles.
    pub organization_id: Option<String>,
    pub name: String,
    pub category: CategoryDto,
    pub description: String,
    /// The latest version's content.
    pub content: String,
    /// The latest version's number (1, 2, …).
    pub version: u32,
    /// The latest version's id (pin it with `particleVersionId`).
    #[schema(example = "pav_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub version_id: String,
    /// Tokens of the latest content (`o200k_base`).
    pub token_count: u32,
    /// True for read-only system particles.
    pub is_system: bool,
    /// Stable identifier of a system particle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Size guidance for the particle's category (never blocks the request).
    pub warnings: Vec<WarningOut>,
}

impl From<Particle> for ParticleOut {
    fn from(particle: Particle) -> Self {
        Self {
            warnings: warnings_out(particle_warnings(
                particle.category,
                particle.latest.token_count,
            )),
            id: particle.id.to_string(),
            organization_id: particle.owner.organization().map(ToString::to_string),
            name: particle.name,
            category: particle.category.into(),
            description: particle.description,
            content: particle.latest.content,
            version: particle.latest.number,
            version_id: particle.latest.id.to_string(),
            token_count: particle.latest.token_count,
            is_system: particle.owner.is_system(),
            slug: particle.slug,
            created_at: particle.created_at,
            updated_at: particle.updated_at,
        }
    }
}

/// One immutable version of a particle's content.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParticleVersionOut {
    #[schema(example = "pav_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    pub particle_id: String,
    pub version: u32,
    pub content: String,
    pub token_count: u32,
    pub created_at: DateTime<Utc>,
}

impl From<ParticleVersion> for ParticleVersionOut {
    fn from(version: ParticleVersion) -> Self {
        Self {
            id: version.id.to_string(),
            particle_id: version.particle_id.to_string(),
            version: version.number,
            content: version.content,
            token_count: version.token_count,
            created_at: version.created_at,
        }
    }
}

paged!(ParticleOut => ParticlePage, "A page of particles.");

paged!(ParticleVersionOut => ParticleVersionPage, "A page of particle versions, oldest first.");

/// A new particle.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateParticle {
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    pub category: CategoryDto,
    /// Not blank; at most 32 768 characters.
    #[validate(length(min = 1, max = 32768))]
    #[schema(min_length = 1, max_length = 32768)]
    pub content: String,
    #[validate(length(max = 1000))]
    #[schema(max_length = 1000)]
    #[serde(default)]
    pub description: String,
}

/// New content (a new version unless identical); name and description may change too.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplaceParticle {
    #[validate(length(min = 1, max = 32768))]
    #[schema(min_length = 1, max_length = 32768)]
    pub content: String,
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub name: Option<String>,
    #[validate(length(max = 1000))]
    #[schema(max_length = 1000)]
    pub description: Option<String>,
}

/// Name and description changes; never a new version.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateParticle {
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub name: Option<String>,
    #[validate(length(max = 1000))]
    #[schema(max_length = 1000)]
    pub description: Option<String>,
}

/// Page through particles.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParticles {
    /// Only particles of this category.
    pub category: Option<CategoryDto>,
    /// `true` lists the read-only system particles instead of the organization's.
    pub system: Option<bool>,
    /// 1 to 100, default 20.
    #[validate(range(min = 1, max = 100))]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
}
