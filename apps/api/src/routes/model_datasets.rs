//! Datasets linked to a user model: `rag` datasets are searched for every question of a chat
//! on the model, `context` datasets are read whole into its prompt.

use actix_web::{HttpResponse, delete, get, http::header, post, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_kernel::DomainError;
use tessera_models::{DatasetLink, DatasetUsage, ModelId};
use tessera_wire::itemized;
use utoipa::ToSchema;
use validator::Validate;

use crate::{
    access::Caller,
    extract::{ValidJson, path_id},
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};

/// How the model uses the dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = DatasetUsageType)]
pub enum UsageTypeDto {
    /// The passages most relevant to the latest user message are retrieved (cited as sources).
    Rag,
    /// The whole dataset is part of every prompt; refused when it cannot fit the model's
    /// context window.
    Context,
}

impl From<UsageTypeDto> for DatasetUsage {
    fn from(usage: UsageTypeDto) -> Self {
        match usage {
            UsageTypeDto::Rag => DatasetUsage::Rag,
            UsageTypeDto::Context => DatasetUsage::Context,
        }
    }
}

impl From<DatasetUsage> for UsageTypeDto {
    fn from(usage: DatasetUsage) -> Self {
        match usage {
            DatasetUsage::Rag => UsageTypeDto::Rag,
            DatasetUsage::Context => UsageTypeDto::Context,
        }
    }
}

/// Link a dataset of the organization to the model.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateDatasetLink {
    #[schema(example = "dst_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub dataset_id: String,
    pub usage_type: UsageTypeDto,
}

/// A dataset linked to a model.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetLinkOut {
    pub model_id: String,
    pub dataset_id: String,
    pub usage_type: UsageTypeDto,
    pub created_at: DateTime<Utc>,
}

impl From<DatasetLink> for DatasetLinkOut {
    fn from(link: DatasetLink) -> Self {
        Self {
            model_id: link.model_id.to_string(),
            dataset_id: link.dataset_id,
            usage_type: link.usage.into(),
            created_at: link.created_at,
        }
    }
}

itemized!(DatasetLinkOut => DatasetLinkList, "The model's dataset links, oldest first.");

fn model_id(text: &str) -> Result<ModelId, ApiError> {
    path_id(text, "model")
}

/// Link a dataset to a model (linking it again changes its `usageType`).
#[utoipa::path(
    tag = "Models",
    operation_id = "createModelDatasetLink",
    params(("model_id" = String, Path, description = "The model id (an organization's model)")),
    request_body = CreateDatasetLink,
    responses(
        (status = 201, description = "Linked", body = DatasetLinkOut),
        (status = 200, description = "Already linked; the usage type is now the one given", body = DatasetLinkOut),
        (status = 404, description = "No such model in this organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request, a dataset the organization does not have (`body.datasetId`), or a `context` dataset too large for the model (`context_too_large`)", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/models/{model_id}/datasets")]
pub async fn link_dataset(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<CreateDatasetLink>,
) -> Result<HttpResponse, ApiError> {
    let model = model_id(&path)?;
    let (link, created) = state
        .dataset_links
        .link(
            &caller.0.organization_id,
            &model,
            &body.dataset_id,
            body.usage_type.into(),
            &caller.actor(),
        )
        .await
        .map_err(DomainError::from)?;
    let location = format!("/v1/models/{model}/datasets/{}", link.dataset_id);
    let out = DatasetLinkOut::from(link);
    Ok(if created {
        HttpResponse::Created()
            .insert_header((header::LOCATION, location))
            .json(out)
    } else {
        HttpResponse::Ok().json(out)
    })
}

/// The datasets linked to a model.
#[utoipa::path(
    tag = "Models",
    operation_id = "listModelDatasetLinks",
    params(("model_id" = String, Path, description = "The model id")),
    responses(
        (status = 200, description = "The links, oldest first", body = DatasetLinkList),
        (status = 404, description = "No such model in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/models/{model_id}/datasets")]
pub async fn list_dataset_links(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<DatasetLinkList>, ApiError> {
    let links = state
        .dataset_links
        .list(&caller.0.organization_id, &model_id(&path)?)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(
        links.into_iter().map(DatasetLinkOut::from).collect(),
    ))
}

/// Unlink a dataset from a model (the dataset stays).
#[utoipa::path(
    tag = "Models",
    operation_id = "deleteModelDatasetLink",
    params(
        ("model_id" = String, Path, description = "The model id"),
        ("dataset_id" = String, Path, description = "The linked dataset's id")
    ),
    responses(
        (status = 204, description = "Unlinked"),
        (status = 404, description = "No such model, or the dataset is not linked to it", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/models/{model_id}/datasets/{dataset_id}")]
pub async fn unlink_dataset(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (model, dataset) = path.into_inner();
    state
        .dataset_links
        .unlink(
            &caller.0.organization_id,
            &model_id(&model)?,
            &dataset,
            &caller.actor(),
        )
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::NoContent().finish())
}
