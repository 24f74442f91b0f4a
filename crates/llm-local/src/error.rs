//! Why the embedded engine could not load a model, named apart from the engine so that its
//! parts (the tokenizer, the model, the grammar constraint) can say it.

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read the model file: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot load the model: {0}")]
    Model(#[from] candle_core::Error),
    #[error("invalid model metadata: {0}")]
    Metadata(String),
    #[error("cannot build the tokenizer: {0}")]
    Tokenizer(String),
    #[error("unsupported model: {0}")]
    Unsupported(String),
    #[error("cannot start the inference thread: {0}")]
    Thread(String),
}
