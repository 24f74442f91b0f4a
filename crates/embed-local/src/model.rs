//! The sentence encoder itself: tokenizer, BERT forward pass, pooling (the mean of the
//! tokens' states, or the first token's, as the model was trained), normalisation.

use std::path::Path;

use crate::bert_config::BertConfig;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use tokenizers::Tokenizer;

use crate::{
    LoadError, LocalEmbeddingModel,
    bert::{BertEncoder, first_token_normalized, mean_pool_normalized},
    catalog::{Pooling, WeightsFile},
    files::{CONFIG_FILE, batch_tokenizer, file_error},
    onnx::dequantize_bert,
    precision::DenseKernel,
};

/// A BERT sentence encoder on the CPU.
pub(crate) struct SentenceEncoder {
    encoder: BertEncoder,
    tokenizer: Tokenizer,
    dimensions: usize,
    pooling: Pooling,
}

impl SentenceEncoder {
    /// Loads `model` from a directory holding its config, tokenizer and weights.
    /// `max_tokens` caps what is read of each text.
    pub(crate) fn load(
        dir: &Path,
        model: LocalEmbeddingModel,
        max_tokens: usize,
        kernel: DenseKernel,
    ) -> Result<Self, LoadError> {
        let weights = model
            .weights_in(dir)
            .ok_or_else(|| LoadError::NotFound(dir.to_path_buf()))?;
        let config_path = dir.join(CONFIG_FILE);
        let config = std::fs::read(&config_path).map_err(|e| file_error(&config_path, e))?;
        let config: BertConfig =
            serde_json::from_slice(&config).map_err(|e| file_error(&config_path, e))?;
        // The packaged tokenizer pads every text to 128 tokens and cuts it there; the
        // sentence-transformers setting reads up to 256 tokens.
        let tokenizer = batch_tokenizer(dir, max_tokens.min(config.max_position_embeddings))?;
        // Read, not memory-mapped: the workspace forbids `unsafe`, and 90 MB read once at
        // start-up costs well under a second.
        let weights = match weights {
            WeightsFile::Safetensors(path) => {
                let bytes = std::fs::read(&path).map_err(|e| file_error(&path, e))?;
                VarBuilder::from_buffered_safetensors(bytes, DType::F32, &Device::Cpu)
                    .map_err(|e| file_error(&path, e))?
            }
            WeightsFile::Onnx(path) => {
                let bytes = std::fs::read(&path).map_err(|e| file_error(&path, e))?;
                let model = dequantize_bert(&bytes).map_err(|e| file_error(&path, e))?;
                VarBuilder::from_tensors(model.tensors, DType::F32, &Device::Cpu)
            }
        };
        let encoder = BertEncoder::load(weights, &config, kernel)
            .map_err(|e| LoadError::Model(e.to_string()))?;
        Ok(Self {
            encoder,
            tokenizer,
            dimensions: config.hidden_size,
            pooling: model.pooling(),
        })
    }

    pub(crate) fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// The tokenizer as the encoder uses it (truncated to what the model reads).
    pub(crate) fn tokenizer(&self) -> Tokenizer {
        let mut tokenizer = self.tokenizer.clone();
        tokenizer.with_padding(None);
        tokenizer
    }

    /// Unit-length vectors for one batch of texts, in order.
    pub(crate) fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| format!("tokenizer: {e}"))?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        for encoding in &encodings {
            ids.extend_from_slice(encoding.get_ids());
            mask.extend_from_slice(encoding.get_attention_mask());
        }
        self.forward(ids, mask, rows, width)
            .map_err(|e| format!("model: {e}"))
    }

    fn forward(
        &self,
        ids: Vec<u32>,
        mask: Vec<u32>,
        rows: usize,
        width: usize,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let device = &Device::Cpu;
        let ids = Tensor::from_vec(ids, (rows, width), device)?;
        let mask = Tensor::from_vec(mask, (rows, width), device)?;
        let hidden = self.encoder.forward(&ids, &mask, None)?;
        match self.pooling {
            Pooling::Mean => mean_pool_normalized(&hidden, &mask)?,
            Pooling::First => first_token_normalized(&hidden)?,
        }
        .to_vec2::<f32>()
    }
}
