//! `/openai/v1/vector_stores/{vector_store_id}/file_batches`: files added to a vector store
//! (a dataset) together, as the knowledge domain's file batches: create, retrieve, cancel
//! (its files still processing leave the store) and list its files. Each operation checks
//! the scope of its `/v1` twin: adding and removing files needs `files:write`.

use actix_web::{get, post, web};
use tessera_kernel::DomainError;
use tessera_knowledge::{DatasetId, FileBatchId};
use tessera_wire::{
    openai::{
        error::OpenAiError,
        file_batches::{CreateFileBatch, VectorStoreFileBatch},
        files::OpenAiList,
        vector_stores::{FileListFilter, ListVectorStoreFilesQuery, VectorStoreFile},
    },
    parse::path_id,
};

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::ApiError,
    routes::openai::vector_stores::invalid,
    state::AppState,
};

/// The vector store and batch a path names.
fn ids(path: (String, String)) -> Result<(DatasetId, FileBatchId), DomainError> {
    Ok((
        path_id(&path.0, "vector_store")?,
        path_id(&path.1, "file_batch")?,
    ))
}

/// Add files to a vector store together, each with the batch's attributes and cut with its
/// chunking strategy (a `static` one cuts a file again when it was cut otherwise and no
/// other vector store holds it). Nothing is added unless every file is the organization's
/// and can take the strategy.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCreateVectorStoreFileBatch",
    params(("vector_store_id" = String, Path, description = "The vector store (dataset) id")),
    request_body = CreateFileBatch,
    responses(
        (status = 200, description = "The batch, `in_progress` until its files are processed", body = VectorStoreFileBatch),
        (status = 400, description = "Invalid request: no file, more than 500, an invalid id or attributes, or a static chunking strategy, or the vector store expired", body = OpenAiError),
        (status = 404, description = "No such vector store or file in the organization (nothing is added)", body = OpenAiError)
    )
)]
#[post("/openai/v1/vector_stores/{vector_store_id}/file_batches")]
pub async fn create_file_batch(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<CreateFileBatch>,
) -> Result<web::Json<VectorStoreFileBatch>, ApiError> {
    let store: DatasetId = path_id(&path, "vector_store")?;
    let new = body.into_parts()?;
    let batch = state
        .knowledge
        .datasets
        .add_batch(&caller, &store, new.files, &new.attributes, new.chunking)
        .await?;
    Ok(web::Json(VectorStoreFileBatch::from(&batch)))
}

/// A batch with its files' progress.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiRetrieveVectorStoreFileBatch",
    params(
        ("vector_store_id" = String, Path, description = "The vector store (dataset) id"),
        ("batch_id" = String, Path, description = "The batch id")
    ),
    responses(
        (status = 200, description = "The batch", body = VectorStoreFileBatch),
        (status = 404, description = "No such vector store or batch in the organization", body = OpenAiError)
    )
)]
#[get("/openai/v1/vector_stores/{vector_store_id}/file_batches/{batch_id}")]
pub async fn retrieve_file_batch(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<web::Json<VectorStoreFileBatch>, ApiError> {
    let (store, batch) = ids(path.into_inner())?;
    let batch = state
        .knowledge
        .datasets
        .batch(&caller, &store, &batch)
        .await?;
    Ok(web::Json(VectorStoreFileBatch::from(&batch)))
}

/// Cancel a batch: its files still processing leave the vector store (processed ones stay).
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCancelVectorStoreFileBatch",
    params(
        ("vector_store_id" = String, Path, description = "The vector store (dataset) id"),
        ("batch_id" = String, Path, description = "The batch id")
    ),
    responses(
        (status = 200, description = "The batch, `cancelled`", body = VectorStoreFileBatch),
        (status = 404, description = "No such vector store or batch in the organization", body = OpenAiError)
    )
)]
#[post("/openai/v1/vector_stores/{vector_store_id}/file_batches/{batch_id}/cancel")]
pub async fn cancel_file_batch(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<web::Json<VectorStoreFileBatch>, ApiError> {
    let (store, batch) = ids(path.into_inner())?;
    let batch = state
        .knowledge
        .datasets
        .cancel_batch(&caller, &store, &batch)
        .await?;
    Ok(web::Json(VectorStoreFileBatch::from(&batch)))
}

/// The batch's files the vector store still holds (of one status with `filter`; none are
/// `cancelled`: those left the store), newest first.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiListVectorStoreFileBatchFiles",
    params(
        ("vector_store_id" = String, Path, description = "The vector store (dataset) id"),
        ("batch_id" = String, Path, description = "The batch id"),
        ListVectorStoreFilesQuery
    ),
    responses(
        (status = 200, description = "A page of the batch's files", body = OpenAiList<VectorStoreFile>),
        (status = 400, description = "Invalid limit, order, `after` or `filter`", body = OpenAiError),
        (status = 404, description = "No such vector store or batch in the organization", body = OpenAiError)
    )
)]
#[get("/openai/v1/vector_stores/{vector_store_id}/file_batches/{batch_id}/files")]
pub async fn list_file_batch_files(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    ValidQuery(query): ValidQuery<ListVectorStoreFilesQuery>,
) -> Result<web::Json<OpenAiList<VectorStoreFile>>, ApiError> {
    let (store, batch) = ids(path.into_inner())?;
    let page = query
        .paging()
        .and_then(|paging| paging.page())
        .map_err(invalid)?;
    let status = match query.filter().map_err(invalid)? {
        FileListFilter::All => None,
        FileListFilter::Status(status) => Some(status),
        // A cancelled file left the vector store; the list shows what it holds.
        FileListFilter::Cancelled => {
            state
                .knowledge
                .datasets
                .batch(&caller, &store, &batch)
                .await?;
            return Ok(web::Json(OpenAiList::new(Vec::new(), false, |file| {
                file.id.clone()
            })));
        }
    };
    let (files, more) = state
        .knowledge
        .datasets
        .batch_files(&caller, &store, &batch, status, page)
        .await?;
    let files = files
        .iter()
        .map(|entry| VectorStoreFile::of(store.as_str(), entry))
        .collect();
    Ok(web::Json(OpenAiList::new(files, more, |file| {
        file.id.clone()
    })))
}
