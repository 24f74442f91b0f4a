//! Which embedding model a process runs, and the guard that an index never mixes two
//! models' vectors: every ready file records the model of its vectors (decision 0047), so
//! start-up knows what the index holds before it loads a model.

use tessera_embed_local::LocalEmbeddingModel;

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

/// The models of `indexed`, with files from before models were recorded counted as
/// `unrecorded`'s.
fn models_of<'a>(indexed: &'a IndexedModels, unrecorded: &'a str) -> Vec<(&'a str, u64)> {
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

/// The embedded model to load: the one `knowledge.embedding_model` names; else the one the
/// index's vectors were made by, so an existing deployment keeps its model; else
/// [`DEFAULT_EMBEDDED_MODEL`].
pub(crate) fn embedded_model_to_load(
    configured: Option<&str>,
    indexed: &IndexedModels,
) -> Result<LocalEmbeddingModel, String> {
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
             together. Set knowledge.embedding_model to the model that made them, or give \
             this model a new index (knowledge.vectors_dir, or knowledge.qdrant_collection) \
             and upload the files again",
            others.join(", ")
        ));
    }
    Ok(indexed
        .iter()
        .filter(|(model, _)| model.is_none())
        .map(|(_, count)| count)
        .sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BGE: &str = "bge-small-en-v1.5";
    const MINILM: &str = "all-MiniLM-L6-v2";

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
            embedded_model_to_load(Some(MINILM), &bge),
            Ok(LocalEmbeddingModel::AllMiniLmL6V2)
        );
        let error = embedded_model_to_load(Some("bge-large"), &bge).unwrap_err();
        assert!(error.starts_with("knowledge.embedding_model: "), "{error}");
    }

    #[test]
    fn without_a_name_the_index_keeps_its_model_and_a_new_one_gets_the_default() {
        assert_eq!(
            embedded_model_to_load(None, &indexed(&[(Some(BGE), 3)])),
            Ok(LocalEmbeddingModel::BgeSmallEnV15)
        );
        // Files from before models were recorded were all-MiniLM-L6-v2's.
        assert_eq!(
            embedded_model_to_load(None, &indexed(&[(None, 2), (Some(MINILM), 1)])),
            Ok(LocalEmbeddingModel::AllMiniLmL6V2)
        );
        assert_eq!(
            embedded_model_to_load(None, &[]),
            Ok(DEFAULT_EMBEDDED_MODEL)
        );
        // A remote model's index, or a mixed one: the default, which the check refuses.
        assert_eq!(
            embedded_model_to_load(None, &indexed(&[(Some("text-embedding-3-small"), 1)])),
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
