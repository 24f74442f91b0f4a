//! `/openai/v1/batches`: OpenAI's Batch API over the batches domain. A batch's input is a
//! file uploaded with `purpose` `batch`; its lines run in the background through the same
//! pipelines as `/openai/v1/chat/completions`, `/openai/v1/embeddings` and
//! `/openai/v1/responses` (`crate::batch_lines`), as the batch's creator, and its answers
//! end in an output and an error file (`/openai/v1/files/{id}/content`). Creating and
//! cancelling need `chats:invoke` (the lines are completions); reading needs `chats:read`.

use actix_web::{get, post, web};
use tessera_batches::BatchId;
use tessera_wire::{
    openai::{
        batches::{CreateBatch, ListBatchesQuery, OpenAiBatch},
        error::OpenAiError,
        files::OpenAiList,
    },
    parse::path_id,
};

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::ApiError,
    state::AppState,
};

/// Create a batch. Its input is read and checked first: a file with refused lines makes a
/// `failed` batch whose `errors` name each line; otherwise the batch is `in_progress` and
/// its requests run in the background, a few at a time.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCreateBatch",
    request_body = CreateBatch,
    responses(
        (status = 200, description = "The batch: `in_progress`, or `failed` with `errors` when its input was refused", body = OpenAiBatch),
        (status = 400, description = "An endpoint other than `/v1/chat/completions`, `/v1/embeddings` or `/v1/responses`, a window other than `24h`, invalid metadata, `output_expires_after`, or an input file not uploaded with `purpose` `batch`", body = OpenAiError),
        (status = 404, description = "No such input file in the organization", body = OpenAiError)
    )
)]
#[post("/openai/v1/batches")]
pub async fn create_batch(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateBatch>,
) -> Result<web::Json<OpenAiBatch>, ApiError> {
    let batch = state
        .batches
        .create(caller.principal(), body.into_new()?)
        .await?;
    Ok(web::Json(OpenAiBatch::from(&batch)))
}

/// The organization's batches, newest first.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiListBatches",
    params(ListBatchesQuery),
    responses(
        (status = 200, description = "A page of batches", body = OpenAiList<OpenAiBatch>),
        (status = 400, description = "Invalid limit or `after`", body = OpenAiError)
    )
)]
#[get("/openai/v1/batches")]
pub async fn list_batches(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<ListBatchesQuery>,
) -> Result<web::Json<OpenAiList<OpenAiBatch>>, ApiError> {
    let page = query
        .paging()
        .page()
        .map_err(|error| ApiError::validation(vec![error]))?;
    let batches = state.batches.list(caller.principal(), page).await?;
    Ok(web::Json(OpenAiList::of(
        batches,
        |batch| OpenAiBatch::from(&batch),
        |batch| batch.id.clone(),
    )))
}

/// A batch, with its counts so far.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiRetrieveBatch",
    params(("batch_id" = String, Path, description = "The batch id")),
    responses(
        (status = 200, description = "The batch", body = OpenAiBatch),
        (status = 404, description = "No such batch in the organization", body = OpenAiError)
    )
)]
#[get("/openai/v1/batches/{batch_id}")]
pub async fn retrieve_batch(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<OpenAiBatch>, ApiError> {
    let id: BatchId = path_id(&path, "batch")?;
    let batch = state.batches.get(caller.principal(), &id).await?;
    Ok(web::Json(OpenAiBatch::from(&batch)))
}

/// Cancel a batch: `cancelling` until its runner stops between requests, then `cancelled`
/// with the answers so far in its output and error files. An ended batch is answered as
/// it is.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCancelBatch",
    params(("batch_id" = String, Path, description = "The batch id")),
    responses(
        (status = 200, description = "The batch, `cancelling` (or as it ended)", body = OpenAiBatch),
        (status = 404, description = "No such batch in the organization", body = OpenAiError)
    )
)]
#[post("/openai/v1/batches/{batch_id}/cancel")]
pub async fn cancel_batch(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<OpenAiBatch>, ApiError> {
    let id: BatchId = path_id(&path, "batch")?;
    let batch = state.batches.cancel(caller.principal(), &id).await?;
    Ok(web::Json(OpenAiBatch::from(&batch)))
}
