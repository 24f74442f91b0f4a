//! Why a model could not be loaded.

use std::path::PathBuf;

/// The model directory is missing a file, or a file is not what a BERT encoder needs.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "no sentence-embedding model (config.json, tokenizer.json, model.safetensors) under {0}"
    )]
    NotFound(PathBuf),
    #[error("cannot read {path}: {message}")]
    File { path: PathBuf, message: String },
    #[error("the model cannot be loaded: {0}")]
    Model(String),
    #[error("cannot start the embedding thread: {0}")]
    Thread(String),
}
