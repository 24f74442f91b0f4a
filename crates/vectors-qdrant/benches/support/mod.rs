//! What this crate's benchmarks share: where `just models` keeps the local models.

use std::path::PathBuf;

/// `TESSERA_MODELS_DIR`, else `~/.cache/tessera-models` (where `just models` unpacks them).
pub fn models_root() -> PathBuf {
    std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/tessera-models")
        },
        PathBuf::from,
    )
}
