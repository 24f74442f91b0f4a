//! Where each generation of the vector index lives (decision 0052): generation 0 where the
//! settings say, later ones beside it under names of their own; and each generation opened
//! there.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use tessera_knowledge::VectorIndex;
use tessera_setup::config::Settings;
use tessera_vectors_qdrant::{EdgeVectorIndex, QdrantServerIndex};

use crate::ServicesError;

/// The folder of generation `number` of the embedded index: `base` itself for generation 0
/// (the index of before generations), else a sibling named after it.
pub(crate) fn dir_of_generation(base: &Path, number: u32) -> PathBuf {
    if number == 0 {
        return base.to_path_buf();
    }
    let name = base
        .file_name()
        .map_or_else(|| "vectors".into(), |name| name.to_string_lossy());
    base.with_file_name(format!("{name}.generation-{number}"))
}

/// The Qdrant collection of generation `number`: `base` for generation 0, else named after
/// it.
pub(crate) fn collection_of_generation(base: &str, number: u32) -> String {
    if number == 0 {
        base.to_owned()
    } else {
        format!("{base}-generation-{number}")
    }
}

/// Where generation `number` of the index is: a collection or a folder.
pub(crate) fn index_location(settings: &Settings, number: u32) -> String {
    let knowledge = &settings.knowledge;
    match &knowledge.qdrant_url {
        Some(url) => format!(
            "collection {} of {url}",
            collection_of_generation(&knowledge.qdrant_collection, number)
        ),
        None => dir_of_generation(&vectors_dir(settings), number)
            .display()
            .to_string(),
    }
}

fn vectors_dir(settings: &Settings) -> PathBuf {
    (settings.knowledge.vectors_dir.clone()).unwrap_or_else(|| settings.data_dir.join("vectors"))
}

/// Generation `number` of the index: in the Qdrant collection of `knowledge.qdrant_url`
/// (shared by every replica), else in the embedded shard in `knowledge.vectors_dir` (one
/// process only); generations after the first beside them, under names of their own.
pub(crate) async fn vector_index(
    settings: &Settings,
    dimensions: usize,
    number: u32,
) -> Result<Arc<dyn VectorIndex>, ServicesError> {
    let knowledge = &settings.knowledge;
    if let Some(url) = &knowledge.qdrant_url {
        let collection = &collection_of_generation(&knowledge.qdrant_collection, number);
        let api_key = knowledge.qdrant_api_key.as_ref().map(|key| key.expose());
        let index = QdrantServerIndex::connect(url, api_key, collection, dimensions)
            .await
            .map_err(|e| ServicesError::Knowledge(format!("knowledge.qdrant_url ({url}): {e}")))?;
        tracing::info!(%url, %collection, dimensions, "vector index on a Qdrant server");
        return Ok(Arc::new(index));
    }
    let vectors_dir = dir_of_generation(&vectors_dir(settings), number);
    let index = EdgeVectorIndex::open(&vectors_dir, dimensions)
        .await
        .map_err(|e| {
            ServicesError::Knowledge(format!(
                "knowledge.vectors_dir ({}): {e}",
                vectors_dir.display()
            ))
        })?;
    Ok(Arc::new(index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_zero_is_the_configured_place_and_later_ones_are_named_beside_it() {
        let base = Path::new("/srv/tessera/vectors");
        assert_eq!(dir_of_generation(base, 0), base);
        assert_eq!(
            dir_of_generation(base, 2),
            Path::new("/srv/tessera/vectors.generation-2")
        );
        assert_eq!(collection_of_generation("tessera", 0), "tessera");
        assert_eq!(
            collection_of_generation("tessera", 1),
            "tessera-generation-1"
        );
    }
}
