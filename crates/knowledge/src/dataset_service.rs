//! Datasets as the API offers them: create, read, list, rename, delete, add and remove
//! files, snapshots, and hybrid search, its candidates reordered by late interaction where
//! the dataset or the request asks, and reranked by a cross-encoder when one is configured.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use tessera_kernel::{Caller, Clock, CursorCodec, DomainError, Limit, Page, PageRequest};

use crate::{
    Attributes, ChunkingSettings, Dataset, DatasetChanges, DatasetFile, DatasetFileCounts,
    DatasetId, DatasetStore, Embedder, FileId, FileStatus, FileStore, LateInteractionSearch,
    LateRerank, NewDataset, Rechunking, Reranking, ScoredChunk, SearchMode, Snapshot, VectorIndex,
    VectorQuery,
};

use crate::MAX_EXPIRY_DAYS;

const DATASET_LIST: &str = "datasets";
const DATASET_FILE_LIST: &str = "dataset-files";
/// The longest dataset name, in characters.
pub const MAX_DATASET_NAME_CHARS: usize = 200;
/// The longest description, in characters.
pub const MAX_DATASET_DESCRIPTION_CHARS: usize = 2000;
/// The longest search query, in characters.
pub const MAX_QUERY_CHARS: usize = 2000;
/// The most hits one search returns.
pub const MAX_SEARCH_LIMIT: usize = 50;

/// The refusal of sizes for a file that another dataset holds cut otherwise.
fn cut_elsewhere(file: &FileId) -> DomainError {
    DomainError::invalid(
        ["body".into(), "chunking_strategy".into()],
        format!(
            "file {file} is already cut differently for another vector store, whose chunks it \
             shares: upload it again to have a separate file cut with these sizes (or add it \
             with the `auto` strategy)"
        ),
        "value_error",
    )
}

/// A search within a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    pub query: String,
    pub limit: usize,
    /// Search this snapshot's files instead of the current ones.
    pub version: Option<u64>,
    /// Only these files (of the dataset or snapshot).
    pub files: Option<Vec<FileId>>,
    pub mode: SearchMode,
    /// Rerank the fused candidates with the cross-encoder: `None` does when one is
    /// configured; `Some(true)` without one is refused.
    pub rerank: Option<bool>,
    /// Reorder the candidates by late interaction: `None` does when the dataset says so;
    /// `Some(true)` on a server without token vectors is refused.
    pub late_interaction: Option<bool>,
}

/// A search hit with its file's name.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub chunk: ScoredChunk,
    pub file_name: String,
    /// The cross-encoder's relevance (0 to 1) when the search was reranked: hits are then
    /// ordered by it rather than by the fused score.
    pub relevance: Option<f32>,
}

/// Datasets of organizations.
#[derive(Clone)]
pub struct DatasetService {
    datasets: Arc<dyn DatasetStore>,
    files: Arc<dyn FileStore>,
    embedder: Arc<dyn Embedder>,
    index: Arc<dyn VectorIndex>,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
    reranking: Option<Reranking>,
    late_interaction: Option<LateInteractionSearch>,
    /// The most tokens of one text the embedding model reads, when known here.
    chunk_window: Option<usize>,
}

fn check_name(name: &str) -> Result<String, DomainError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_DATASET_NAME_CHARS {
        return Err(DomainError::invalid(
            ["body".into(), "name".into()],
            format!("the name must have 1 to {MAX_DATASET_NAME_CHARS} characters"),
            "string_length",
        ));
    }
    Ok(name.to_owned())
}

fn check_description(description: Option<String>) -> Result<Option<String>, DomainError> {
    match description {
        Some(text) if text.chars().count() > MAX_DATASET_DESCRIPTION_CHARS => {
            Err(DomainError::invalid(
                ["body".into(), "description".into()],
                format!(
                    "the description must have at most {MAX_DATASET_DESCRIPTION_CHARS} characters"
                ),
                "string_length",
            ))
        }
        other => Ok(other),
    }
}

/// Refuses an expiry outside 1 to [`MAX_EXPIRY_DAYS`] days.
fn check_expiry(days: Option<u16>) -> Result<Option<u16>, DomainError> {
    match days {
        Some(days) if !(1..=MAX_EXPIRY_DAYS).contains(&days) => Err(DomainError::invalid(
            ["body".into(), "expires_after".into(), "days".into()],
            format!("must be between 1 and {MAX_EXPIRY_DAYS}"),
            "range",
        )),
        other => Ok(other),
    }
}

/// The `type` of the validation error refusing an expired dataset for use (its search, new
/// files): the request is fine, the dataset is not.
pub const EXPIRED: &str = "expired";

/// The refusal of an expired dataset: a 400 (OpenAI) or 422 (`/v1`) naming the dataset in
/// the path, since the request is fine and the dataset is not; [`EXPIRED`] tells it from
/// other invalid input.
fn expired(dataset: &Dataset) -> DomainError {
    let at = dataset
        .expires_at()
        .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default();
    DomainError::invalid(
        ["path".into()],
        format!(
            "vector store {} expired at {at} ({} days after it was last active): it keeps its \
             files but cannot be searched or given files; extend or clear its `expires_after`, \
             or delete it",
            dataset.id,
            dataset.expires_after_days.unwrap_or_default(),
        ),
        EXPIRED,
    )
}

/// Whether `error` is the refusal of an expired dataset.
pub fn is_expired_refusal(error: &DomainError) -> bool {
    matches!(error, DomainError::Validation(fields)
        if fields.iter().any(|field| field.kind == EXPIRED))
}

impl DatasetService {
    pub fn new(
        datasets: Arc<dyn DatasetStore>,
        files: Arc<dyn FileStore>,
        embedder: Arc<dyn Embedder>,
        index: Arc<dyn VectorIndex>,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
    ) -> Self {
        Self {
            datasets,
            files,
            embedder,
            index,
            clock,
            cursors,
            reranking: None,
            late_interaction: None,
            chunk_window: None,
        }
    }

    /// Files are embedded by a model that reads `window` tokens of a text (its
    /// [`crate::ChunkTokens::window`]): chunk sizes a client asks for beyond it are refused,
    /// since a chunk has one vector and the model would not read its end.
    #[must_use]
    pub fn with_chunk_window(mut self, window: usize) -> Self {
        self.chunk_window = Some(window);
        self
    }

    /// The most tokens a chunk may be asked to hold here; `None` when the embedding model's
    /// window is not known here (a hosted model, or none loaded).
    pub fn chunk_window(&self) -> Option<usize> {
        self.chunk_window
    }

    /// Refuses chunk sizes the embedding model cannot read whole (named as OpenAI's
    /// `chunking_strategy`, the only request that asks for sizes).
    pub fn check_chunking(&self, chunking: &ChunkingSettings) -> Result<(), DomainError> {
        match self.chunk_window {
            Some(window) if chunking.max_tokens > window => Err(DomainError::invalid(
                [
                    "body".into(),
                    "chunking_strategy".into(),
                    "static".into(),
                    "max_chunk_size_tokens".into(),
                ],
                format!(
                    "must be at most {window}: the embedding model reads {window} tokens of a \
                     text, and each chunk is embedded whole as one vector"
                ),
                "less_than_equal",
            )),
            _ => Ok(()),
        }
    }

    /// Searches of datasets that ask for it (or requests that do) reorder their candidates
    /// by late interaction with this model, whose token vectors the chunks were indexed with.
    #[must_use]
    pub fn with_late_interaction(mut self, stage: LateInteractionSearch) -> Self {
        self.late_interaction = Some(stage);
        self
    }

    /// The late-interaction model's name, when searches can use it.
    pub fn late_interaction_model(&self) -> Option<&str> {
        self.late_interaction
            .as_ref()
            .map(|stage| stage.model.model())
    }

    /// `wanted` (a dataset's setting or a search's), when this server can honour it.
    fn check_late_interaction(&self, wanted: bool) -> Result<bool, DomainError> {
        if wanted && self.late_interaction.is_none() {
            return Err(DomainError::invalid(
                ["body".into(), "lateInteraction".into()],
                "this server computes no token vectors for late interaction (see the \
                 knowledge.late_interaction setting)",
                "value_error",
            ));
        }
        Ok(wanted)
    }

    /// Search reranks its candidates with this stage when a request asks (or does not say,
    /// and the stage reranks by default).
    #[must_use]
    pub fn with_reranking(mut self, reranking: Reranking) -> Self {
        self.reranking = Some(reranking);
        self
    }

    /// The reranking model's name, when search reranks.
    pub fn reranker(&self) -> Option<&str> {
        self.reranking.as_ref().map(|stage| stage.reranker.model())
    }

    pub(crate) fn store(&self) -> &dyn DatasetStore {
        self.datasets.as_ref()
    }

    pub(crate) fn file_store(&self) -> &dyn FileStore {
        self.files.as_ref()
    }

    pub(crate) fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// Whether the dataset has expired now, by this service's clock.
    pub fn has_expired(&self, dataset: &Dataset) -> bool {
        dataset.is_expired(self.clock.now())
    }

    /// The dataset, unless it has expired (refused with [`EXPIRED`]): what searching it or
    /// adding files to it starts with.
    pub async fn usable(&self, caller: &Caller, id: &DatasetId) -> Result<Dataset, DomainError> {
        let dataset = self.get(caller, id).await?;
        if self.has_expired(&dataset) {
            return Err(expired(&dataset));
        }
        Ok(dataset)
    }

    /// Records that `dataset` was used now, when the last record is older than
    /// [`ACTIVITY_RESOLUTION`](crate::ACTIVITY_RESOLUTION) (so a busy dataset is written
    /// once a minute, not once per search); the dataset as it then reads.
    async fn record_activity(
        &self,
        caller: &Caller,
        mut dataset: Dataset,
    ) -> Result<Dataset, DomainError> {
        let now = self.clock.now();
        if dataset.activity_due(now)
            && self
                .datasets
                .touch(caller.organization(), &dataset.id, now)
                .await?
        {
            dataset.last_active_at = now;
        }
        Ok(dataset)
    }

    pub async fn create(&self, caller: &Caller, new: NewDataset) -> Result<Dataset, DomainError> {
        let now = self.clock.now();
        let dataset = Dataset {
            id: DatasetId::generate(),
            organization: caller.organization().clone(),
            name: check_name(&new.name)?,
            description: check_description(new.description)?,
            version: 1,
            file_count: 0,
            late_interaction: self.check_late_interaction(new.late_interaction)?,
            metadata: new.metadata,
            expires_after_days: check_expiry(new.expires_after_days)?,
            last_active_at: now,
            created_by: caller.subject().to_owned(),
            created_at: now,
            updated_at: now,
        };
        let audit = caller.audit("dataset.create", "dataset", dataset.id.as_str(), now);
        self.datasets.insert(&dataset, &audit).await?;
        Ok(dataset)
    }

    pub async fn get(&self, caller: &Caller, id: &DatasetId) -> Result<Dataset, DomainError> {
        self.datasets
            .get(caller.organization(), id)
            .await?
            .ok_or_else(|| DomainError::not_found("dataset", id))
    }

    pub async fn list(
        &self,
        caller: &Caller,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<Dataset>, DomainError> {
        let after = cursor
            .map(|c| {
                self.cursors
                    .decode::<DatasetId>(DATASET_LIST, caller.organization().as_str(), c)
            })
            .transpose()?;
        self.list_after(caller, PageRequest { limit, after }).await
    }

    /// Newest first, from the dataset after `page.after` (OpenAI's `after` names a vector
    /// store, not a cursor).
    pub async fn list_after(
        &self,
        caller: &Caller,
        page: PageRequest<DatasetId>,
    ) -> Result<Page<Dataset>, DomainError> {
        let rows = self.datasets.list(caller.organization(), &page).await?;
        let total = self.datasets.count(caller.organization()).await?;
        Ok(Page::from_overfetch(
            rows,
            page.limit,
            Some(total),
            |dataset| {
                self.cursors
                    .encode(DATASET_LIST, caller.organization().as_str(), &dataset.id)
            },
        ))
    }

    /// Renames or re-describes a dataset (`Some(None)` clears the description), replaces its
    /// metadata, turns late interaction on or off for its searches, or sets or clears its
    /// expiry. Its version counts content changes only, so it stays. A new expiry (or its
    /// clearing) counts as activity, so the expiry runs from now: that is how an expired
    /// dataset is revived (every other change of an expired one is allowed too, but leaves it
    /// expired).
    pub async fn update(
        &self,
        caller: &Caller,
        id: &DatasetId,
        changes: DatasetChanges,
    ) -> Result<Dataset, DomainError> {
        let late_interaction = changes
            .late_interaction
            .map(|wanted| self.check_late_interaction(wanted))
            .transpose()?;
        let expiry = changes.expires_after_days.map(check_expiry).transpose()?;
        let mut dataset = self.get(caller, id).await?;
        if let Some(name) = changes.name {
            dataset.name = check_name(&name)?;
        }
        if let Some(description) = changes.description {
            dataset.description = check_description(description)?;
        }
        if let Some(late_interaction) = late_interaction {
            dataset.late_interaction = late_interaction;
        }
        if let Some(metadata) = changes.metadata {
            dataset.metadata = metadata;
        }
        if let Some(days) = expiry {
            dataset.expires_after_days = days;
        }
        dataset.updated_at = self.clock.now();
        let audit = caller.audit("dataset.update", "dataset", id.as_str(), dataset.updated_at);
        if !self.datasets.update(&dataset, &audit).await? {
            return Err(DomainError::not_found("dataset", id));
        }
        if expiry.is_some()
            && self
                .datasets
                .touch(caller.organization(), id, dataset.updated_at)
                .await?
        {
            dataset.last_active_at = dataset.updated_at;
        }
        Ok(dataset)
    }

    /// The file as the dataset holds it; `NotFound` when the dataset does not exist or does
    /// not hold it.
    pub async fn file(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        file: &FileId,
    ) -> Result<DatasetFile, DomainError> {
        self.datasets
            .dataset_file(caller.organization(), dataset, file)
            .await?
            .ok_or_else(|| DomainError::not_found("file", file))
    }

    /// Replaces the attributes of a file the dataset holds (empty clears them).
    pub async fn set_attributes(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        file: &FileId,
        attributes: &Attributes,
    ) -> Result<DatasetFile, DomainError> {
        self.get(caller, dataset).await?;
        if !self
            .datasets
            .set_attributes(caller.organization(), dataset, file, attributes)
            .await?
        {
            return Err(DomainError::not_found("file", file));
        }
        self.file(caller, dataset, file).await
    }

    /// Every file the dataset holds with its attributes: what a search filtered by
    /// attributes ([`crate::AttributeFilter::matches`]) picks its `files` from, and what its results
    /// show. Refused, as the search would be, when the dataset has expired.
    pub async fn file_attributes(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
    ) -> Result<HashMap<FileId, Attributes>, DomainError> {
        self.usable(caller, dataset).await?;
        let files = self
            .datasets
            .attributes(caller.organization(), dataset)
            .await?;
        Ok(files.into_iter().collect())
    }

    /// How many of the dataset's files are in each status, and their size.
    pub async fn file_counts(
        &self,
        caller: &Caller,
        id: &DatasetId,
    ) -> Result<DatasetFileCounts, DomainError> {
        self.datasets
            .file_counts(caller.organization(), id, None)
            .await?
            .ok_or_else(|| DomainError::not_found("dataset", id))
    }

    /// Deletes a dataset and its snapshots; its files stay, out of its search.
    pub async fn delete(&self, caller: &Caller, id: &DatasetId) -> Result<(), DomainError> {
        let audit = caller.audit("dataset.delete", "dataset", id.as_str(), self.clock.now());
        let files = self
            .datasets
            .delete(caller.organization(), id, &audit)
            .await?
            .ok_or_else(|| DomainError::not_found("dataset", id))?;
        for file in files {
            self.sync_index(caller, &file).await?;
        }
        Ok(())
    }

    /// Adds a file to a dataset (idempotent). Its chunks become searchable in the dataset
    /// once it is `ready`. Refused when the dataset has expired; counts as activity.
    pub async fn add_file(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        file: &FileId,
    ) -> Result<(Dataset, bool), DomainError> {
        self.usable(caller, dataset).await?;
        let now = self.clock.now();
        // The association is the resource: `<dataset id>/<file id>`.
        let audit = caller.audit(
            "dataset_file.add",
            "dataset_file",
            &format!("{dataset}/{file}"),
            now,
        );
        let (dataset, added) = self
            .datasets
            .add_file(caller.organization(), dataset, file, now, &audit)
            .await?;
        if added {
            self.sync_index(caller, file).await?;
        }
        Ok((self.record_activity(caller, dataset).await?, added))
    }

    /// Adds a file to a dataset (idempotent), cut with `chunking` when given: the file's
    /// sizes are set first, and it is cut again with them if it was cut before
    /// ([`Rechunking`]). Refused (nothing changed) when the sizes are more than the model
    /// reads, or when another dataset holds the file cut with other sizes. `None` keeps
    /// how the file is cut.
    pub async fn add_file_cut(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        file: &FileId,
        chunking: Option<ChunkingSettings>,
    ) -> Result<(Dataset, bool), DomainError> {
        if let Some(chunking) = chunking {
            self.check_chunking(&chunking)?;
            self.usable(caller, dataset).await?;
            self.rechunk(caller, dataset, file, chunking).await?;
        }
        self.add_file(caller, dataset, file).await
    }

    /// Sets the sizes `file` is cut with, for `dataset` ([`FileStore::set_chunking`]).
    pub(crate) async fn rechunk(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        file: &FileId,
        chunking: ChunkingSettings,
    ) -> Result<(), DomainError> {
        let now = self.clock.now();
        let audit = caller.audit("file.rechunk", "file", file.as_str(), now);
        let decided = self
            .files
            .set_chunking(caller.organization(), file, dataset, chunking, now, &audit)
            .await?
            .ok_or_else(|| DomainError::not_found("file", file))?;
        if decided == Rechunking::CutElsewhere {
            return Err(cut_elsewhere(file));
        }
        Ok(())
    }

    /// Refuses, before anything changes, a file that asking for `chunking` for `dataset`
    /// (`None`: one not created yet) would refuse ([`Rechunking::CutElsewhere`]).
    pub(crate) async fn check_rechunk(
        &self,
        caller: &Caller,
        dataset: Option<&DatasetId>,
        file: &FileId,
        chunking: ChunkingSettings,
    ) -> Result<(), DomainError> {
        let stored = self
            .files
            .get(caller.organization(), file)
            .await?
            .ok_or_else(|| DomainError::not_found("file", file))?;
        let held = self.files.datasets_of(caller.organization(), file).await?;
        let held_elsewhere = held.iter().any(|other| Some(other) != dataset);
        if Rechunking::decide(&stored, chunking, held_elsewhere) == Rechunking::CutElsewhere {
            return Err(cut_elsewhere(file));
        }
        Ok(())
    }

    /// Removes a file from a dataset; 404 when it is not in it. Counts as activity unless
    /// the dataset has expired.
    pub async fn remove_file(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        file: &FileId,
    ) -> Result<Dataset, DomainError> {
        let now = self.clock.now();
        let audit = caller.audit(
            "dataset_file.remove",
            "dataset_file",
            &format!("{dataset}/{file}"),
            now,
        );
        let (dataset, removed) = self
            .datasets
            .remove_file(caller.organization(), dataset, file, now, &audit)
            .await?
            .ok_or_else(|| DomainError::not_found("dataset", dataset))?;
        if !removed {
            return Err(DomainError::not_found("dataset file", file));
        }
        self.sync_index(caller, file).await?;
        // Emptying an expired dataset is allowed (a file it holds cannot be deleted) but does
        // not revive it.
        if dataset.is_expired(now) {
            return Ok(dataset);
        }
        self.record_activity(caller, dataset).await
    }

    /// Writes the file's current datasets into its index entries.
    async fn sync_index(&self, caller: &Caller, file: &FileId) -> Result<(), DomainError> {
        let datasets = self.files.datasets_of(caller.organization(), file).await?;
        self.index
            .set_datasets(caller.organization(), file, datasets)
            .await
            .map_err(|error| DomainError::Unavailable {
                message: error.to_string(),
            })
    }

    pub async fn files(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<DatasetFile>, DomainError> {
        let owner = CursorCodec::owner(caller.organization().as_str(), dataset.as_str());
        let after = cursor
            .map(|c| self.cursors.decode::<FileId>(DATASET_FILE_LIST, &owner, c))
            .transpose()?;
        self.files_after(caller, dataset, None, PageRequest { limit, after })
            .await
    }

    /// The dataset's files (of `status` only, when given: the store filters, so pages are
    /// full), newest first, from the file after `page.after` (OpenAI's `after` names a file,
    /// not a cursor).
    pub async fn files_after(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        status: Option<FileStatus>,
        page: PageRequest<FileId>,
    ) -> Result<Page<DatasetFile>, DomainError> {
        let found = self.get(caller, dataset).await?;
        let owner = CursorCodec::owner(caller.organization().as_str(), dataset.as_str());
        let rows = self
            .datasets
            .files(caller.organization(), dataset, status, &page)
            .await?;
        let total = match status {
            None => found.file_count,
            Some(status) => {
                let counts = self.file_counts(caller, dataset).await?;
                match status {
                    FileStatus::Processing => counts.processing,
                    FileStatus::Ready => counts.ready,
                    FileStatus::Failed => counts.failed,
                }
            }
        };
        Ok(Page::from_overfetch(
            rows,
            page.limit,
            Some(total),
            |entry| {
                self.cursors
                    .encode(DATASET_FILE_LIST, &owner, &entry.file.id)
            },
        ))
    }

    pub async fn snapshot(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
    ) -> Result<Snapshot, DomainError> {
        let now = self.clock.now();
        let audit = caller.audit("dataset.snapshot", "dataset", dataset.as_str(), now);
        self.datasets
            .snapshot(caller.organization(), dataset, now, &audit)
            .await
    }

    pub async fn snapshots(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
    ) -> Result<Vec<Snapshot>, DomainError> {
        self.get(caller, dataset).await?;
        self.datasets
            .snapshots(caller.organization(), dataset)
            .await
    }

    /// Hybrid (dense + BM25, reciprocal-rank fused) search of the dataset's ready files,
    /// or of a snapshot's files; the candidates reordered by late interaction, then
    /// reranked by the cross-encoder, where asked. Refused when the dataset has expired;
    /// counts as activity.
    pub async fn search(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        request: SearchRequest,
    ) -> Result<Vec<SearchHit>, DomainError> {
        let query = request.query.trim().to_owned();
        if query.is_empty() || query.chars().count() > MAX_QUERY_CHARS {
            return Err(DomainError::invalid(
                ["body".into(), "query".into()],
                format!("the query must have 1 to {MAX_QUERY_CHARS} characters"),
                "string_length",
            ));
        }
        if request.limit == 0 || request.limit > MAX_SEARCH_LIMIT {
            return Err(DomainError::invalid(
                ["body".into(), "limit".into()],
                format!("the limit must be 1 to {MAX_SEARCH_LIMIT}"),
                "range",
            ));
        }
        let reranking = match (request.rerank, &self.reranking) {
            (Some(false), _) | (None, None) => None,
            (None, Some(stage)) => stage.by_default.then_some(stage),
            (Some(true), Some(stage)) => Some(stage),
            (Some(true), None) => {
                return Err(DomainError::invalid(
                    ["body".into(), "rerank".into()],
                    "this server has no reranking model (see the knowledge.rerank setting)",
                    "value_error",
                ));
            }
        };
        let asked_late = (request.late_interaction)
            .map(|wanted| self.check_late_interaction(wanted))
            .transpose()?;
        let found = self.usable(caller, dataset).await?;
        let found = self.record_activity(caller, found).await?;
        // A dataset set to it on a server that no longer offers it searches without.
        let late_stage = (self.late_interaction.as_ref())
            .filter(|_| asked_late.unwrap_or(found.late_interaction));
        let (scope, files) = match request.version {
            Some(version) if version != found.version => {
                let snapshot = self
                    .datasets
                    .snapshots(caller.organization(), dataset)
                    .await?
                    .into_iter()
                    .find(|snapshot| snapshot.version == version)
                    // The dataset exists; the body names a version it never had (a 404 would
                    // say the dataset is gone).
                    .ok_or_else(|| {
                        DomainError::invalid(
                            ["body".into(), "version".into()],
                            format!("dataset {dataset} has no snapshot of version {version}"),
                            "value_error",
                        )
                    })?;
                let frozen: Vec<FileId> = snapshot.files.into_iter().map(|(id, _)| id).collect();
                let files = match request.files {
                    Some(wanted) => {
                        let wanted: HashSet<FileId> = wanted.into_iter().collect();
                        frozen
                            .into_iter()
                            .filter(|id| wanted.contains(id))
                            .collect()
                    }
                    None => frozen,
                };
                (None, Some(files))
            }
            _ => (Some(dataset.clone()), request.files),
        };
        if files.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Vec::new());
        }
        let unavailable = |message: String| DomainError::Unavailable { message };
        // A words-only search needs no embedding.
        let dense = if request.mode == SearchMode::Sparse {
            Vec::new()
        } else {
            self.embedder
                .embed_query(query.clone())
                .await
                .map_err(|error| unavailable(error.to_string()))?
        };
        // The cross-encoder reads more candidates than are returned, and chooses among them.
        let candidates = match reranking {
            Some(stage) => stage.candidates.max(request.limit),
            None => request.limit,
        };
        let late = match late_stage {
            Some(stage) => Some(LateRerank {
                query: stage
                    .model
                    .encode_query(query.clone())
                    .await
                    .map_err(|error| unavailable(error.to_string()))?,
                candidates: stage.candidates.max(candidates),
            }),
            None => None,
        };
        let mut chunks = self
            .index
            .search(VectorQuery {
                organization: caller.organization().clone(),
                dataset: scope,
                files,
                text: query.clone(),
                dense,
                limit: candidates,
                mode: request.mode,
                late,
            })
            .await
            .map_err(|error| unavailable(error.to_string()))?;
        let relevance = match reranking {
            Some(stage) => {
                let (reordered, scores) = stage.reorder(&query, chunks).await?;
                chunks = reordered;
                Some(scores)
            }
            None => None,
        };
        let mut relevance = relevance.map(Vec::into_iter);
        let mut hits = Vec::with_capacity(request.limit.min(chunks.len()));
        for chunk in chunks {
            let score = relevance.as_mut().and_then(Iterator::next);
            if hits.len() == request.limit {
                break;
            }
            // A file deleted since it was indexed is skipped, never shown half-gone.
            if let Some(file) = self
                .files
                .get(caller.organization(), &chunk.file_id)
                .await?
            {
                hits.push(SearchHit {
                    chunk,
                    file_name: file.name,
                    relevance: score,
                });
            }
        }
        Ok(hits)
    }
}
