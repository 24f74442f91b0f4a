//! OpenAI's vector stores over the knowledge domain's datasets: a vector store **is** a
//! dataset (the same record `/v1/datasets` serves) and its files are the dataset's files,
//! with their attributes. The request bodies with their validation, the objects built from
//! datasets and their files, and the search request (its filters) and results page.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_kernel::{DomainError, FieldError};
use tessera_knowledge::MAX_EXPIRY_DAYS;
use tessera_knowledge::{
    AttributeFilter, Attributes, ChunkingSettings, Dataset, DatasetFile, DatasetFileCounts, FileId,
    FileStatus, MAX_SEARCH_LIMIT, Metadata, SearchHit, StoredChunk,
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

/// How a file is cut into chunks: `{"type": "auto"}` (the server's sizes, or those the
/// file already has) or `{"type": "static", "static": {...}}`. A file is cut once and its
/// chunks serve every vector store holding it: sizes other than a file's own are taken while
/// no other store holds it (or it is not processed yet and nobody asked before); it is then
/// cut again with them (decision 0064).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkingStrategy {
    /// `auto` or `static`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The sizes, with `static` only.
    #[serde(rename = "static")]
    pub sizes: Option<StaticChunking>,
}

/// A `static` strategy's sizes, in the embedding model's tokens.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StaticChunking {
    /// 100 to 4096, and at most what the embedding model reads of one text (a chunk is
    /// embedded whole, as one vector): more is refused, naming the limit.
    pub max_chunk_size_tokens: i64,
    /// Tokens a chunk shares with the next: at most half of `max_chunk_size_tokens`.
    pub chunk_overlap_tokens: i64,
}

/// OpenAI's bounds of `max_chunk_size_tokens`.
const STATIC_CHUNK_TOKENS: std::ops::RangeInclusive<i64> = 100..=4096;

fn chunking_error(path: &[&str], msg: impl Into<String>, kind: &str) -> FieldError {
    let loc = ["body", "chunking_strategy"]
        .iter()
        .chain(path)
        .map(|segment| (*segment).into());
    FieldError::new(loc, msg, kind)
}

/// The sizes a strategy asks for: `None` for `auto` (or no strategy), which keeps how a
/// file is cut. Sizes beyond what the embedding model reads are the domain's refusal.
pub(crate) fn chunking_of(
    strategy: Option<&ChunkingStrategy>,
) -> Result<Option<ChunkingSettings>, FieldError> {
    let Some(strategy) = strategy else {
        return Ok(None);
    };
    match (strategy.kind.as_str(), strategy.sizes) {
        ("auto", None) => Ok(None),
        ("auto", Some(_)) => Err(chunking_error(
            &["static"],
            "only a `static` strategy has sizes",
            "extra_forbidden",
        )),
        ("static", None) => Err(chunking_error(
            &["static"],
            "a `static` strategy needs its sizes",
            "missing",
        )),
        ("static", Some(sizes)) => {
            if !STATIC_CHUNK_TOKENS.contains(&sizes.max_chunk_size_tokens) {
                return Err(chunking_error(
                    &["static", "max_chunk_size_tokens"],
                    "must be between 100 and 4096",
                    "range",
                ));
            }
            if sizes.chunk_overlap_tokens < 0
                || sizes.chunk_overlap_tokens > sizes.max_chunk_size_tokens / 2
            {
                return Err(chunking_error(
                    &["static", "chunk_overlap_tokens"],
                    "must be between 0 and half of max_chunk_size_tokens",
                    "range",
                ));
            }
            // Both are within 0..=4096 here.
            Ok(Some(ChunkingSettings {
                max_tokens: sizes.max_chunk_size_tokens as usize,
                overlap_tokens: sizes.chunk_overlap_tokens as usize,
            }))
        }
        _ => Err(chunking_error(
            &["type"],
            "must be `auto` or `static`",
            "enum",
        )),
    }
}

/// How a vector store's file is cut, as OpenAI answers it: `static` with the file's sizes,
/// or `other` for a file cut with the server's sizes.
#[derive(Debug, Serialize, ToSchema, PartialEq, Eq)]
pub struct FileChunkingStrategy {
    /// `static` or `other`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The sizes, with `static` only.
    #[serde(rename = "static", skip_serializing_if = "Option::is_none")]
    pub sizes: Option<StaticChunking>,
}

impl FileChunkingStrategy {
    pub fn of(chunking: Option<ChunkingSettings>) -> Self {
        match chunking {
            Some(chunking) => Self {
                kind: "static",
                sizes: Some(StaticChunking {
                    max_chunk_size_tokens: i64::try_from(chunking.max_tokens).unwrap_or(i64::MAX),
                    chunk_overlap_tokens: i64::try_from(chunking.overlap_tokens)
                        .unwrap_or(i64::MAX),
                }),
            },
            None => Self {
                kind: "other",
                sizes: None,
            },
        }
    }
}

/// When a vector store expires: `days` after it was last active (created, searched, given
/// or relieved of a file, given a new expiry). An expired store keeps its files and is
/// refused for use (search, `file_search`, new files) until its `expires_after` changes or
/// it is deleted; nothing is deleted automatically.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpiresAfter {
    /// Always `last_active_at`.
    pub anchor: String,
    /// 1 to 365.
    #[schema(minimum = 1, maximum = 365)]
    pub days: i64,
}

/// The only anchor OpenAI defines.
const EXPIRY_ANCHOR: &str = "last_active_at";

impl ExpiresAfter {
    /// The policy as the domain holds it: days after the last activity.
    fn days(&self) -> Result<u16, DomainError> {
        let mut errors = Vec::new();
        if self.anchor != EXPIRY_ANCHOR {
            errors.push(FieldError::new(
                ["body".into(), "expires_after".into(), "anchor".into()],
                format!("must be `{EXPIRY_ANCHOR}`"),
                "enum",
            ));
        }
        let days = u16::try_from(self.days)
            .ok()
            .filter(|days| (1..=MAX_EXPIRY_DAYS).contains(days));
        if days.is_none() {
            errors.push(FieldError::new(
                ["body".into(), "expires_after".into(), "days".into()],
                format!("must be between 1 and {MAX_EXPIRY_DAYS}"),
                "range",
            ));
        }
        match days {
            Some(days) if errors.is_empty() => Ok(days),
            _ => Err(DomainError::Validation(errors)),
        }
    }

    /// A dataset's expiry, as OpenAI shows it.
    fn of(dataset: &Dataset) -> Option<Self> {
        dataset.expires_after_days.map(|days| Self {
            anchor: EXPIRY_ANCHOR.to_owned(),
            days: i64::from(days),
        })
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
    /// How `file_ids` are cut (see the type).
    pub chunking_strategy: Option<ChunkingStrategy>,
    /// When it expires (absent or null: never).
    pub expires_after: Option<ExpiresAfter>,
}

/// What a new vector store is made of, checked.
#[derive(Debug)]
pub struct NewVectorStore {
    pub dataset: tessera_knowledge::NewDataset,
    pub files: Vec<FileId>,
    /// The sizes `files` are cut with; `None` keeps how each is cut.
    pub chunking: Option<ChunkingSettings>,
}

impl CreateVectorStore {
    pub const DEFAULT_NAME: &'static str = "Untitled vector store";

    pub fn into_new(self) -> Result<NewVectorStore, DomainError> {
        let expires_after_days = self
            .expires_after
            .as_ref()
            .map(ExpiresAfter::days)
            .transpose()?;
        let chunking = chunking_of(self.chunking_strategy.as_ref())
            .map_err(|error| DomainError::Validation(vec![error]))?;
        Ok(NewVectorStore {
            dataset: tessera_knowledge::NewDataset {
                name: self.name.unwrap_or_else(|| Self::DEFAULT_NAME.into()),
                description: self.description,
                late_interaction: false,
                metadata: Metadata::of_body(self.metadata)?.unwrap_or_default(),
                expires_after_days,
            },
            files: file_ids(&self.file_ids.unwrap_or_default())?,
            chunking,
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
    /// A new expiry, counted from now (`null`: never expires; absent: unchanged). Given
    /// either way, the store counts as active now: this is how an expired store is used again.
    #[serde(default, deserialize_with = "crate::nullable")]
    #[schema(value_type = Option<ExpiresAfter>)]
    pub expires_after: Option<Option<ExpiresAfter>>,
}

impl ModifyVectorStore {
    pub fn into_changes(self) -> Result<tessera_knowledge::DatasetChanges, DomainError> {
        let expires_after_days = match &self.expires_after {
            None => None,
            Some(None) => Some(None),
            Some(Some(expiry)) => Some(Some(expiry.days()?)),
        };
        Ok(tessera_knowledge::DatasetChanges {
            name: self.name,
            metadata: Metadata::of_body(self.metadata)?,
            expires_after_days,
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
    /// `expired` once `expires_at` has passed (it is then refused for use), else
    /// `in_progress` while a file is processing, else `completed`.
    pub status: &'static str,
    /// When it expires, as given (null: never).
    pub expires_after: Option<ExpiresAfter>,
    /// `expires_after.days` after `last_active_at` (null: never).
    pub expires_at: Option<i64>,
    /// When it was last used: created, searched, given or relieved of a file (recorded to
    /// the minute), or given a new expiry.
    pub last_active_at: i64,
    pub metadata: BTreeMap<String, String>,
}

impl VectorStore {
    /// The store a dataset is, with its files' counts; `expired` as the server judges it now.
    pub fn of(dataset: &Dataset, counts: DatasetFileCounts, expired: bool) -> Self {
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
            status: if expired {
                "expired"
            } else if counts.processing > 0 {
                "in_progress"
            } else {
                "completed"
            },
            expires_after: ExpiresAfter::of(dataset),
            expires_at: dataset.expires_at().map(unix),
            last_active_at: unix(dataset.last_active_at),
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
    /// How the file is cut (see the type).
    pub chunking_strategy: Option<ChunkingStrategy>,
}

impl CreateVectorStoreFile {
    /// The attributes and the sizes the file is to be cut with (`None`: as it is), checked.
    pub fn parts(&mut self) -> Result<(Attributes, Option<ChunkingSettings>), DomainError> {
        let chunking = chunking_of(self.chunking_strategy.as_ref())
            .map_err(|error| DomainError::Validation(vec![error]))?;
        let attributes = attributes_of(self.attributes.take().unwrap_or_default())?;
        Ok((attributes, chunking))
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
    /// `in_progress` (also while it is cut again with new sizes), `completed` or `failed`.
    pub status: &'static str,
    pub last_error: Option<LastError>,
    pub attributes: BTreeMap<String, Value>,
    /// How it is cut: `static` with the sizes a client asked for, or `other` (the server's
    /// sizes).
    pub chunking_strategy: FileChunkingStrategy,
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
            chunking_strategy: FileChunkingStrategy::of(file.chunking),
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
    /// Only the files of this status: `in_progress`, `completed`, `failed` or `cancelled`
    /// (none: a cancelled file has left the vector store, which lists what it holds).
    #[param(pattern = "^(in_progress|completed|failed|cancelled)$")]
    pub filter: Option<String>,
}

/// The files a list shows, by OpenAI's `filter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileListFilter {
    /// Every file.
    All,
    /// The files of this status.
    Status(FileStatus),
    /// `cancelled`: none (a cancelled file left the vector store).
    Cancelled,
}

impl ListVectorStoreFilesQuery {
    /// The paging, once what is not supported is refused.
    pub fn paging(&self) -> Result<ListQuery, FieldError> {
        Ok(ListQuery {
            limit: self.limit,
            order: self.order.clone(),
            after: self.after.clone(),
            before: self.before.clone(),
        })
    }

    /// Which files the list shows.
    pub fn filter(&self) -> Result<FileListFilter, FieldError> {
        match self.filter.as_deref() {
            None => Ok(FileListFilter::All),
            Some("in_progress") => Ok(FileListFilter::Status(FileStatus::Processing)),
            Some("completed") => Ok(FileListFilter::Status(FileStatus::Ready)),
            Some("failed") => Ok(FileListFilter::Status(FileStatus::Failed)),
            Some("cancelled") => Ok(FileListFilter::Cancelled),
            Some(_) => Err(query_error(
                "filter",
                "must be `in_progress`, `completed`, `failed` or `cancelled`",
                "enum",
            )),
        }
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
    fn chunking_strategies_are_read_and_refused_by_name() {
        let create = |body: Value| {
            serde_json::from_value::<CreateVectorStore>(body)
                .unwrap()
                .into_new()
        };
        let made = create(serde_json::json!({"chunking_strategy": {"type": "auto"}})).unwrap();
        assert_eq!(made.dataset.name, CreateVectorStore::DEFAULT_NAME);
        assert_eq!(made.chunking, None);
        let made = create(serde_json::json!({"chunking_strategy": {"type": "static",
            "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 50}}}))
        .unwrap();
        assert_eq!(
            made.chunking,
            Some(ChunkingSettings {
                max_tokens: 100,
                overlap_tokens: 50
            })
        );
        for (body, field) in [
            (
                serde_json::json!({"type": "static", "static": {"max_chunk_size_tokens": 99, "chunk_overlap_tokens": 0}}),
                "max_chunk_size_tokens",
            ),
            (
                serde_json::json!({"type": "static", "static": {"max_chunk_size_tokens": 4097, "chunk_overlap_tokens": 0}}),
                "max_chunk_size_tokens",
            ),
            (
                serde_json::json!({"type": "static", "static": {"max_chunk_size_tokens": 200, "chunk_overlap_tokens": 101}}),
                "chunk_overlap_tokens",
            ),
            (
                serde_json::json!({"type": "static", "static": {"max_chunk_size_tokens": 200, "chunk_overlap_tokens": -1}}),
                "chunk_overlap_tokens",
            ),
            (serde_json::json!({"type": "static"}), "static"),
            (serde_json::json!({"type": "other"}), "type"),
        ] {
            let Err(DomainError::Validation(errors)) =
                create(serde_json::json!({"chunking_strategy": body.clone()}))
            else {
                panic!("{body} is accepted");
            };
            let loc = format!("{:?}", errors[0].loc);
            assert!(
                loc.contains("chunking_strategy") && loc.contains(field),
                "{body}: {loc}"
            );
        }
        assert!(matches!(
            create(serde_json::json!({"metadata": {"": "empty key"}})),
            Err(DomainError::Validation(_))
        ));
    }

    #[test]
    fn a_files_strategy_is_static_with_its_sizes_or_other() {
        let sized = FileChunkingStrategy::of(Some(ChunkingSettings {
            max_tokens: 120,
            overlap_tokens: 10,
        }));
        assert_eq!(
            serde_json::to_value(&sized).unwrap(),
            serde_json::json!({"type": "static", "static": {"max_chunk_size_tokens": 120, "chunk_overlap_tokens": 10}})
        );
        assert_eq!(
            serde_json::to_value(FileChunkingStrategy::of(None)).unwrap(),
            serde_json::json!({"type": "other"})
        );
    }

    #[test]
    fn a_file_list_filters_by_openai_status_names() {
        let filter = |value: &str| {
            ListVectorStoreFilesQuery {
                limit: None,
                order: None,
                after: None,
                before: None,
                filter: Some(value.into()),
            }
            .filter()
        };
        assert_eq!(
            filter("in_progress").unwrap(),
            FileListFilter::Status(FileStatus::Processing)
        );
        assert_eq!(
            filter("completed").unwrap(),
            FileListFilter::Status(FileStatus::Ready)
        );
        assert_eq!(
            filter("failed").unwrap(),
            FileListFilter::Status(FileStatus::Failed)
        );
        assert_eq!(filter("cancelled").unwrap(), FileListFilter::Cancelled);
        let refused = filter("done").unwrap_err();
        assert_eq!(refused.loc, ["query".into(), "filter".into()]);
    }

    #[test]
    fn expiry_is_days_after_the_last_activity_and_modify_tells_absent_from_null() {
        let create = |body: Value| {
            serde_json::from_value::<CreateVectorStore>(body)
                .unwrap()
                .into_new()
        };
        let made =
            create(serde_json::json!({"expires_after": {"anchor": "last_active_at", "days": 365}}))
                .unwrap();
        assert_eq!(made.dataset.expires_after_days, Some(365));
        assert_eq!(
            create(serde_json::json!({"expires_after": null}))
                .unwrap()
                .dataset
                .expires_after_days,
            None
        );
        for (expiry, refused) in [
            (
                serde_json::json!({"anchor": "last_active_at", "days": 0}),
                vec!["days"],
            ),
            (
                serde_json::json!({"anchor": "last_active_at", "days": 366}),
                vec!["days"],
            ),
            (
                serde_json::json!({"anchor": "created_at", "days": -1}),
                vec!["anchor", "days"],
            ),
        ] {
            let Err(DomainError::Validation(errors)) =
                create(serde_json::json!({ "expires_after": expiry }))
            else {
                panic!("{expiry} is refused");
            };
            let fields: Vec<String> = errors
                .iter()
                .map(|error| format!("{:?}", error.loc.last().unwrap()))
                .collect();
            assert_eq!(fields.len(), refused.len(), "{expiry}: {fields:?}");
            for field in refused {
                assert!(fields.iter().any(|f| f.contains(field)), "{fields:?}");
            }
        }

        let modify = |body: Value| {
            serde_json::from_value::<ModifyVectorStore>(body)
                .unwrap()
                .into_changes()
                .unwrap()
                .expires_after_days
        };
        assert_eq!(modify(serde_json::json!({"name": "Kept"})), None);
        assert_eq!(
            modify(serde_json::json!({"expires_after": null})),
            Some(None)
        );
        assert_eq!(
            modify(serde_json::json!({"expires_after": {"anchor": "last_active_at", "days": 7}})),
            Some(Some(7))
        );
    }
}
