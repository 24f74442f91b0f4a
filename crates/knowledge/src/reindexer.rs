//! Re-embedding ready files into a generation of the index, from the chunks the database
//! keeps (nothing is extracted again): one process at a time, under a lease on the
//! generation, file after file, each recorded once its vectors are all in. A process killed
//! midway loses nothing: the next one takes the lease over when it expires and goes on from
//! the first file not recorded, writing its points again under the same keys (never twice).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use chrono::TimeDelta;
use tessera_kernel::{Clock, DomainError};

use crate::{
    Embedder, FileStore, GenerationStore, IndexedChunk, LateInteraction, StoredFile, VectorIndex,
    processing::embed_batch,
};

/// The models and the index of the generation files are re-embedded into.
#[derive(Clone)]
pub struct GenerationTarget {
    pub number: u32,
    /// The generation's model (what `embedder.model()` names).
    pub embedder: Arc<dyn Embedder>,
    /// Token vectors too, where the deployment computes them for every chunk.
    pub late_interaction: Option<Arc<dyn LateInteraction>>,
    pub index: Arc<dyn VectorIndex>,
    /// Whether the generation is being built (it is put in use once no file is behind) or
    /// is the one in use (files processed by the previous one are caught up).
    pub building: bool,
}

/// How re-embedding goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReindexSettings {
    /// How long the lease lasts without progress before another process takes over.
    pub lease: Duration,
    /// Files taken per round.
    pub files_per_round: usize,
    /// Chunks per embedding call.
    pub embed_batch: usize,
}

impl Default for ReindexSettings {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(120),
            files_per_round: 16,
            embed_batch: 32,
        }
    }
}

/// What one round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReindexRound {
    /// This many files were re-embedded (and more may be behind).
    Reindexed(usize),
    /// No file is behind: a building generation was put in use (true), or the generation
    /// in use has caught up (false).
    Done { activated: bool },
    /// Another process holds the lease.
    Elsewhere,
}

/// Re-embeds the files behind one generation.
pub struct Reindexer {
    files: Arc<dyn FileStore>,
    generations: Arc<dyn GenerationStore>,
    target: GenerationTarget,
    clock: Arc<dyn Clock>,
    settings: ReindexSettings,
    worker: String,
    /// Set once the building generation is in use: from then on it is caught up.
    activated: AtomicBool,
}

fn unavailable(error: impl std::fmt::Display) -> DomainError {
    DomainError::Unavailable {
        message: error.to_string(),
    }
}

impl Reindexer {
    /// `worker` names this process in the lease.
    pub fn new(
        files: Arc<dyn FileStore>,
        generations: Arc<dyn GenerationStore>,
        target: GenerationTarget,
        clock: Arc<dyn Clock>,
        settings: ReindexSettings,
        worker: impl Into<String>,
    ) -> Self {
        Self {
            files,
            generations,
            target,
            clock,
            settings,
            worker: worker.into(),
            activated: AtomicBool::new(false),
        }
    }

    pub fn target(&self) -> &GenerationTarget {
        &self.target
    }

    async fn hold_lease(&self) -> Result<bool, DomainError> {
        let now = self.clock.now();
        let lease = TimeDelta::from_std(self.settings.lease).unwrap_or(TimeDelta::MAX);
        self.generations
            .claim(self.target.number, &self.worker, now, now + lease)
            .await
    }

    /// Takes (or keeps) the lease and re-embeds the next files behind the generation; with
    /// none behind, puts a building generation in use.
    pub async fn round(&self) -> Result<ReindexRound, DomainError> {
        if !self.hold_lease().await? {
            return Ok(ReindexRound::Elsewhere);
        }
        let number = self.target.number;
        let behind = self
            .generations
            .files_behind(number, self.settings.files_per_round.max(1))
            .await?;
        if behind.is_empty() {
            if !self.target.building || self.activated.load(Ordering::Relaxed) {
                return Ok(ReindexRound::Done { activated: false });
            }
            return match self.generations.activate(number, self.clock.now()).await {
                Ok(true) => {
                    self.activated.store(true, Ordering::Relaxed);
                    Ok(ReindexRound::Done { activated: true })
                }
                // A file became ready between the two reads: the next round takes it.
                Ok(false) => Ok(ReindexRound::Reindexed(0)),
                // Another process put it in use.
                Err(DomainError::Conflict { .. }) => {
                    self.activated.store(true, Ordering::Relaxed);
                    Ok(ReindexRound::Done { activated: false })
                }
                Err(error) => Err(error),
            };
        }
        for file in &behind {
            self.reindex(file).await?;
            // Each file renews the lease, so a long run keeps it.
            if !self.hold_lease().await? {
                return Ok(ReindexRound::Elsewhere);
            }
        }
        Ok(ReindexRound::Reindexed(behind.len()))
    }

    /// Writes one file's vectors into the generation and records it there.
    async fn reindex(&self, file: &StoredFile) -> Result<(), DomainError> {
        let (organization, id) = (&file.organization, &file.id);
        let target = &self.target;
        let chunks = self.files.chunks(organization, id).await?;
        let datasets = self.files.datasets_of(organization, id).await?;
        for batch in chunks.chunks(self.settings.embed_batch.max(1)) {
            let texts: Vec<String> = batch.iter().map(|chunk| chunk.text.clone()).collect();
            let (dense, late) = embed_batch(
                target.embedder.as_ref(),
                target.late_interaction.as_deref(),
                texts,
            )
            .await
            .map_err(unavailable)?;
            let indexed = batch
                .iter()
                .zip(dense.into_iter().zip(late))
                .map(|(chunk, (dense, late))| IndexedChunk {
                    organization: organization.clone(),
                    file_id: id.clone(),
                    ordinal: chunk.ordinal,
                    datasets: datasets.clone(),
                    text: chunk.text.clone(),
                    location: chunk.location.clone(),
                    dense,
                    late,
                })
                .collect();
            target.index.upsert(indexed).await.map_err(unavailable)?;
        }
        // A dataset change made while the vectors were written found none of them to change.
        let now_in = self.files.datasets_of(organization, id).await?;
        if now_in != datasets {
            (target.index)
                .set_datasets(organization, id, now_in)
                .await
                .map_err(unavailable)?;
        }
        if !self.generations.mark_indexed(id, target.number).await? {
            // Deleted meanwhile: what was just written must not stay.
            (target.index)
                .delete_file(organization, id)
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }
}
