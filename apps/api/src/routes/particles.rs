//! Particles: reusable system-prompt components with immutable, numbered versions.

use actix_web::{HttpResponse, delete, get, http::header, patch, post, put, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_kernel::DomainError;
use tessera_prompts::{
    Category, Content, Description, Name, NewParticle, Particle, ParticleChanges, ParticleId,
    ParticleVersion, Warning, particle_warnings,
};
use tessera_wire::page::{PageOf, PageQuery};
use tessera_wire::paged;
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use crate::{
    access::Caller,
    extract::{ValidJson, ValidQuery, page_limit, path_id, text_field},
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};

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

fn particle_id(text: &str) -> Result<ParticleId, ApiError> {
    path_id(text, "particle")
}

/// Create a particle (version 1).
#[utoipa::path(
    tag = "Particles",
    operation_id = "createParticle",
    request_body = CreateParticle,
    responses(
        (status = 201, description = "Created", body = ParticleOut),
        (status = 422, description = "Invalid request", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/particles")]
pub async fn create_particle(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateParticle>,
) -> Result<HttpResponse, ApiError> {
    let new = NewParticle {
        name: text_field("name", &body.name, Name::parse)?,
        category: body.category.into(),
        content: text_field("content", &body.content, Content::parse)?,
        description: text_field("description", &body.description, Description::parse)?,
    };
    let particle = state
        .prompts
        .acting_as(caller.actor())
        .create_particle(&caller.0.organization_id, new)
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/v1/particles/{}", particle.id)))
        .json(ParticleOut::from(particle)))
}

/// List the organization's particles (or the system's), oldest first.
#[utoipa::path(
    tag = "Particles",
    operation_id = "listParticles",
    params(ListParticles),
    responses(
        (status = 200, description = "A page of particles", body = ParticlePage),
        (status = 422, description = "Invalid filter, limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/particles")]
pub async fn list_particles(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<ListParticles>,
) -> Result<web::Json<ParticlePage>, ApiError> {
    let page = state
        .prompts
        .list_particles(
            &caller.0.organization_id,
            query.system.unwrap_or(false),
            query.category.map(Category::from),
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(PageOf::from(page)))
}

/// One particle with its latest version and token count.
#[utoipa::path(
    tag = "Particles",
    operation_id = "getParticle",
    params(("particle_id" = String, Path, description = "The particle id")),
    responses(
        (status = 200, description = "The particle", body = ParticleOut),
        (status = 404, description = "No such particle in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/particles/{particle_id}")]
pub async fn get_particle(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ParticleOut>, ApiError> {
    let particle = state
        .prompts
        .get_particle(&caller.0.organization_id, &particle_id(&path)?)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(particle.into()))
}

/// Replace a particle's content: a change creates the next version, which every unpinned
/// placement follows at once; identical content creates none.
#[utoipa::path(
    tag = "Particles",
    operation_id = "replaceParticleContent",
    params(("particle_id" = String, Path, description = "The particle id")),
    request_body = ReplaceParticle,
    responses(
        (status = 200, description = "The particle with its (possibly new) latest version", body = ParticleOut),
        (status = 403, description = "A system particle (read-only)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such particle in this organization", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Changed concurrently; retry", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[put("/v1/particles/{particle_id}")]
pub async fn replace_particle(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<ReplaceParticle>,
) -> Result<web::Json<ParticleOut>, ApiError> {
    let id = particle_id(&path)?;
    let content = text_field("content", &body.content, Content::parse)?;
    let changes = particle_changes(body.name.as_deref(), body.description.as_deref())?;
    let organization = &caller.0.organization_id;
    let (mut particle, _) = state
        .prompts
        .acting_as(caller.actor())
        .update_content(organization, &id, content)
        .await
        .map_err(DomainError::from)?;
    if !changes.is_empty() {
        particle = state
            .prompts
            .acting_as(caller.actor())
            .update_particle(organization, &id, changes)
            .await
            .map_err(DomainError::from)?;
    }
    Ok(web::Json(particle.into()))
}

fn particle_changes(
    name: Option<&str>,
    description: Option<&str>,
) -> Result<ParticleChanges, ApiError> {
    Ok(ParticleChanges {
        name: name
            .map(|n| text_field("name", n, Name::parse))
            .transpose()?,
        description: description
            .map(|d| text_field("description", d, Description::parse))
            .transpose()?,
    })
}

/// Rename or re-describe a particle (no new version).
#[utoipa::path(
    tag = "Particles",
    operation_id = "updateParticle",
    params(("particle_id" = String, Path, description = "The particle id")),
    request_body = UpdateParticle,
    responses(
        (status = 200, description = "The particle", body = ParticleOut),
        (status = 403, description = "A system particle (read-only)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such particle in this organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[patch("/v1/particles/{particle_id}")]
pub async fn update_particle(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<UpdateParticle>,
) -> Result<web::Json<ParticleOut>, ApiError> {
    let id = particle_id(&path)?;
    let changes = particle_changes(body.name.as_deref(), body.description.as_deref())?;
    let particle = state
        .prompts
        .acting_as(caller.actor())
        .update_particle(&caller.0.organization_id, &id, changes)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(particle.into()))
}

/// Delete a particle; refused (409) while a system prompt places it.
#[utoipa::path(
    tag = "Particles",
    operation_id = "deleteParticle",
    params(("particle_id" = String, Path, description = "The particle id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "A system particle (read-only)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such particle in this organization", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Still placed in system prompts (named in `detail`)", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/particles/{particle_id}")]
pub async fn delete_particle(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .prompts
        .acting_as(caller.actor())
        .delete_particle(&caller.0.organization_id, &particle_id(&path)?)
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::NoContent().finish())
}

/// A particle's versions, oldest first.
#[utoipa::path(
    tag = "Particles",
    operation_id = "listParticleVersions",
    params(("particle_id" = String, Path, description = "The particle id"), PageQuery),
    responses(
        (status = 200, description = "A page of versions", body = ParticleVersionPage),
        (status = 404, description = "No such particle in this organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/particles/{particle_id}/versions")]
pub async fn list_versions(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidQuery(query): ValidQuery<PageQuery>,
) -> Result<web::Json<ParticleVersionPage>, ApiError> {
    let page = state
        .prompts
        .list_versions(
            &caller.0.organization_id,
            &particle_id(&path)?,
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(PageOf::from(page)))
}

/// One version of a particle.
#[utoipa::path(
    tag = "Particles",
    operation_id = "getParticleVersion",
    params(
        ("particle_id" = String, Path, description = "The particle id"),
        ("version" = u32, Path, description = "The version number, from 1")
    ),
    responses(
        (status = 200, description = "The version", body = ParticleVersionOut),
        (status = 404, description = "No such particle or version", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/particles/{particle_id}/versions/{version}")]
pub async fn get_version(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<web::Json<ParticleVersionOut>, ApiError> {
    let (id, number) = path.into_inner();
    let id = particle_id(&id)?;
    let number: u32 = number.parse().map_err(|_| {
        ApiError::from(DomainError::not_found(
            "particle version",
            format!("{id}/versions/{number}"),
        ))
    })?;
    let version = state
        .prompts
        .get_version(&caller.0.organization_id, &id, number)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(version.into()))
}
