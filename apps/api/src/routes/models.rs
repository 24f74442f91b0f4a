//! Models: the catalog of base models, and the organization's own models built on them.
//! Its bodies are `tessera_wire::v1::models`.

use actix_web::{HttpResponse, delete, get, http::header, patch, post, web};
use tessera_kernel::DomainError;
use tessera_models::{ModelChanges, ModelId, NewUserModel};
use tessera_prompts::{Description, Name};
use tessera_wire::page::{PageOf, PageQuery};
use tessera_wire::v1::models::{
    Catalog, CreateModel, DeploymentOut, Deployments, ModelDeploymentsOut, ModelOut, ModelPage,
    UpdateModel,
};

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};
use tessera_wire::parse::{page_limit, path_id, text_field};

fn model_id(text: &str) -> Result<ModelId, DomainError> {
    path_id(text, "model")
}

fn description(text: Option<&str>) -> Result<Option<Description>, DomainError> {
    text.map(|d| text_field("description", d, Description::parse))
        .transpose()
}

/// The base models organizations can build on.
#[utoipa::path(
    tag = "Models",
    operation_id = "getModelCatalog",
    responses((status = 200, description = "Every base model, with its lifecycle state", body = Catalog))
)]
#[get("/v1/models/catalog")]
pub async fn catalog(state: web::Data<AppState>) -> web::Json<Catalog> {
    let loaded_at = state.models.catalog_loaded_at();
    web::Json(Catalog {
        items: state
            .models
            .base_models()
            .into_iter()
            .map(|(base, lifecycle)| ModelOut::base(base, lifecycle, loaded_at))
            .collect(),
    })
}

/// The deployments of every catalog model served by a remote provider, with the health the
/// router sees (shared by the replicas when Redis is configured).
#[utoipa::path(
    tag = "Models",
    operation_id = "listModelDeployments",
    responses(
        (status = 200, description = "Each routed catalog model's deployments and circuits", body = Deployments),
        (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks `org:admin`", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/models/catalog/deployments")]
pub async fn deployments(state: web::Data<AppState>) -> web::Json<Deployments> {
    let items = state
        .models
        .deployment_health()
        .await
        .into_iter()
        .map(|(model_id, deployments)| ModelDeploymentsOut {
            model_id,
            deployments: deployments.into_iter().map(DeploymentOut::of).collect(),
        })
        .collect();
    web::Json(Deployments { items })
}

/// Create a model built on a base model.
#[utoipa::path(
    tag = "Models",
    operation_id = "createModel",
    request_body = CreateModel,
    responses(
        (status = 201, description = "Created", body = ModelOut),
        (status = 422, description = "Invalid request, unknown parent or system prompt", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/models")]
pub async fn create_model(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateModel>,
) -> Result<HttpResponse, ApiError> {
    let new = NewUserModel {
        parent_model_id: body.parent_model_id,
        display_name: text_field("displayName", &body.display_name, Name::parse)?,
        description: description(body.description.as_deref())?,
        system_prompt_id: body.system_prompt_id,
        system_prompt: body.system_prompt,
        metadata: body.metadata.unwrap_or_default(),
    };
    let view = state
        .models
        .create_by(caller.actor(), caller.organization(), new)
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/v1/models/{}", view.model.id)))
        .json(ModelOut::user(view)))
}

/// The organization's models, oldest first.
#[utoipa::path(
    tag = "Models",
    operation_id = "listModels",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of models", body = ModelPage),
        (status = 422, description = "Invalid limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/models")]
pub async fn list_models(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<PageQuery>,
) -> Result<web::Json<ModelPage>, ApiError> {
    let page = state
        .models
        .list(
            caller.organization(),
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(PageOf::of(page, ModelOut::user)))
}

/// One of the organization's models.
#[utoipa::path(
    tag = "Models",
    operation_id = "getModel",
    params(("model_id" = String, Path, description = "The model id")),
    responses(
        (status = 200, description = "The model", body = ModelOut),
        (status = 404, description = "No such model in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/models/{model_id}")]
pub async fn get_model(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ModelOut>, ApiError> {
    let view = state
        .models
        .get(caller.organization(), &model_id(&path)?)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(ModelOut::user(view)))
}

/// Change a model: name, description, base model, system prompt, metadata, enabled.
#[utoipa::path(
    tag = "Models",
    operation_id = "updateModel",
    params(("model_id" = String, Path, description = "The model id")),
    request_body = UpdateModel,
    responses(
        (status = 200, description = "The model", body = ModelOut),
        (status = 404, description = "No such model in this organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request, unknown parent or system prompt", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[patch("/v1/models/{model_id}")]
pub async fn update_model(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<UpdateModel>,
) -> Result<web::Json<ModelOut>, ApiError> {
    let id = model_id(&path)?;
    let changes = ModelChanges {
        display_name: body
            .display_name
            .as_deref()
            .map(|n| text_field("displayName", n, Name::parse))
            .transpose()?,
        description: body
            .description
            .map(|d| description(d.as_deref()))
            .transpose()?,
        parent_model_id: body.parent_model_id,
        system_prompt_id: body.system_prompt_id,
        system_prompt: body.system_prompt,
        metadata: body.metadata,
        enabled: body.enabled,
    };
    let view = state
        .models
        .update_by(caller.actor(), caller.organization(), &id, changes)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(ModelOut::user(view)))
}

/// Delete a model (existing chats keep their history).
#[utoipa::path(
    tag = "Models",
    operation_id = "deleteModel",
    params(("model_id" = String, Path, description = "The model id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such model in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/models/{model_id}")]
pub async fn delete_model(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .models
        .delete(caller.organization(), &model_id(&path)?, caller.actor())
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::NoContent().finish())
}
