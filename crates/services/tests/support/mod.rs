//! What the service-graph tests share.

use std::path::PathBuf;

/// The models folder `just models` fills (`TESSERA_MODELS_DIR`, else
/// `~/.cache/tessera-models`), as the API tests find it.
pub fn models_root() -> PathBuf {
    std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tessera-models"),
        PathBuf::from,
    )
}
