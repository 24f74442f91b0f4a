//! Locating a model's files inside an unpacked package, and reading its tokenizer.

use std::path::{Path, PathBuf};

use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use crate::LoadError;

/// The files a sentence encoder is loaded from.
pub(crate) const CONFIG_FILE: &str = "config.json";
pub(crate) const TOKENIZER_FILE: &str = "tokenizer.json";
pub(crate) const WEIGHTS_FILE: &str = "model.safetensors";
/// The quantized model file of an ONNX package.
pub(crate) const ONNX_FILE: &str = "model.onnx";

/// A directory's name in lower case with `-` as `_` (packages name model folders either way).
pub(crate) fn normalized_name(dir: &Path) -> Option<String> {
    let name = dir.file_name()?.to_str()?;
    Some(name.to_ascii_lowercase().replace('-', "_"))
}

/// `dir` itself, or the first directory below it (in name order, depth first), that
/// `holds_model` accepts.
pub(crate) fn find_dir(dir: &Path, holds_model: &dyn Fn(&Path) -> bool) -> Option<PathBuf> {
    if holds_model(dir) {
        return Some(dir.to_path_buf());
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    subdirs.sort();
    subdirs.iter().find_map(|sub| find_dir(sub, holds_model))
}

pub(crate) fn file_error(path: &Path, message: impl ToString) -> LoadError {
    LoadError::File {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

/// The model directory's tokenizer, padding each batch to its longest input (packages pad
/// every input to a fixed length, which gives the same results for more work) and reading
/// at most `max_tokens` of each.
pub(crate) fn batch_tokenizer(dir: &Path, max_tokens: usize) -> Result<Tokenizer, LoadError> {
    let path = dir.join(TOKENIZER_FILE);
    let mut tokenizer = Tokenizer::from_file(&path).map_err(|e| file_error(&path, e))?;
    let padding = tokenizer.get_padding().cloned().unwrap_or_default();
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        ..padding
    }));
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max_tokens,
            ..TruncationParams::default()
        }))
        .map_err(|e| file_error(&path, e))?;
    Ok(tokenizer)
}

/// Other packages (a chat model's) may carry a `config.json` too.
pub(crate) fn is_bert(config: &Path) -> bool {
    read_config(config)
        .and_then(|json| json.get("model_type")?.as_str().map(|t| t == "bert"))
        .unwrap_or(false)
}

/// A model's `config.json`, if it is there and is JSON.
pub(crate) fn read_config(path: &Path) -> Option<serde_json::Value> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}
