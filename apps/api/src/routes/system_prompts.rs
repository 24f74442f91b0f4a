//! System prompts: ordered compositions of particles, and their rendering (`compose`).
//! System profiles are system prompts with `isSystem: true`: readable, composable, read-only.

use actix_web::{HttpRequest, HttpResponse, delete, get, http::header, patch, post, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_kernel::DomainError;
use tessera_prompts::{
    AssociationChanges, AssociationId, Composition, Description, Name, NewAssociation,
    NewSystemPrompt, ParticleId, ParticleVersionId, ResolvedAssociation, SystemPromptChanges,
    SystemPromptId, SystemPromptView, composition_warnings,
};
use tessera_wire::page::PageOf;
use tessera_wire::paged;
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use crate::{
    access::Caller,
    extract::{ValidJson, ValidQuery, expansions, page_limit, path_id, text_field},
    problem::{ApiError, Problem, ValidationProblem},
    routes::particles::{CategoryDto, WarningOut, warnings_out},
    state::AppState,
};

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
    pub(crate) fn from(view: SystemPromptView, expand_particles: bool) -> Self {
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
    fn from(composition: Composition, encoding: &str, at: Option<DateTime<Utc>>) -> Self {
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
    fn into_new(self) -> NewAssociation {
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
    #[serde(default, deserialize_with = "tessera_wire::nullable")]
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

fn prompt_id(text: &str) -> Result<SystemPromptId, ApiError> {
    path_id(text, "system prompt")
}

fn association_id(text: &str) -> Result<AssociationId, ApiError> {
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
        .acting_as(caller.actor())
        .create_system_prompt(&caller.0.organization_id, new)
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
            &caller.0.organization_id,
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
        .get_system_prompt(&caller.0.organization_id, &prompt_id(&path)?)
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
        .acting_as(caller.actor())
        .update_system_prompt(&caller.0.organization_id, &id, changes)
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
        .acting_as(caller.actor())
        .delete_system_prompt(&caller.0.organization_id, &prompt_id(&path)?)
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
        .acting_as(caller.actor())
        .add_particle(&caller.0.organization_id, &id, body.into_new())
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
        .acting_as(caller.actor())
        .update_association(&caller.0.organization_id, &prompt, &association, changes)
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
        .acting_as(caller.actor())
        .remove_association(
            &caller.0.organization_id,
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
        .compose(
            &caller.0.organization_id,
            &prompt_id(system_prompt)?,
            query.at,
        )
        .await
        .map_err(DomainError::from)?;
    Ok(ComposedPromptOut::from(
        composition,
        state.prompts.counter().encoding(),
        query.at,
    ))
}
