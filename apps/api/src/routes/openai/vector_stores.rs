//! `/openai/v1/vector_stores`: OpenAI's vector stores over the knowledge domain's datasets.
//! A vector store **is** a dataset (the same record `/v1/datasets` serves, its id included),
//! its files are the dataset's files, and its search is the dataset's hybrid search, so one
//! upload serves REST, OpenAI and MCP clients. Each operation checks the scope of its `/v1`
//! twin; creating a store with files also needs `files:write`, as adding them does.

use actix_web::{delete, get, post, web};
use tessera_kernel::{DomainError, FieldError, Scope};
use tessera_knowledge::{DatasetId, FileId, SearchMode, SearchRequest};
use tessera_wire::{
    openai::{
        attributes::attributes_of,
        error::OpenAiError,
        files::{Deleted, ListQuery, OpenAiList},
        vector_stores::{
            CreateVectorStore, CreateVectorStoreFile, FileContentPage, FileListFilter,
            ListVectorStoreFilesQuery, ModifyVectorStore, SearchResult, SearchResultsPage,
            SearchVectorStore, UpdateVectorStoreFile, VectorStore, VectorStoreFile,
        },
    },
    parse::path_id,
};

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::ApiError,
    routes::files::file_id,
    state::AppState,
};

fn store_id(text: &str) -> Result<DatasetId, DomainError> {
    path_id(text, "vector_store")
}

pub(crate) fn invalid(error: FieldError) -> ApiError {
    ApiError::validation(vec![error])
}

/// The vector store of a dataset, with its files' counts.
async fn vector_store(
    state: &AppState,
    who: &tessera_kernel::Caller,
    dataset: &tessera_knowledge::Dataset,
) -> Result<VectorStore, ApiError> {
    let counts = state
        .knowledge
        .datasets
        .file_counts(who, &dataset.id)
        .await?;
    let expired = state.knowledge.datasets.has_expired(dataset);
    Ok(VectorStore::of(dataset, counts, expired))
}

/// Create a vector store (a dataset), with files if given, cut with the chunking strategy
/// (a `static` one cuts a file again when it was cut otherwise and no other vector store
/// holds it).
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCreateVectorStore",
    request_body = CreateVectorStore,
    responses(
        (status = 200, description = "Created", body = VectorStore),
        (status = 400, description = "Invalid request, or a field not supported (a static chunking strategy); an `expires_after` not anchored at `last_active_at`, or outside 1 to 365 days", body = OpenAiError),
        (status = 403, description = "`file_ids` given without the `files:write` scope", body = OpenAiError),
        (status = 404, description = "A file that is not the organization's (nothing is created)", body = OpenAiError)
    )
)]
#[post("/openai/v1/vector_stores")]
pub async fn create_vector_store(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateVectorStore>,
) -> Result<web::Json<VectorStore>, ApiError> {
    let new = body.into_new()?;
    if !new.files.is_empty() {
        caller.require(&Scope::FILES_WRITE)?;
    }
    let dataset = state
        .knowledge
        .datasets
        .create_with_files(&caller, new.dataset, &new.files, new.chunking)
        .await?;
    Ok(web::Json(vector_store(&state, &caller, &dataset).await?))
}

/// The organization's vector stores (its datasets), newest first.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiListVectorStores",
    params(ListQuery),
    responses(
        (status = 200, description = "A page of vector stores", body = OpenAiList<VectorStore>),
        (status = 400, description = "Invalid limit, order or `after`", body = OpenAiError)
    )
)]
#[get("/openai/v1/vector_stores")]
pub async fn list_vector_stores(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<ListQuery>,
) -> Result<web::Json<OpenAiList<VectorStore>>, ApiError> {
    let page = state
        .knowledge
        .datasets
        .list_after(&caller, query.page().map_err(invalid)?)
        .await?;
    let mut stores = Vec::with_capacity(page.items.len());
    for dataset in &page.items {
        stores.push(vector_store(&state, &caller, dataset).await?);
    }
    Ok(web::Json(OpenAiList::new(stores, page.has_more, |store| {
        store.id.clone()
    })))
}

/// A vector store.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiRetrieveVectorStore",
    params(("vector_store_id" = String, Path, description = "The vector store (dataset) id")),
    responses(
        (status = 200, description = "The vector store", body = VectorStore),
        (status = 404, description = "No such vector store in the organization", body = OpenAiError)
    )
)]
#[get("/openai/v1/vector_stores/{vector_store_id}")]
pub async fn retrieve_vector_store(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<VectorStore>, ApiError> {
    let dataset = state
        .knowledge
        .datasets
        .get(&caller, &store_id(&path)?)
        .await?;
    Ok(web::Json(vector_store(&state, &caller, &dataset).await?))
}

/// Rename a vector store, replace its metadata, or set or clear its expiry (counted from
/// now: an expired store is used again this way).
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiModifyVectorStore",
    params(("vector_store_id" = String, Path, description = "The vector store (dataset) id")),
    request_body = ModifyVectorStore,
    responses(
        (status = 200, description = "Modified", body = VectorStore),
        (status = 400, description = "Invalid request: a name or metadata out of bounds, an `expires_after` not anchored at `last_active_at` or outside 1 to 365 days", body = OpenAiError),
        (status = 404, description = "No such vector store in the organization", body = OpenAiError)
    )
)]
#[post("/openai/v1/vector_stores/{vector_store_id}")]
pub async fn modify_vector_store(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<ModifyVectorStore>,
) -> Result<web::Json<VectorStore>, ApiError> {
    let id = store_id(&path)?;
    let changes = body.into_changes()?;
    let dataset = state
        .knowledge
        .datasets
        .update(&caller, &id, changes)
        .await?;
    Ok(web::Json(vector_store(&state, &caller, &dataset).await?))
}

/// Delete a vector store (the dataset, its snapshots and search entries); its files stay.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiDeleteVectorStore",
    params(("vector_store_id" = String, Path, description = "The vector store (dataset) id")),
    responses(
        (status = 200, description = "Deleted", body = Deleted),
        (status = 404, description = "No such vector store in the organization", body = OpenAiError)
    )
)]
#[delete("/openai/v1/vector_stores/{vector_store_id}")]
pub async fn delete_vector_store(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<Deleted>, ApiError> {
    let id = store_id(&path)?;
    state.knowledge.datasets.delete(&caller, &id).await?;
    Ok(web::Json(Deleted::of(id, "vector_store.deleted")))
}

/// Add a file to a vector store: it is searchable there once processed (`completed`).
/// Adding it again changes nothing. A `static` chunking strategy other than the file's sizes
/// is taken when no other vector store holds the file (or it is not processed yet and nobody
/// asked before): a processed file is then cut again (`in_progress` until done, its chunks
/// replaced). `auto` keeps how the file is cut.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCreateVectorStoreFile",
    params(("vector_store_id" = String, Path, description = "The vector store (dataset) id")),
    request_body = CreateVectorStoreFile,
    responses(
        (status = 200, description = "The file in the vector store", body = VectorStoreFile),
        (status = 400, description = "Invalid request or attributes, or a static chunking strategy (not supported), or the vector store expired", body = OpenAiError),
        (status = 404, description = "No such vector store or file in the organization", body = OpenAiError)
    )
)]
#[post("/openai/v1/vector_stores/{vector_store_id}/files")]
pub async fn create_vector_store_file(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(mut body): ValidJson<CreateVectorStoreFile>,
) -> Result<web::Json<VectorStoreFile>, ApiError> {
    let (attributes, chunking) = body.parts()?;
    let store = store_id(&path)?;
    let file: FileId = path_id(&body.file_id, "file")?;
    let datasets = &state.knowledge.datasets;
    datasets
        .add_file_cut(&caller, &store, &file, chunking)
        .await?;
    let entry = if attributes.is_empty() {
        datasets.file(&caller, &store, &file).await?
    } else {
        datasets
            .set_attributes(&caller, &store, &file, &attributes)
            .await?
    };
    Ok(web::Json(VectorStoreFile::of(store.as_str(), &entry)))
}

/// Replace the attributes of a vector store's file (`null` or `{}` clears them).
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiUpdateVectorStoreFileAttributes",
    params(
        ("vector_store_id" = String, Path, description = "The vector store (dataset) id"),
        ("file_id" = String, Path, description = "The file id")
    ),
    request_body = UpdateVectorStoreFile,
    responses(
        (status = 200, description = "The file with its new attributes", body = VectorStoreFile),
        (status = 400, description = "Invalid attributes", body = OpenAiError),
        (status = 404, description = "No such vector store, or the file is not in it", body = OpenAiError)
    )
)]
#[post("/openai/v1/vector_stores/{vector_store_id}/files/{file_id}")]
pub async fn update_vector_store_file(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    ValidJson(body): ValidJson<UpdateVectorStoreFile>,
) -> Result<web::Json<VectorStoreFile>, ApiError> {
    let attributes = attributes_of(body.attributes.unwrap_or_default())?;
    let (store, file) = path.into_inner();
    let store = store_id(&store)?;
    let entry = state
        .knowledge
        .datasets
        .set_attributes(&caller, &store, &file_id(&file)?, &attributes)
        .await?;
    Ok(web::Json(VectorStoreFile::of(store.as_str(), &entry)))
}

/// A vector store's files (of one status with `filter`; none is `cancelled`: adding one
/// file is never cancelled), newest first.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiListVectorStoreFiles",
    params(("vector_store_id" = String, Path, description = "The vector store (dataset) id"), ListVectorStoreFilesQuery),
    responses(
        (status = 200, description = "A page of the vector store's files", body = OpenAiList<VectorStoreFile>),
        (status = 400, description = "Invalid limit, order, `after` or `filter`", body = OpenAiError),
        (status = 404, description = "No such vector store in the organization", body = OpenAiError)
    )
)]
#[get("/openai/v1/vector_stores/{vector_store_id}/files")]
pub async fn list_vector_store_files(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidQuery(query): ValidQuery<ListVectorStoreFilesQuery>,
) -> Result<web::Json<OpenAiList<VectorStoreFile>>, ApiError> {
    let store = store_id(&path)?;
    let page = query
        .paging()
        .and_then(|paging| paging.page())
        .map_err(invalid)?;
    let status = match query.filter().map_err(invalid)? {
        FileListFilter::All => None,
        FileListFilter::Status(status) => Some(status),
        // Adding one file is never cancelled: none is.
        FileListFilter::Cancelled => {
            state.knowledge.datasets.get(&caller, &store).await?;
            return Ok(web::Json(OpenAiList::new(Vec::new(), false, |file| {
                file.id.clone()
            })));
        }
    };
    let files = state
        .knowledge
        .datasets
        .files_after(&caller, &store, status, page)
        .await?;
    Ok(web::Json(OpenAiList::of(
        files,
        |entry| VectorStoreFile::of(store.as_str(), &entry),
        |file| file.id.clone(),
    )))
}

/// A file of a vector store.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiRetrieveVectorStoreFile",
    params(
        ("vector_store_id" = String, Path, description = "The vector store (dataset) id"),
        ("file_id" = String, Path, description = "The file id")
    ),
    responses(
        (status = 200, description = "The file in the vector store", body = VectorStoreFile),
        (status = 404, description = "No such vector store, or the file is not in it", body = OpenAiError)
    )
)]
#[get("/openai/v1/vector_stores/{vector_store_id}/files/{file_id}")]
pub async fn retrieve_vector_store_file(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<web::Json<VectorStoreFile>, ApiError> {
    let (store, file) = path.into_inner();
    let store = store_id(&store)?;
    let entry = state
        .knowledge
        .datasets
        .file(&caller, &store, &file_id(&file)?)
        .await?;
    Ok(web::Json(VectorStoreFile::of(store.as_str(), &entry)))
}

/// A file's parsed content in a vector store: its chunks' text, in document order (empty
/// until it is processed).
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiRetrieveVectorStoreFileContent",
    params(
        ("vector_store_id" = String, Path, description = "The vector store (dataset) id"),
        ("file_id" = String, Path, description = "The file id")
    ),
    responses(
        (status = 200, description = "The file's chunks", body = FileContentPage),
        (status = 404, description = "No such vector store, or the file is not in it", body = OpenAiError)
    )
)]
#[get("/openai/v1/vector_stores/{vector_store_id}/files/{file_id}/content")]
pub async fn retrieve_vector_store_file_content(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<web::Json<FileContentPage>, ApiError> {
    let (store, file) = path.into_inner();
    let chunks = state
        .knowledge
        .datasets
        .file_chunks(&caller, &store_id(&store)?, &file_id(&file)?)
        .await?;
    Ok(web::Json(FileContentPage::of(chunks)))
}

/// Remove a file from a vector store (the file stays; delete it through `/openai/v1/files`).
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiDeleteVectorStoreFile",
    params(
        ("vector_store_id" = String, Path, description = "The vector store (dataset) id"),
        ("file_id" = String, Path, description = "The file id")
    ),
    responses(
        (status = 200, description = "Removed", body = Deleted),
        (status = 404, description = "No such vector store, or the file is not in it", body = OpenAiError)
    )
)]
#[delete("/openai/v1/vector_stores/{vector_store_id}/files/{file_id}")]
pub async fn delete_vector_store_file(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<web::Json<Deleted>, ApiError> {
    let (store, file) = path.into_inner();
    let file = file_id(&file)?;
    state
        .knowledge
        .datasets
        .remove_file(&caller, &store_id(&store)?, &file)
        .await?;
    Ok(web::Json(Deleted::of(file, "vector_store.file.deleted")))
}

/// Search a vector store's processed files (those whose attributes match `filters`): the
/// dataset's hybrid search (dense and BM25, fused), reranked where the server reranks by
/// default unless `ranker` is `none`.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiSearchVectorStore",
    params(("vector_store_id" = String, Path, description = "The vector store (dataset) id")),
    request_body = SearchVectorStore,
    responses(
        (status = 200, description = "The best passages", body = SearchResultsPage),
        (status = 400, description = "Invalid request or filters, `rewrite_query` (not supported), or the vector store expired", body = OpenAiError),
        (status = 404, description = "No such vector store in the organization", body = OpenAiError),
        (status = 503, description = "The embedding model or the index is unavailable", body = OpenAiError)
    )
)]
#[post("/openai/v1/vector_stores/{vector_store_id}/search")]
pub async fn search_vector_store(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<SearchVectorStore>,
) -> Result<web::Json<SearchResultsPage>, ApiError> {
    let store = store_id(&path)?;
    let search = body.check().map_err(ApiError::validation)?;
    let datasets = &state.knowledge.datasets;
    // Read once: the files a filter picks, and the attributes every result shows.
    let attributes = datasets.file_attributes(&caller, &store).await?;
    let files = search.filter.as_ref().map(|filter| {
        (attributes.iter())
            .filter(|(_, attributes)| filter.matches(attributes))
            .map(|(file, _)| file.clone())
            .collect()
    });
    let hits = datasets
        .search(
            &caller,
            &store,
            SearchRequest {
                query: search.query.clone(),
                limit: search.limit,
                version: None,
                files,
                mode: SearchMode::Hybrid,
                rerank: search.rerank,
                late_interaction: None,
            },
        )
        .await?;
    let results = hits
        .into_iter()
        .map(|hit| {
            let of_file = attributes.get(&hit.chunk.file_id);
            SearchResult::of(hit, of_file)
        })
        .filter(|result| {
            search
                .score_threshold
                .is_none_or(|threshold| result.score >= threshold)
        })
        .collect();
    Ok(web::Json(SearchResultsPage::of(search.query, results)))
}
