//! A sentence embedding model's weights, as this crate runs them, written out as a Hugging
//! Face checkpoint (`config.json`, `model.safetensors` and the tokenizer's files): how a
//! benchmark hands another framework (sentence-transformers on PyTorch) the very weights the
//! encoder runs, where the package ships them only as an 8-bit ONNX file (dequantized here
//! as on load).

use std::path::Path;

use crate::{
    LoadError, LocalEmbeddingModel,
    catalog::WeightsFile,
    files::{CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE, file_error},
    onnx::dequantize_bert,
};

/// Files copied beside the weights where the model's folder has them: the tokenizer's
/// settings and vocabulary, which Hugging Face's loaders read alongside `tokenizer.json`.
const TOKENIZER_EXTRAS: [&str; 3] = [
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
];

fn copy(from: &Path, to: &Path, name: &str) -> Result<(), LoadError> {
    std::fs::copy(from.join(name), to.join(name)).map_err(|e| file_error(&from.join(name), e))?;
    Ok(())
}

impl LocalEmbeddingModel {
    /// Writes this model, found in `dir` (see [`Self::find`]), into the folder `out` as a
    /// Hugging Face BERT checkpoint in `f32`: the `safetensors` file as it is, or the ONNX
    /// file's weights dequantized exactly as the encoder loads them. `out` must exist.
    pub fn write_checkpoint(self, dir: &Path, out: &Path) -> Result<(), LoadError> {
        let weights = self
            .weights_in(dir)
            .ok_or_else(|| LoadError::NotFound(dir.to_path_buf()))?;
        match weights {
            WeightsFile::Safetensors(_) => copy(dir, out, WEIGHTS_FILE)?,
            WeightsFile::Onnx(path) => {
                let bytes = std::fs::read(&path).map_err(|e| file_error(&path, e))?;
                let model = dequantize_bert(&bytes).map_err(|e| file_error(&path, e))?;
                let target = out.join(WEIGHTS_FILE);
                candle_core::safetensors::save(&model.tensors, &target)
                    .map_err(|e| file_error(&target, e))?;
            }
        }
        copy(dir, out, CONFIG_FILE)?;
        copy(dir, out, TOKENIZER_FILE)?;
        for name in TOKENIZER_EXTRAS {
            if dir.join(name).is_file() {
                copy(dir, out, name)?;
            }
        }
        Ok(())
    }
}
