//! What the model tests share.

use std::path::PathBuf;

/// The folder `just models` fills (`TESSERA_MODELS_DIR`, else `~/.cache/tessera-models`).
pub fn models_dir() -> PathBuf {
    std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
                .join(".cache/tessera-models")
        },
        PathBuf::from,
    )
}
