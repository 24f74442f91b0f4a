//! The index's generations in memory, beside the files they hold.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::DomainError;

use super::{InMemoryKnowledgeStore, State, files::holds_vectors};
use crate::{
    FileId, GenerationProgress, GenerationState, GenerationStore, IndexGeneration, StoredFile,
};

fn conflict(message: String) -> DomainError {
    DomainError::Conflict {
        code: "generation_conflict",
        message,
    }
}

impl State {
    /// The generation a ready file's vectors reached.
    fn generation_of(&self, file: &FileId) -> u32 {
        self.file_generations.get(file).copied().unwrap_or(0)
    }

    fn behind(&self, number: u32) -> impl Iterator<Item = &StoredFile> {
        (self.files.values())
            .filter(move |file| holds_vectors(file) && self.generation_of(&file.id) < number)
    }
}

#[async_trait]
impl GenerationStore for InMemoryKnowledgeStore {
    async fn generations(&self) -> Result<Vec<IndexGeneration>, DomainError> {
        Ok(self.with(|state| {
            (state.generations.values())
                .map(|(generation, _)| generation.clone())
                .collect()
        }))
    }

    async fn begin(
        &self,
        model: &str,
        in_use: &str,
        at: DateTime<Utc>,
    ) -> Result<IndexGeneration, DomainError> {
        self.with(|state| {
            if state.generations.is_empty() {
                let first = IndexGeneration {
                    number: 0,
                    embedding_model: in_use.to_owned(),
                    state: GenerationState::Active,
                    created_at: at,
                    activated_at: Some(at),
                };
                state.generations.insert(0, (first, None));
            }
            // The one building decides first: it is what stands in the way.
            let mut generations: Vec<&IndexGeneration> = state
                .generations
                .values()
                .map(|(generation, _)| generation)
                .collect();
            generations.sort_by_key(|generation| generation.state != GenerationState::Building);
            for generation in generations {
                match generation.state {
                    GenerationState::Building if generation.embedding_model == model => {
                        return Ok(generation.clone());
                    }
                    GenerationState::Building => {
                        return Err(conflict(format!(
                            "generation {} of {} is being built",
                            generation.number, generation.embedding_model
                        )));
                    }
                    GenerationState::Active if generation.embedding_model == model => {
                        return Err(conflict(format!(
                            "{model} made the vectors in use (generation {})",
                            generation.number
                        )));
                    }
                    _ => {}
                }
            }
            let number = state
                .generations
                .keys()
                .next_back()
                .map_or(0, |last| last + 1);
            let building = IndexGeneration {
                number,
                embedding_model: model.to_owned(),
                state: GenerationState::Building,
                created_at: at,
                activated_at: None,
            };
            state.generations.insert(number, (building.clone(), None));
            Ok(building)
        })
    }

    async fn claim(
        &self,
        number: u32,
        worker: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let Some((_, lease)) = state.generations.get_mut(&number) else {
                return false;
            };
            let free = lease
                .as_ref()
                .is_none_or(|(holder, until)| holder == worker || *until <= now);
            if free {
                *lease = Some((worker.to_owned(), lease_until));
            }
            free
        }))
    }

    async fn files_behind(
        &self,
        number: u32,
        limit: usize,
    ) -> Result<Vec<StoredFile>, DomainError> {
        Ok(self.with(|state| state.behind(number).take(limit).cloned().collect()))
    }

    async fn mark_indexed(&self, file: &FileId, number: u32) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            if !state.files.get(file).is_some_and(holds_vectors) {
                return false;
            }
            let reached = state.file_generations.entry(file.clone()).or_default();
            *reached = (*reached).max(number);
            true
        }))
    }

    async fn progress(&self, number: u32) -> Result<GenerationProgress, DomainError> {
        Ok(self.with(|state| {
            let holding = state.files.values().filter(|file| holds_vectors(file));
            let (mut done, mut total) = (0, 0);
            for file in holding {
                total += 1;
                if state.generation_of(&file.id) >= number {
                    done += 1;
                }
            }
            GenerationProgress { done, total }
        }))
    }

    async fn activate(&self, number: u32, at: DateTime<Utc>) -> Result<bool, DomainError> {
        self.with(|state| {
            let model = match state.generations.get(&number) {
                Some((generation, _)) if generation.state == GenerationState::Building => {
                    generation.embedding_model.clone()
                }
                _ => return Err(conflict(format!("generation {number} is not being built"))),
            };
            if state.behind(number).next().is_some() {
                return Ok(false);
            }
            for (generation, _) in state.generations.values_mut() {
                if generation.state == GenerationState::Active {
                    generation.state = GenerationState::Retired;
                }
                if generation.number == number {
                    generation.state = GenerationState::Active;
                    generation.activated_at = Some(at);
                }
            }
            let holding: Vec<FileId> = (state.files.values())
                .filter(|file| holds_vectors(file))
                .map(|file| file.id.clone())
                .collect();
            for id in holding {
                state.embedding_models.insert(id, model.clone());
            }
            Ok(true)
        })
    }
}
