//! Datasets linked to a user model: `rag` datasets are searched for every question of a chat
//! on the model, `context` datasets are read whole into its prompt.
//! Its bodies are `tessera_wire::v1::model_datasets`.

use actix_web::{HttpResponse, delete, get, http::header, post, web};
use tessera_kernel::DomainError;
use tessera_models::ModelId;
use tessera_wire::v1::model_datasets::{CreateDatasetLink, DatasetLinkList, DatasetLinkOut};

use crate::{
    caller::Caller,
    extract::ValidJson,
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};
use tessera_wire::parse::path_id;

fn model_id(text: &str) -> Result<ModelId, DomainError> {
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
            caller.organization(),
            &model,
            &body.dataset_id,
            body.usage_type.into(),
            caller.actor(),
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
        .list(caller.organization(), &model_id(&path)?)
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
            caller.organization(),
            &model_id(&model)?,
            &dataset,
            caller.actor(),
        )
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::NoContent().finish())
}
