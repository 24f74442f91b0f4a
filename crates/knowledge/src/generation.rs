//! Generations of the vector index: each is one complete index made by one embedding model.
//! Changing the model builds a new generation beside the one in use (search keeps answering
//! from it) and puts it in use once every ready file's vectors are in it. The port records
//! the generations, which one each ready file's vectors have reached, and the lease of the
//! one process that re-embeds.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::DomainError;

use crate::{FileId, FileStore, StoredFile};

/// Where a generation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenerationState {
    /// Being filled with every ready file's vectors; search does not read it yet.
    Building,
    /// The index search reads and processing writes.
    Active,
    /// Replaced by a newer generation; its index can be deleted.
    Retired,
}

impl GenerationState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Building => "building",
            Self::Active => "active",
            Self::Retired => "retired",
        }
    }

    /// The state a store wrote with [`as_str`](Self::as_str).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "building" => Some(Self::Building),
            "active" => Some(Self::Active),
            "retired" => Some(Self::Retired),
            _ => None,
        }
    }
}

/// One generation of the index. Number 0 is the index of before generations were recorded
/// (the configured `vectors_dir` or collection); a deployment that never changed its model
/// has no recorded generation at all and uses that one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexGeneration {
    pub number: u32,
    /// The embedding model of its vectors.
    pub embedding_model: String,
    pub state: GenerationState,
    pub created_at: DateTime<Utc>,
    /// When it was put in use (a generation recorded as already in use: when recorded).
    pub activated_at: Option<DateTime<Utc>>,
}

/// How far a generation is: ready files with vectors, and how many of them it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GenerationProgress {
    pub done: u64,
    pub total: u64,
}

/// The generations and each ready file's place in them; implemented over the files' own
/// database, so a file's generation changes in the transactions that change the file.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait GenerationStore: Send + Sync {
    /// Every recorded generation, lowest number first; empty when none was recorded.
    async fn generations(&self) -> Result<Vec<IndexGeneration>, DomainError>;

    /// Starts a generation of `model`'s vectors, numbered one above the highest, and
    /// answers it; the generation already building for `model` when there is one. When
    /// none is recorded, generation 0 is first recorded as in use, made by `in_use` (the
    /// model of the vectors the index holds). A `Conflict` when another model's generation
    /// is building or `model` is the one in use.
    async fn begin(
        &self,
        model: &str,
        in_use: &str,
        at: DateTime<Utc>,
    ) -> Result<IndexGeneration, DomainError>;

    /// Leases the work on generation `number` to `worker` until `lease_until`, when no
    /// other worker holds a live lease on it; whether `worker` holds it now.
    async fn claim(
        &self,
        number: u32,
        worker: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, DomainError>;

    /// At most `limit` ready files with chunks whose vectors have not reached generation
    /// `number`, lowest id first.
    async fn files_behind(&self, number: u32, limit: usize)
    -> Result<Vec<StoredFile>, DomainError>;

    /// Records that the vectors of `file` are in generation `number`; false when it is no
    /// longer a ready file (deleted meanwhile).
    async fn mark_indexed(&self, file: &FileId, number: u32) -> Result<bool, DomainError>;

    /// How many ready files with chunks there are, and how many reached generation `number`.
    async fn progress(&self, number: u32) -> Result<GenerationProgress, DomainError>;

    /// Puts the building generation `number` in use as of `at` (the one in use before is
    /// retired, and every ready file is recorded as embedded by its model), in one
    /// transaction, unless a ready file's vectors have not reached it: false then, and
    /// nothing changed.
    async fn activate(&self, number: u32, at: DateTime<Utc>) -> Result<bool, DomainError>;
}

/// The models of an index's vectors counted by the ready files' records, the files from
/// before models were recorded (`None`) counted as `unrecorded`'s, in the order first met.
pub fn models_of<'a>(
    indexed: &'a [(Option<String>, u64)],
    unrecorded: &'a str,
) -> Vec<(&'a str, u64)> {
    let mut models: Vec<(&str, u64)> = Vec::new();
    for (model, count) in indexed {
        let model = model.as_deref().unwrap_or(unrecorded);
        match models.iter_mut().find(|(name, _)| *name == model) {
            Some((_, total)) => *total += count,
            None => models.push((model, *count)),
        }
    }
    models
}

/// Begins a generation of `model`'s vectors ([`GenerationStore::begin`]): the model in use
/// is the recorded generation's, else the one model of the ready files' records (files from
/// before models were recorded count as `unrecorded`'s). A conflict when the index
/// holds no vectors (nothing to re-embed: the setting alone changes the model) or those of
/// several models.
pub async fn begin_generation(
    generations: &dyn GenerationStore,
    files: &dyn FileStore,
    model: &str,
    unrecorded: &str,
    at: DateTime<Utc>,
) -> Result<IndexGeneration, DomainError> {
    let recorded = generations.generations().await?;
    let active = recorded
        .into_iter()
        .find(|generation| generation.state == GenerationState::Active);
    let in_use = match active {
        Some(generation) => generation.embedding_model,
        None => {
            let indexed = files.embedding_models().await?;
            match models_of(&indexed, unrecorded).as_slice() {
                [(only, _)] => (*only).to_owned(),
                [] => {
                    return Err(DomainError::Conflict {
                        code: "nothing_to_reindex",
                        message: "the index holds no vectors, so there is nothing to \
                                  re-embed: set knowledge.embedding_model and start the server"
                            .into(),
                    });
                }
                several => {
                    let counts: Vec<String> = several
                        .iter()
                        .map(|(model, count)| format!("{count} of {model}"))
                        .collect();
                    return Err(DomainError::Conflict {
                        code: "mixed_index",
                        message: format!(
                            "the index holds the vectors of several models ({}), so none can \
                             be named as the one in use to re-embed from",
                            counts.join(", ")
                        ),
                    });
                }
            }
        }
    };
    generations.begin(model, &in_use, at).await
}
