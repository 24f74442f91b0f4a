//! Particles: reusable system-prompt components with immutable, numbered versions. Its
//! bodies are `tessera_wire::v1::particles`.

use actix_web::{HttpResponse, delete, get, http::header, patch, post, put, web};
use tessera_kernel::DomainError;
use tessera_prompts::{
    Category, Content, Description, Name, NewParticle, ParticleChanges, ParticleId,
};
use tessera_wire::page::{PageOf, PageQuery};
use tessera_wire::v1::particles::{
    CreateParticle, ListParticles, ParticleOut, ParticlePage, ParticleVersionOut,
    ParticleVersionPage, ReplaceParticle, UpdateParticle,
};

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};
use tessera_wire::parse::{page_limit, path_id, text_field};

fn particle_id(text: &str) -> Result<ParticleId, DomainError> {
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
        .acting_as(caller.actor().clone())
        .create_particle(caller.organization(), new)
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
            caller.organization(),
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
        .get_particle(caller.organization(), &particle_id(&path)?)
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
    let particle = state
        .prompts
        .acting_as(caller.actor().clone())
        .replace_particle(caller.organization(), &id, content, changes)
        .await
        .map_err(DomainError::from)?;
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
        .acting_as(caller.actor().clone())
        .update_particle(caller.organization(), &id, changes)
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
        .acting_as(caller.actor().clone())
        .delete_particle(caller.organization(), &particle_id(&path)?)
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
            caller.organization(),
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
        .get_version(caller.organization(), &id, number)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(version.into()))
}
