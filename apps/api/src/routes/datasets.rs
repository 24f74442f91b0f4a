//! Datasets: named sets of files searched together, with a version that counts content
//! changes, snapshots that freeze a version, and hybrid (dense + BM25) search. Its bodies are
//! `tessera_wire::v1::datasets`.

use actix_web::{HttpResponse, delete, get, http::header, patch, post, web};
use tessera_knowledge::{
    DatasetChanges, DatasetId, FileId, Metadata, NewDataset, SearchMode, SearchRequest,
};
use tessera_wire::page::{PageOf, PageQuery};
use tessera_wire::v1::datasets::{
    CreateDataset, DatasetFileOut, DatasetFilePage, DatasetOut, DatasetPage, SearchDataset,
    SearchHitOut, SearchResults, SnapshotList, SnapshotOut, UpdateDataset,
};
use tessera_wire::v1::files::FileOut;

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};
use tessera_kernel::DomainError;
use tessera_wire::parse::{page_limit, path_id};

fn dataset_id(text: &str) -> Result<DatasetId, DomainError> {
    path_id(text, "dataset")
}

/// Create a dataset.
#[utoipa::path(
    tag = "Datasets",
    operation_id = "createDataset",
    request_body = CreateDataset,
    responses(
        (status = 201, description = "Created", body = DatasetOut),
        (status = 422, description = "Invalid request", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/datasets")]
pub async fn create_dataset(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateDataset>,
) -> Result<HttpResponse, ApiError> {
    let dataset = state
        .knowledge
        .datasets
        .create(
            &caller,
            NewDataset {
                name: body.name,
                description: body.description,
                late_interaction: body.late_interaction.unwrap_or(false),
                metadata: Metadata::of_body(body.metadata)?.unwrap_or_default(),
                // Expiry is set through OpenAI's `expires_after` only.
                expires_after_days: None,
            },
        )
        .await?;
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/v1/datasets/{}", dataset.id)))
        .json(DatasetOut::from(&dataset)))
}

/// The organization's datasets, newest first.
#[utoipa::path(
    tag = "Datasets",
    operation_id = "listDatasets",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of datasets", body = DatasetPage),
        (status = 422, description = "Invalid limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/datasets")]
pub async fn list_datasets(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<PageQuery>,
) -> Result<web::Json<DatasetPage>, ApiError> {
    Ok(web::Json(list(&state, &caller, query).await?))
}

/// One page of the organization's datasets (also the MCP tool `list_datasets`).
pub(crate) async fn list(
    state: &AppState,
    caller: &Caller,
    query: PageQuery,
) -> Result<DatasetPage, ApiError> {
    let page = state
        .knowledge
        .datasets
        .list(caller, page_limit(query.limit)?, query.cursor.as_deref())
        .await?;
    Ok(PageOf::of(page, |item| DatasetOut::from(&item)))
}

/// A dataset.
#[utoipa::path(
    tag = "Datasets",
    operation_id = "getDataset",
    params(("dataset_id" = String, Path, description = "The dataset id")),
    responses(
        (status = 200, description = "The dataset", body = DatasetOut),
        (status = 404, description = "No such dataset in the organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/datasets/{dataset_id}")]
pub async fn get_dataset(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<DatasetOut>, ApiError> {
    let dataset = state
        .knowledge
        .datasets
        .get(&caller, &dataset_id(&path)?)
        .await?;
    Ok(web::Json(DatasetOut::from(&dataset)))
}

/// Change a dataset's name, description or late interaction (its version counts content only).
#[utoipa::path(
    tag = "Datasets",
    operation_id = "updateDataset",
    params(("dataset_id" = String, Path, description = "The dataset id")),
    request_body = UpdateDataset,
    responses(
        (status = 200, description = "Updated", body = DatasetOut),
        (status = 404, description = "No such dataset in the organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[patch("/v1/datasets/{dataset_id}")]
pub async fn update_dataset(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<UpdateDataset>,
) -> Result<web::Json<DatasetOut>, ApiError> {
    let dataset = state
        .knowledge
        .datasets
        .update(
            &caller,
            &dataset_id(&path)?,
            DatasetChanges {
                name: body.name,
                description: body.description,
                late_interaction: body.late_interaction,
                metadata: Metadata::of_body(body.metadata)?,
                expires_after_days: None,
            },
        )
        .await?;
    Ok(web::Json(DatasetOut::from(&dataset)))
}

/// Delete a dataset with its snapshots and its search entries; its files stay.
#[utoipa::path(
    tag = "Datasets",
    operation_id = "deleteDataset",
    params(("dataset_id" = String, Path, description = "The dataset id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such dataset in the organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/datasets/{dataset_id}")]
pub async fn delete_dataset(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .knowledge
        .datasets
        .delete(&caller, &dataset_id(&path)?)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The dataset's files, newest first.
#[utoipa::path(
    tag = "Datasets",
    operation_id = "listDatasetFiles",
    params(("dataset_id" = String, Path, description = "The dataset id"), PageQuery),
    responses(
        (status = 200, description = "A page of files", body = DatasetFilePage),
        (status = 404, description = "No such dataset in the organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/datasets/{dataset_id}/files")]
pub async fn list_dataset_files(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidQuery(query): ValidQuery<PageQuery>,
) -> Result<web::Json<DatasetFilePage>, ApiError> {
    let page = state
        .knowledge
        .datasets
        .files(
            &caller,
            &dataset_id(&path)?,
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await?;
    Ok(web::Json(PageOf::of(page, |entry| DatasetFileOut {
        file: FileOut::from(&entry.file),
        added_at: entry.added_at,
    })))
}

/// Freeze the dataset's current files (with their content hashes) at its current version.
/// Freezing a version twice returns the existing snapshot.
#[utoipa::path(
    tag = "Datasets",
    operation_id = "createDatasetSnapshot",
    params(("dataset_id" = String, Path, description = "The dataset id")),
    responses(
        (status = 201, description = "The snapshot of the current version", body = SnapshotOut),
        (status = 404, description = "No such dataset in the organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[post("/v1/datasets/{dataset_id}/snapshots")]
pub async fn create_snapshot(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = dataset_id(&path)?;
    let snapshot = state.knowledge.datasets.snapshot(&caller, &id).await?;
    Ok(HttpResponse::Created()
        .insert_header((
            header::LOCATION,
            format!("/v1/datasets/{id}/snapshots/{}", snapshot.version),
        ))
        .json(SnapshotOut::from(snapshot)))
}

/// The dataset's snapshots, newest version first.
#[utoipa::path(
    tag = "Datasets",
    operation_id = "listDatasetSnapshots",
    params(("dataset_id" = String, Path, description = "The dataset id")),
    responses(
        (status = 200, description = "Its snapshots", body = SnapshotList),
        (status = 404, description = "No such dataset in the organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/datasets/{dataset_id}/snapshots")]
pub async fn list_snapshots(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<SnapshotList>, ApiError> {
    let snapshots = state
        .knowledge
        .datasets
        .snapshots(&caller, &dataset_id(&path)?)
        .await?;
    Ok(web::Json(
        snapshots.into_iter().map(SnapshotOut::from).collect(),
    ))
}

/// Hybrid search of the dataset's ready files (or of a snapshot's files with `version`):
/// dense embeddings and BM25, fused by reciprocal rank, then (with `rerank: true`, or by
/// the server's default) the best candidates reranked by its cross-encoder; best first.
#[utoipa::path(
    tag = "Datasets",
    operation_id = "searchDataset",
    params(("dataset_id" = String, Path, description = "The dataset id")),
    request_body = SearchDataset,
    responses(
        (status = 200, description = "The best passages", body = SearchResults),
        (status = 404, description = "No such dataset in the organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request, a `version` the dataset has no snapshot of, `rerank` on a server without a reranking model, or a dataset that expired (`expired`: see OpenAI's vector store `expires_after`)", body = ValidationProblem, content_type = "application/problem+json"),
        (status = 503, description = "The embedding model, reranking model or index is unavailable", body = Problem, content_type = "application/problem+json")
    )
)]
#[post("/v1/datasets/{dataset_id}/search")]
pub async fn search_dataset(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<SearchDataset>,
) -> Result<web::Json<SearchResults>, ApiError> {
    Ok(web::Json(search(&state, &caller, &path, body).await?))
}

/// The best passages of a dataset (also the MCP tool `search_dataset`).
pub(crate) async fn search(
    state: &AppState,
    caller: &Caller,
    dataset: &str,
    body: SearchDataset,
) -> Result<SearchResults, ApiError> {
    let id = dataset_id(dataset)?;
    let files = body
        .file_ids
        .map(|ids| {
            ids.iter()
                .enumerate()
                .map(|(index, text)| {
                    text.parse::<FileId>().map_err(|_| {
                        ApiError::validation(vec![tessera_kernel::FieldError::new(
                            ["body".into(), "fileIds".into(), index.into()],
                            "not a file id",
                            "value_error",
                        )])
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    let hits = state
        .knowledge
        .datasets
        .search(
            caller,
            &id,
            SearchRequest {
                query: body.query,
                limit: body.limit.unwrap_or(10) as usize,
                version: body.version,
                files,
                mode: body.mode.map_or(SearchMode::Hybrid, SearchMode::from),
                rerank: body.rerank,
                late_interaction: body.late_interaction,
            },
        )
        .await?;
    Ok(SearchResults {
        items: hits.into_iter().map(SearchHitOut::from).collect(),
    })
}
