//! A process's background re-embedding (decision 0052): into the generation being built
//! when it started, or into one begun while it runs (looked for at every poll, its model
//! loaded and the index mirrored into before any file is written there), round after round
//! beside the processing workers; with none building, files another process embedded into
//! an older generation are caught up into the one in use.

use std::{sync::Arc, time::Duration};

use tessera_kernel::Clock;
use tessera_knowledge::{
    Embedder, GenerationState, GenerationStore, GenerationTarget, LateInteraction, MirroredIndex,
    ReindexRound, ReindexSettings, Reindexer,
};
use tessera_setup::config::Settings;
use tessera_store::SqlFileStore;

use crate::{embedding_model::load_embedded, index_locations::vector_index};

/// What re-embedding needs in one process.
pub(crate) struct Reindexing {
    pub settings: Settings,
    pub files: Arc<SqlFileStore>,
    /// The index search and processing use, mirrored into a generation being built.
    pub mirror: Arc<MirroredIndex>,
    pub late_interaction: Option<Arc<dyn LateInteraction>>,
    pub clock: Arc<dyn Clock>,
    pub lease: Duration,
    /// The number of the generation this process serves.
    pub serving: u32,
    /// The generation to work on from the start: the one being built, or the one in use.
    pub initial: Option<GenerationTarget>,
}

impl Reindexing {
    fn reindexer(&self, target: GenerationTarget) -> Reindexer {
        let worker = format!(
            "{}-reindex-{}",
            std::process::id(),
            uuid::Uuid::now_v7().simple()
        );
        Reindexer::new(
            self.files.clone(),
            self.files.clone(),
            target,
            self.clock.clone(),
            ReindexSettings {
                lease: self.lease,
                ..ReindexSettings::default()
            },
            worker,
        )
    }

    /// A generation begun since this process started (and not looked at before), with its
    /// model loaded and changes mirrored into its index from now on.
    async fn begun(&self, looked_at: &mut Option<u32>) -> Option<GenerationTarget> {
        let generations = match self.files.generations().await {
            Ok(generations) => generations,
            Err(error) => {
                tracing::warn!(%error, "reading the vector index's generations");
                return None;
            }
        };
        let building = generations
            .into_iter()
            .find(|g| g.state == GenerationState::Building && g.number > self.serving)?;
        if *looked_at == Some(building.number) {
            return None;
        }
        *looked_at = Some(building.number);
        let model = &building.embedding_model;
        let embedder: Arc<dyn Embedder> = match load_embedded(&self.settings, model).await {
            Ok(Some(embedder)) => Arc::new(embedder),
            Ok(None) => {
                tracing::warn!(
                    generation = building.number,
                    %model,
                    "a new generation of the vector index was begun, but its model's files are \
                     not under knowledge.embedding_model_dir or models.local_dir (`just models` \
                     fetches them); restart once they are"
                );
                return None;
            }
            Err(error) => {
                tracing::warn!(generation = building.number, %model, %error, "loading the model of a new generation");
                return None;
            }
        };
        let index = match vector_index(&self.settings, embedder.dimensions(), building.number).await
        {
            Ok(index) => index,
            Err(error) => {
                tracing::warn!(generation = building.number, %error, "opening a new generation of the vector index");
                return None;
            }
        };
        self.mirror.mirror_into(index.clone());
        tracing::info!(
            generation = building.number,
            %model,
            "files are re-embedded into a new generation of the vector index; search answers \
             from the one in use until it is complete"
        );
        Some(GenerationTarget {
            number: building.number,
            embedder,
            late_interaction: self.late_interaction.clone(),
            index,
            building: true,
        })
    }

    /// Runs until the process stops.
    pub async fn run(self: Arc<Self>, poll: Duration) {
        let mut current = self.initial.clone().map(|target| self.reindexer(target));
        let mut looked_at = None;
        loop {
            // Catching up (or idle), this process takes up a generation begun meanwhile.
            if current.as_ref().is_none_or(|r| !r.target().building)
                && let Some(target) = self.begun(&mut looked_at).await
            {
                current = Some(self.reindexer(target));
            }
            let Some(reindexer) = &current else {
                tokio::time::sleep(poll).await;
                continue;
            };
            let target = reindexer.target();
            let (number, model) = (target.number, target.embedder.model());
            match reindexer.round().await {
                Ok(ReindexRound::Reindexed(files)) if files > 0 => {
                    tracing::info!(generation = number, %model, files, "files re-embedded");
                }
                Ok(ReindexRound::Reindexed(_)) => {}
                Ok(ReindexRound::Done { activated: true }) => {
                    tracing::info!(
                        generation = number,
                        %model,
                        "every ready file is re-embedded: the new generation of the vector index \
                         is in use from the next start of each process (restart them to search \
                         with {model})"
                    );
                }
                Ok(ReindexRound::Done { activated: false } | ReindexRound::Elsewhere) => {
                    tokio::time::sleep(poll).await;
                }
                Err(error) => {
                    tracing::warn!(generation = number, %error, "re-embedding paused; retrying");
                    tokio::time::sleep(poll).await;
                }
            }
        }
    }
}
