//! System prompts: ordered compositions of particles, and their rendering (`compose`).
//! System profiles are system prompts with `isSystem: true`: readable, composable, read-only.
//! Its bodies are `tessera_wire::v1::system_prompts`.

use actix_web::{HttpRequest, HttpResponse, delete, get, http::header, patch, post, web};
use tessera_kernel::DomainError;
use tessera_prompts::{
    AssociationChanges, AssociationId, Description, Name, NewSystemPrompt, SystemPromptChanges,
    SystemPromptId,
};
use tessera_wire::page::PageOf;
use tessera_wire::v1::system_prompts::{
    ComposeQuery, ComposedPromptOut, CreateSystemPrompt, ListSystemPrompts, ParticlePlacementOut,
    PlaceParticle, SystemPromptOut, SystemPromptPage, UpdatePlacement, UpdateSystemPrompt,
};

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};
use tessera_wire::parse::{expansions, page_limit, path_id, text_field};

fn prompt_id(text: &str) -> Result<SystemPromptId, DomainError> {
    path_id(text, "system prompt")
}

fn association_id(text: &str) -> Result<AssociationId, DomainError> {
    path_id(text, "particle placement")
}

fn expands_particles(req: &HttpRequest) -> Result<bool, ApiError> {
    Ok(expansions(req.query_string(), &["particles"])?
        .iter()
        .any(|value| value == "particles"))
}

/// Create a system prompt, optionally with its first particles.
#[utoipa::path(
    tag = "System prompts",
    operation_id = "createSystemPrompt",
    request_body = CreateSystemPrompt,
    responses(
        (status = 201, description = "Created (with its particles)", body = SystemPromptOut),
        (status = 422, description = "Invalid request, or an unknown particle or version (`loc` points at it)", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/system-prompts")]
pub async fn create_system_prompt(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateSystemPrompt>,
) -> Result<HttpResponse, ApiError> {
    let new = NewSystemPrompt {
        name: text_field("name", &body.name, Name::parse)?,
        description: text_field("description", &body.description, Description::parse)?,
        enabled: body.enabled.unwrap_or(true),
        particles: body
            .particles
            .into_iter()
            .map(PlaceParticle::into_new)
            .collect(),
    };
    let view = state
        .prompts
        .acting_as(caller.actor().clone())
        .create_system_prompt(caller.organization(), new)
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::Created()
        .insert_header((
            header::LOCATION,
            format!("/v1/system-prompts/{}", view.prompt.id),
        ))
        .json(SystemPromptOut::from(view, true)))
}

/// List the organization's system prompts (or the system profiles), oldest first.
#[utoipa::path(
    tag = "System prompts",
    operation_id = "listSystemPrompts",
    params(
        ListSystemPrompts,
        ("expand[]" = Option<Vec<String>>, Query, description = "`particles` adds each prompt's placements")
    ),
    responses(
        (status = 200, description = "A page of system prompts", body = SystemPromptPage),
        (status = 422, description = "Invalid limit, cursor or expansion", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/system-prompts")]
pub async fn list_system_prompts(
    caller: Caller,
    state: web::Data<AppState>,
    req: HttpRequest,
    ValidQuery(query): ValidQuery<ListSystemPrompts>,
) -> Result<web::Json<SystemPromptPage>, ApiError> {
    let expand = expands_particles(&req)?;
    let page = state
        .prompts
        .list_system_prompts(
            caller.organization(),
            query.system.unwrap_or(false),
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(PageOf::of(page, |view| {
        SystemPromptOut::from(view, expand)
    })))
}

/// One system prompt (an organization's, or a system profile).
#[utoipa::path(
    tag = "System prompts",
    operation_id = "getSystemPrompt",
    params(
        ("system_prompt_id" = String, Path, description = "The system prompt id"),
        ("expand[]" = Option<Vec<String>>, Query, description = "`particles` adds the placements")
    ),
    responses(
        (status = 200, description = "The system prompt", body = SystemPromptOut),
        (status = 404, description = "No such system prompt", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Unknown expansion", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/system-prompts/{system_prompt_id}")]
pub async fn get_system_prompt(
    caller: Caller,
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<web::Json<SystemPromptOut>, ApiError> {
    let expand = expands_particles(&req)?;
    let view = state
        .prompts
        .get_system_prompt(caller.organization(), &prompt_id(&path)?)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(SystemPromptOut::from(view, expand)))
}

/// Change a system prompt's name, description or `enabled`.
#[utoipa::path(
    tag = "System prompts",
    operation_id = "updateSystemPrompt",
    params(("system_prompt_id" = String, Path, description = "The system prompt id")),
    request_body = UpdateSystemPrompt,
    responses(
        (status = 200, description = "The system prompt (with its particles)", body = SystemPromptOut),
        (status = 403, description = "A system profile (read-only)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such system prompt", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[patch("/v1/system-prompts/{system_prompt_id}")]
pub async fn update_system_prompt(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<UpdateSystemPrompt>,
) -> Result<web::Json<SystemPromptOut>, ApiError> {
    let id = prompt_id(&path)?;
    let changes = SystemPromptChanges {
        name: body
            .name
            .as_deref()
            .map(|n| text_field("name", n, Name::parse))
            .transpose()?,
        description: body
            .description
            .as_deref()
            .map(|d| text_field("description", d, Description::parse))
            .transpose()?,
        enabled: body.enabled,
    };
    let view = state
        .prompts
        .acting_as(caller.actor().clone())
        .update_system_prompt(caller.organization(), &id, changes)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(SystemPromptOut::from(view, true)))
}

/// Delete a system prompt (its particles stay).
#[utoipa::path(
    tag = "System prompts",
    operation_id = "deleteSystemPrompt",
    params(("system_prompt_id" = String, Path, description = "The system prompt id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "A system profile (read-only)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such system prompt", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/system-prompts/{system_prompt_id}")]
pub async fn delete_system_prompt(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .prompts
        .acting_as(caller.actor().clone())
        .delete_system_prompt(caller.organization(), &prompt_id(&path)?)
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::NoContent().finish())
}

/// Place a particle in a system prompt, pinned to a version or following the latest.
#[utoipa::path(
    tag = "System prompts",
    operation_id = "addSystemPromptParticle",
    params(("system_prompt_id" = String, Path, description = "The system prompt id")),
    request_body = PlaceParticle,
    responses(
        (status = 201, description = "Placed", body = ParticlePlacementOut),
        (status = 403, description = "A system profile (read-only)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such system prompt", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request, or an unknown particle or version", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/system-prompts/{system_prompt_id}/particles")]
pub async fn add_particle(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<PlaceParticle>,
) -> Result<HttpResponse, ApiError> {
    let id = prompt_id(&path)?;
    let entry = state
        .prompts
        .acting_as(caller.actor().clone())
        .add_particle(caller.organization(), &id, body.into_new())
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/v1/system-prompts/{id}")))
        .json(ParticlePlacementOut::from(&entry)))
}

/// Reorder a placement and/or pin or unpin its version.
#[utoipa::path(
    tag = "System prompts",
    operation_id = "updateSystemPromptParticle",
    params(
        ("system_prompt_id" = String, Path, description = "The system prompt id"),
        ("association_id" = String, Path, description = "The placement id")
    ),
    request_body = UpdatePlacement,
    responses(
        (status = 200, description = "The placement", body = ParticlePlacementOut),
        (status = 403, description = "A system profile (read-only)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such system prompt or placement", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request, or a version of another particle", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[patch("/v1/system-prompts/{system_prompt_id}/particles/{association_id}")]
pub async fn update_particle_placement(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    ValidJson(body): ValidJson<UpdatePlacement>,
) -> Result<web::Json<ParticlePlacementOut>, ApiError> {
    let (prompt, association) = path.into_inner();
    let (prompt, association) = (prompt_id(&prompt)?, association_id(&association)?);
    let changes = AssociationChanges {
        order: body.order.map(|o| u32::try_from(o).unwrap_or_default()),
        pin: body.particle_version_id,
    };
    let entry = state
        .prompts
        .acting_as(caller.actor().clone())
        .update_association(caller.organization(), &prompt, &association, changes)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(ParticlePlacementOut::from(&entry)))
}

/// Remove a placement from a system prompt (the particle itself stays).
#[utoipa::path(
    tag = "System prompts",
    operation_id = "removeSystemPromptParticle",
    params(
        ("system_prompt_id" = String, Path, description = "The system prompt id"),
        ("association_id" = String, Path, description = "The placement id")
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, description = "A system profile (read-only)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such system prompt or placement", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/system-prompts/{system_prompt_id}/particles/{association_id}")]
pub async fn remove_particle(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (prompt, association) = path.into_inner();
    state
        .prompts
        .acting_as(caller.actor().clone())
        .remove_association(
            caller.organization(),
            &prompt_id(&prompt)?,
            &association_id(&association)?,
        )
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::NoContent().finish())
}

/// Render a system prompt to text, now or as of a past moment (exact: versions are
/// immutable and placements keep their history).
#[utoipa::path(
    tag = "System prompts",
    operation_id = "composeSystemPrompt",
    params(("system_prompt_id" = String, Path, description = "The system prompt id"), ComposeQuery),
    responses(
        (status = 200, description = "The composed prompt", body = ComposedPromptOut),
        (status = 404, description = "No such system prompt", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`at` is malformed or in the future", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/system-prompts/{system_prompt_id}/compose")]
pub async fn compose(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidQuery(query): ValidQuery<ComposeQuery>,
) -> Result<web::Json<ComposedPromptOut>, ApiError> {
    Ok(web::Json(composed(&state, &caller, &path, query).await?))
}

/// A system prompt rendered as a model would receive it (also the MCP tool
/// `compose_system_prompt`).
pub(crate) async fn composed(
    state: &AppState,
    caller: &Caller,
    system_prompt: &str,
    query: ComposeQuery,
) -> Result<ComposedPromptOut, ApiError> {
    let composition = state
        .prompts
        .compose(caller.organization(), &prompt_id(system_prompt)?, query.at)
        .await
        .map_err(DomainError::from)?;
    Ok(ComposedPromptOut::from(
        composition,
        state.prompts.counter().encoding(),
        query.at,
    ))
}
