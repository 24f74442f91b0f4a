//! Locating model files in a models folder (as `just models` fills it: wheels unpacked into
//! sub-folders).

use std::path::{Path, PathBuf};

/// The first file called `name` in `dir` or below it (depth-first, sorted, so the answer is
/// stable).
pub fn find_model_file(dir: &Path, name: &str) -> Option<PathBuf> {
    let direct = dir.join(name);
    if direct.is_file() {
        return Some(direct);
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    entries.sort();
    entries.iter().find_map(|sub| find_model_file(sub, name))
}
