//! OpenAI's vector stores over the knowledge domain's datasets: a vector store **is** a
//! dataset (the same record `/v1/datasets` serves) and its files are the dataset's files,
//! with their attributes. The request bodies with their validation, the objects built from
//! datasets and their files, and the search request (its filters) and results page.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_kernel::{DomainError, FieldError};
use tessera_knowledge::{
    AttributeFilter, Attributes, Dataset, DatasetFile, DatasetFileCounts, FileId, FileStatus,
    MAX_SEARCH_LIMIT, Metadata, SearchHit, StoredChunk,
};
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use super::{
    attributes::{attributes_json, attributes_of, filter_of},
    files::{ListQuery, file_ids, query_error},
    unix,
};

/// A refusal of a field the door does not support yet, named as OpenAI's parameter.
fn unsupported(field: &str, what: &str) -> FieldError {
    FieldError::new(
        ["body".into(), field.into()],
        format!("{what} is not supported"),
        "unsupported",
    )
}

/// How a vector store's files are cut: only `auto` (the server's chunking; chunks are cut
/// once per file, whichever stores hold it).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChunkingStrategy {
    /// `auto`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `static` sizes are not supported.
    #[serde(rename = "static")]
    pub sizes: Option<Value>,
}

/// Refuses a chunking strategy other than `auto`.
pub(crate) fn check_chunking(strategy: Option<&ChunkingStrategy>) -> Result<(), FieldError> {
    match strategy {
        Some(strategy) if strategy.kind != "auto" || strategy.sizes.is_some() => Err(unsupported(
            "chunking_strategy",
            "a chunking strategy other than `auto`",
        )),
        _ => Ok(()),
    }
}

/// `POST /openai/v1/vector_stores`.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateVectorStore {
    /// The dataset's name (`Untitled vector store` when absent).
    #[validate(length(min = 1, max = 200))]
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// The dataset's description.
    #[validate(length(max = 2000))]
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// Files to add, each of the organization.
    #[validate(length(max = 500))]
    #[schema(max_items = 500)]
    pub file_ids: Option<Vec<String>>,
    /// Up to 16 pairs; keys of at most 64 characters, values of at most 512.
    pub metadata: Option<BTreeMap<String, String>>,
    /// Only `{"type": "auto"}`.
    pub chunking_strategy: Option<ChunkingStrategy>,
    /// Not supported: vector stores do not expire.
    pub expires_after: Option<Value>,
}

/// What a new vector store is made of, checked.
#[derive(Debug)]
pub struct NewVectorStore {
    pub dataset: tessera_knowledge::NewDataset,
    pub files: Vec<FileId>,
}

impl CreateVectorStore {
    pub const DEFAULT_NAME: &'static str = "Untitled vector store";

    pub fn into_new(self) -> Result<NewVectorStore, DomainError> {
        if self.expires_after.is_some() {
            return Err(DomainError::Validation(vec![unsupported(
                "expires_after",
                "expiry",
            )]));
        }
        check_chunking(self.chunking_strategy.as_ref())
            .map_err(|error| DomainError::Validation(vec![error]))?;
        Ok(NewVectorStore {
            dataset: tessera_knowledge::NewDataset {
                name: self.name.unwrap_or_else(|| Self::DEFAULT_NAME.into()),
                description: self.description,
                late_interaction: false,
                metadata: Metadata::of_body(self.metadata)?.unwrap_or_default(),
            },
            files: file_ids(&self.file_ids.unwrap_or_default())?,
        })
    }
}

/// `POST /openai/v1/vector_stores/{vector_store_id}`: what is given changes.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModifyVectorStore {
    #[validate(length(min = 1, max = 200))]
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// Replaces the metadata (`{}` clears it).
    pub metadata: Option<BTreeMap<String, String>>,
    /// Not supported: vector stores do not expire.
    pub expires_after: Option<Value>,
}

impl ModifyVectorStore {
    pub fn into_changes(self) -> Result<tessera_knowledge::DatasetChanges, DomainError> {
        if self.expires_after.is_some() {
            return Err(DomainError::Validation(vec![unsupported(
                "expires_after",
                "expiry",
            )]));
        }
        Ok(tessera_knowledge::DatasetChanges {
            name: self.name,
            metadata: Metadata::of_body(self.metadata)?,
            ..Default::default()
        })
    }
}

/// How many of a vector store's files are in each status.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileCounts {
    pub in_progress: u64,
    pub completed: u64,
    pub failed: u64,
    /// Files a batch's cancellation took out (0 for a vector store: adding one file is never
    /// cancelled).
    pub cancelled: u64,
    pub total: u64,
}

/// A vector store: a dataset, as OpenAI describes one.
#[derive(Debug, Serialize, ToSchema)]
pub struct VectorStore {
    /// The dataset's id.
    pub id: String,
    /// Always `vector_store`.
    pub object: &'static str,
    pub created_at: i64,
    pub name: String,
    pub description: Option<String>,
    /// The size of its files.
    pub usage_bytes: u64,
    pub file_counts: FileCounts,
    /// `in_progress` while a file is processing, else `completed`.
    pub status: &'static str,
    /// Always null: vector stores do not expire.
    pub expires_after: Option<Value>,
    pub expires_at: Option<i64>,
    /// When it last changed.
    pub last_active_at: i64,
    pub metadata: BTreeMap<String, String>,
}

impl VectorStore {
    pub fn of(dataset: &Dataset, counts: DatasetFileCounts) -> Self {
        Self {
            id: dataset.id.to_string(),
            object: "vector_store",
            created_at: unix(dataset.created_at),
            name: dataset.name.clone(),
            description: dataset.description.clone(),
            usage_bytes: counts.bytes,
            file_counts: FileCounts {
                in_progress: counts.processing,
                completed: counts.ready,
                failed: counts.failed,
                cancelled: 0,
                total: counts.total(),
            },
            status: if counts.processing > 0 {
                "in_progress"
            } else {
                "completed"
            },
            expires_after: None,
            expires_at: None,
            last_active_at: unix(dataset.updated_at),
            metadata: dataset.metadata.pairs().clone(),
        }
    }
}

/// `POST /openai/v1/vector_stores/{vector_store_id}/files`.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateVectorStoreFile {
    /// A file of the organization (`/openai/v1/files` or `/v1/files`).
    #[validate(length(min = 1, max = 64))]
    #[schema(min_length = 1, max_length = 64)]
    pub file_id: String,
    /// Up to 16 pairs of strings (at most 512 characters), numbers or booleans, which search
    /// `filters` compare; keys of at most 64 characters.
    pub attributes: Option<BTreeMap<String, Value>>,
    /// Only `{"type": "auto"}`.
    pub chunking_strategy: Option<ChunkingStrategy>,
}

impl CreateVectorStoreFile {
    /// The attributes, once what the door does not support is refused.
    pub fn attributes(&mut self) -> Result<Attributes, DomainError> {
        check_chunking(self.chunking_strategy.as_ref())
            .map_err(|error| DomainError::Validation(vec![error]))?;
        attributes_of(self.attributes.take().unwrap_or_default())
    }
}

/// `POST /openai/v1/vector_stores/{vector_store_id}/files/{file_id}`: the attributes
/// replaced (`null` or `{}` clears them).
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateVectorStoreFile {
    pub attributes: Option<BTreeMap<String, Value>>,
}

/// Why a vector store's file failed.
#[derive(Debug, Serialize, ToSchema)]
pub struct LastError {
    /// `invalid_file`.
    pub code: &'static str,
    pub message: String,
}

/// A file of a vector store.
#[derive(Debug, Serialize, ToSchema)]
pub struct VectorStoreFile {
    /// The file's id.
    pub id: String,
    /// Always `vector_store.file`.
    pub object: &'static str,
    pub usage_bytes: u64,
    /// When it was added to the vector store.
    pub created_at: i64,
    pub vector_store_id: String,
    /// `in_progress`, `completed` or `failed`.
    pub status: &'static str,
    pub last_error: Option<LastError>,
    pub attributes: BTreeMap<String, Value>,
}

/// The OpenAI status of a file's processing.
fn file_status(status: FileStatus) -> &'static str {
    match status {
        FileStatus::Processing => "in_progress",
        FileStatus::Ready => "completed",
        FileStatus::Failed => "failed",
    }
}

impl VectorStoreFile {
    pub fn of(store: &str, entry: &DatasetFile) -> Self {
        let file = &entry.file;
        Self {
            id: file.id.to_string(),
            object: "vector_store.file",
            usage_bytes: file.size,
            created_at: unix(entry.added_at),
            vector_store_id: store.to_owned(),
            status: file_status(file.status),
            last_error: (file.status == FileStatus::Failed).then(|| LastError {
                code: "invalid_file",
                message: file.error.clone().unwrap_or_default(),
            }),
            attributes: attributes_json(&entry.attributes),
        }
    }
}

/// `GET /openai/v1/vector_stores/{vector_store_id}/files`: a page, of one status.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListVectorStoreFilesQuery {
    /// How many, 1 to 100 (larger values are served 100 at a time), default 20.
    #[param(minimum = 1)]
    pub limit: Option<i64>,
    /// Only `desc` (newest first, the default).
    #[param(pattern = "^desc$")]
    pub order: Option<String>,
    /// The id of the file the page starts after (the previous page's `last_id`).
    pub after: Option<String>,
    /// Not supported: page forwards with `after`.
    pub before: Option<String>,
    /// Not supported yet.
    pub filter: Option<String>,
}

impl ListVectorStoreFilesQuery {
    /// The paging, once what is not supported is refused.
    pub fn paging(&self) -> Result<ListQuery, FieldError> {
        if self.filter.is_some() {
            return Err(query_error(
                "filter",
                "filtering by status is not supported",
                "unsupported",
            ));
        }
        Ok(ListQuery {
            limit: self.limit,
            order: self.order.clone(),
            after: self.after.clone(),
            before: self.before.clone(),
        })
    }
}

/// One query, or several searched as one text.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(untagged)]
pub enum SearchQuery {
    One(String),
    Many(Vec<String>),
}

/// How results are ranked.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RankingOptions {
    /// `auto` or `default-2024-11-15` (the server's search, reranked when it reranks by
    /// default), or `none` (never reranked).
    pub ranker: Option<String>,
    /// Results scoring below this are left out (0 to 1).
    pub score_threshold: Option<f64>,
}

/// `POST /openai/v1/vector_stores/{vector_store_id}/search`.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchVectorStore {
    pub query: SearchQuery,
    /// 1 to 50, default 10.
    pub max_num_results: Option<i64>,
    pub ranking_options: Option<RankingOptions>,
    /// Only the files whose attributes match: a comparison (`{"type": "eq", "key": "team",
    /// "value": "docs"}`; `ne`, `gt`, `gte`, `lt`, `lte`; `in` and `nin` with an array) or
    /// `{"type": "and" | "or", "filters": [...]}`. A file without the attribute, or with a value of another kind,
    /// does not match.
    #[schema(value_type = Option<Object>)]
    pub filters: Option<Value>,
    /// Only false: queries are searched as given.
    pub rewrite_query: Option<bool>,
}

/// A search, checked.
#[derive(Debug, PartialEq)]
pub struct VectorStoreSearch {
    pub query: String,
    pub limit: usize,
    /// `Some(false)` when the ranker is `none`; `None` leaves it to the server.
    pub rerank: Option<bool>,
    pub score_threshold: Option<f32>,
    /// Only the files whose attributes match.
    pub filter: Option<AttributeFilter>,
}

impl SearchVectorStore {
    pub fn check(self) -> Result<VectorStoreSearch, Vec<FieldError>> {
        let mut errors = Vec::new();
        let query = match self.query {
            SearchQuery::One(text) => text,
            SearchQuery::Many(texts) => texts.join("\n"),
        };
        if query.trim().is_empty() {
            errors.push(FieldError::new(
                ["body".into(), "query".into()],
                "the query is empty",
                "string_length",
            ));
        }
        let limit = self.max_num_results.unwrap_or(10);
        if !(1..=MAX_SEARCH_LIMIT as i64).contains(&limit) {
            errors.push(FieldError::new(
                ["body".into(), "max_num_results".into()],
                format!("must be between 1 and {MAX_SEARCH_LIMIT}"),
                "range",
            ));
        }
        let filter = match self.filters.as_ref().map(filter_of).transpose() {
            Ok(filter) => filter,
            Err(error) => {
                errors.push(error);
                None
            }
        };
        if self.rewrite_query == Some(true) {
            errors.push(unsupported("rewrite_query", "rewriting the query"));
        }
        let mut rerank = None;
        let mut score_threshold = None;
        if let Some(options) = self.ranking_options {
            match options.ranker.as_deref() {
                None | Some("auto" | "default-2024-11-15") => {}
                Some("none") => rerank = Some(false),
                Some(_) => errors.push(FieldError::new(
                    ["body".into(), "ranking_options".into(), "ranker".into()],
                    "must be `auto`, `default-2024-11-15` or `none`",
                    "enum",
                )),
            }
            if let Some(threshold) = options.score_threshold {
                if (0.0..=1.0).contains(&threshold) {
                    score_threshold = Some(threshold as f32);
                } else {
                    errors.push(FieldError::new(
                        [
                            "body".into(),
                            "ranking_options".into(),
                            "score_threshold".into(),
                        ],
                        "must be between 0 and 1",
                        "range",
                    ));
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(VectorStoreSearch {
            query,
            limit: limit as usize,
            rerank,
            score_threshold,
            filter,
        })
    }
}

/// A passage's text.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchContent {
    /// Always `text`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub text: String,
}

/// One result: a passage of a file.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResult {
    pub file_id: String,
    pub filename: String,
    /// The reranker's relevance (0 to 1) when the search was reranked, else the fused score.
    pub score: f32,
    /// The file's attributes in the vector store.
    pub attributes: BTreeMap<String, Value>,
    pub content: Vec<SearchContent>,
}

impl SearchResult {
    pub fn of(hit: SearchHit, attributes: Option<&Attributes>) -> Self {
        Self {
            file_id: hit.chunk.file_id.to_string(),
            filename: hit.file_name,
            score: hit.relevance.unwrap_or(hit.chunk.score),
            attributes: attributes.map(attributes_json).unwrap_or_default(),
            content: vec![SearchContent {
                kind: "text",
                text: hit.chunk.text,
            }],
        }
    }
}

/// A file's parsed content in a vector store: its chunks' text, in document order.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileContentPage {
    /// Always `vector_store.file_content.page`.
    pub object: &'static str,
    pub data: Vec<SearchContent>,
    /// Always false: every chunk is in this page.
    pub has_more: bool,
    pub next_page: Option<String>,
}

impl FileContentPage {
    pub fn of(chunks: Vec<StoredChunk>) -> Self {
        Self {
            object: "vector_store.file_content.page",
            data: chunks
                .into_iter()
                .map(|chunk| SearchContent {
                    kind: "text",
                    text: chunk.text,
                })
                .collect(),
            has_more: false,
            next_page: None,
        }
    }
}

/// The results, best first, in one page.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResultsPage {
    /// Always `vector_store.search_results.page`.
    pub object: &'static str,
    pub search_query: Vec<String>,
    pub data: Vec<SearchResult>,
    /// Always false: every result is in this page.
    pub has_more: bool,
    pub next_page: Option<String>,
}

impl SearchResultsPage {
    pub fn of(query: String, results: Vec<SearchResult>) -> Self {
        Self {
            object: "vector_store.search_results.page",
            search_query: vec![query],
            data: results,
            has_more: false,
            next_page: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(body: Value) -> Result<VectorStoreSearch, Vec<FieldError>> {
        serde_json::from_value::<SearchVectorStore>(body)
            .map_err(|error| panic!("{error}"))
            .and_then(SearchVectorStore::check)
    }

    fn refused_at(body: Value) -> Vec<String> {
        search(body)
            .expect_err("refused")
            .iter()
            .map(|error| format!("{:?}", error.loc))
            .collect()
    }

    #[test]
    fn a_search_takes_one_query_or_several_and_its_ranking() {
        assert_eq!(
            search(serde_json::json!({"query": "volcanoes"})).unwrap(),
            VectorStoreSearch {
                query: "volcanoes".into(),
                limit: 10,
                rerank: None,
                score_threshold: None,
                filter: None,
            }
        );
        assert_eq!(
            search(serde_json::json!({
                "query": ["hekla", "eruption"], "max_num_results": 50,
                "ranking_options": {"ranker": "none", "score_threshold": 0.5},
                "rewrite_query": false,
            }))
            .unwrap(),
            VectorStoreSearch {
                query: "hekla\neruption".into(),
                limit: 50,
                rerank: Some(false),
                score_threshold: Some(0.5),
                filter: None,
            }
        );
    }

    #[test]
    fn what_a_search_cannot_do_is_refused_by_name() {
        let refused = refused_at(serde_json::json!({
            "query": "", "max_num_results": 0, "filters": {"type": "near"},
            "rewrite_query": true,
            "ranking_options": {"ranker": "best", "score_threshold": 2.0},
        }));
        assert_eq!(refused.len(), 6, "{refused:?}");
        for field in [
            "query",
            "max_num_results",
            "filters",
            "rewrite_query",
            "ranker",
            "score_threshold",
        ] {
            assert!(
                refused.iter().any(|loc| loc.contains(field)),
                "{field}: {refused:?}"
            );
        }
    }

    #[test]
    fn only_auto_chunking_and_no_expiry_are_accepted() {
        let create = |body: Value| {
            serde_json::from_value::<CreateVectorStore>(body)
                .unwrap()
                .into_new()
        };
        let made = create(serde_json::json!({"chunking_strategy": {"type": "auto"}})).unwrap();
        assert_eq!(made.dataset.name, CreateVectorStore::DEFAULT_NAME);
        for body in [
            serde_json::json!({"chunking_strategy": {"type": "static", "static": {}}}),
            serde_json::json!({"expires_after": {"anchor": "last_active_at", "days": 2}}),
            serde_json::json!({"metadata": {"": "empty key"}}),
        ] {
            assert!(
                matches!(create(body.clone()), Err(DomainError::Validation(_))),
                "{body}"
            );
        }
    }
}
