//! A BERT encoder forward pass laid out for the CPU: every dense layer is one matrix product
//! over all the batch's tokens, the query, key and value projections are fused into one, the
//! attention scale is folded into the query weights, attention reads the projections in
//! place text by text (`attention.rs`), and each layer norm adds its residual in the same
//! pass (`norm.rs`); every layer writes into the same buffers, made once per batch. In `f32`
//! the result matches the reference BERT to float rounding; the dense layers can instead run
//! on 8-bit weights and activations (`int8`).

use crate::bert_config::{BertConfig, HiddenAct};
use candle_core::{D, DType, Module, Result, Tensor, bail};
use candle_nn::{Embedding, Linear, VarBuilder};

use crate::{
    attention::attention_into,
    cpu::with_values,
    int8::{Activation, Int8Linear},
    norm::LayerNorm,
    precision::DenseKernel,
};

/// A dense layer in `f32`, or with 8-bit weights, and the activation that follows it.
struct Dense {
    product: Product,
    /// Applied after the product (an activation the 8-bit kernel fuses is not repeated here).
    activation: Option<HiddenAct>,
}

enum Product {
    F32(Linear),
    Int8(Int8Linear),
}

impl Dense {
    fn new(linear: Linear, kernel: DenseKernel, activation: Option<HiddenAct>) -> Result<Self> {
        Ok(match (kernel, linear.bias()) {
            (DenseKernel::Int8 { accelerated }, Some(bias)) => {
                // The 8-bit kernel applies BERT's GELU as it writes each tile.
                let (fused, activation) = match activation {
                    Some(HiddenAct::Gelu) => (Activation::Gelu, None),
                    other => (Activation::None, other),
                };
                let product = Int8Linear::new(linear.weight(), bias, fused, accelerated)?;
                Self {
                    product: Product::Int8(product),
                    activation,
                }
            }
            _ => Self {
                product: Product::F32(linear),
                activation,
            },
        })
    }

    /// Rows of `depth` values in `x` → the same number of rows of this layer's outputs in
    /// `out`. The 8-bit product (with its fused activation) writes `out` directly; other
    /// layers go through candle, and their result is copied.
    fn forward_into(&self, x: &[f32], depth: usize, out: &mut [f32]) -> Result<()> {
        if let (Product::Int8(linear), None) = (&self.product, self.activation) {
            return linear.forward_into(x, out);
        }
        let rows = x.len() / depth.max(1);
        let x = Tensor::from_slice(x, (rows, depth), &candle_core::Device::Cpu)?;
        let y = match &self.product {
            Product::F32(linear) => linear.forward(&x)?,
            Product::Int8(linear) => linear.forward(&x)?,
        };
        let y = match self.activation {
            None => y,
            Some(HiddenAct::Gelu) => y.gelu_erf()?,
            Some(HiddenAct::GeluApproximate) => y.gelu()?,
            Some(HiddenAct::Relu) => y.relu()?,
        };
        with_values(&y, |y| {
            if y.len() != out.len() {
                bail!("{} outputs for a buffer of {}", y.len(), out.len());
            }
            out.copy_from_slice(y);
            Ok(())
        })?
    }
}

struct EncoderLayer {
    /// Query (pre-scaled), key and value projections as one `(3·hidden, hidden)` layer.
    qkv: Dense,
    attention_output: Dense,
    attention_norm: LayerNorm,
    intermediate: Dense,
    output: Dense,
    output_norm: LayerNorm,
}

impl EncoderLayer {
    fn load(vb: &VarBuilder, config: &BertConfig, kernel: DenseKernel) -> Result<Self> {
        let hidden = config.hidden_size;
        let head = hidden / config.num_attention_heads;
        let attention = vb.pp("attention");
        let projection = |name: &str| -> Result<(Tensor, Tensor)> {
            let vb = attention.pp("self").pp(name);
            Ok((vb.get((hidden, hidden), "weight")?, vb.get(hidden, "bias")?))
        };
        // softmax(q·kᵀ/√d): scaling q's weights and bias once saves a pass over every score.
        let scale = 1.0 / (head as f64).sqrt();
        let (query_weight, query_bias) = projection("query")?;
        let (key_weight, key_bias) = projection("key")?;
        let (value_weight, value_bias) = projection("value")?;
        let qkv = Linear::new(
            Tensor::cat(&[(query_weight * scale)?, key_weight, value_weight], 0)?,
            Some(Tensor::cat(
                &[(query_bias * scale)?, key_bias, value_bias],
                0,
            )?),
        );
        let eps = config.layer_norm_eps;
        let attention_output = attention.pp("output");
        let output = vb.pp("output");
        let dense = |linear| Dense::new(linear, kernel, None);
        Ok(Self {
            qkv: dense(qkv)?,
            attention_output: dense(candle_nn::linear(
                hidden,
                hidden,
                attention_output.pp("dense"),
            )?)?,
            attention_norm: LayerNorm::load(&attention_output, hidden, eps)?,
            intermediate: Dense::new(
                candle_nn::linear(
                    hidden,
                    config.intermediate_size,
                    vb.pp("intermediate").pp("dense"),
                )?,
                kernel,
                Some(config.hidden_act),
            )?,
            output: dense(candle_nn::linear(
                config.intermediate_size,
                hidden,
                output.pp("dense"),
            )?)?,
            output_norm: LayerNorm::load(&output, hidden, eps)?,
        })
    }
}

/// The encoder of a BERT model (no pooler: sentence vectors come from mean pooling).
pub(crate) struct BertEncoder {
    word_embeddings: Embedding,
    /// Position embeddings with the first token type's embedding already added.
    position_embeddings: Tensor,
    /// The second token type's embedding less the first's (sentence pairs), if the model
    /// has two.
    second_type: Option<Tensor>,
    embedding_norm: LayerNorm,
    layers: Vec<EncoderLayer>,
    heads: usize,
    hidden_size: usize,
    intermediate_size: usize,
}

impl BertEncoder {
    pub(crate) fn load(vb: VarBuilder, config: &BertConfig, kernel: DenseKernel) -> Result<Self> {
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            candle_core::bail!("hidden_size is not a multiple of num_attention_heads");
        }
        // Checkpoints name their tensors with or without the architecture's prefix.
        let vb = match &config.model_type {
            Some(prefix)
                if vb.contains_tensor(&format!("{prefix}.embeddings.word_embeddings.weight")) =>
            {
                vb.pp(prefix)
            }
            _ => vb,
        };
        let hidden = config.hidden_size;
        let embeddings = vb.pp("embeddings");
        let word_embeddings =
            candle_nn::embedding(config.vocab_size, hidden, embeddings.pp("word_embeddings"))?;
        let positions = embeddings.get(
            (config.max_position_embeddings, hidden),
            "position_embeddings.weight",
        )?;
        let token_types = embeddings.get(
            (config.type_vocab_size, hidden),
            "token_type_embeddings.weight",
        )?;
        let position_embeddings = positions.broadcast_add(&token_types.get(0)?)?;
        let second_type = if config.type_vocab_size > 1 {
            Some((token_types.get(1)? - token_types.get(0)?)?)
        } else {
            None
        };
        let embedding_norm = LayerNorm::load(&embeddings, hidden, config.layer_norm_eps)?;
        let encoder = vb.pp("encoder").pp("layer");
        let layers = (0..config.num_hidden_layers)
            .map(|i| EncoderLayer::load(&encoder.pp(i), config, kernel))
            .collect::<Result<_>>()?;
        Ok(Self {
            word_embeddings,
            position_embeddings,
            second_type,
            embedding_norm,
            layers,
            heads: config.num_attention_heads,
            hidden_size: hidden,
            intermediate_size: config.intermediate_size,
        })
    }

    /// Hidden states `(batch, width, hidden)` of token ids `(batch, width)`; `mask` is 1 for
    /// real tokens and 0 for padding; `types` (sentence pairs) is 1 for the second
    /// sentence's tokens, else every token is of the first type.
    pub(crate) fn forward(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        types: Option<&Tensor>,
    ) -> Result<Tensor> {
        let (batch, width) = ids.dims2()?;
        let hidden = self.hidden_size;
        let mut x = self
            .word_embeddings
            .forward(ids)?
            .broadcast_add(&self.position_embeddings.narrow(0, 0, width)?)?;
        if let Some(types) = types {
            let second = self
                .second_type
                .as_ref()
                .ok_or_else(|| candle_core::Error::Msg("the model has one token type".into()))?;
            let types = types.to_dtype(DType::F32)?.unsqueeze(2)?;
            x = (x + types.broadcast_mul(second)?)?;
        }
        let x = self
            .embedding_norm
            .forward(&x.reshape((batch * width, hidden))?, None)?;
        let key_mask: Vec<bool> = (mask.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?)
            .iter()
            .map(|&m| m != 0.0)
            .collect();
        // Each text's real tokens, which attend to each other only.
        let lengths: Vec<usize> = key_mask
            .chunks(width.max(1))
            .map(|row| row.iter().filter(|&&real| real).count())
            .collect();
        if lengths.iter().all(|&length| length == 0) {
            // Padding only (a tokenizer always adds [CLS], so never in practice): no token
            // to attend to, and callers read no padding.
            return Tensor::zeros((batch, width, hidden), DType::F32, ids.device());
        }
        let packing = Packing::of(&key_mask)?;
        let x = packing.pack(&x)?;
        let rows = x.dim(0)?;
        // Every layer writes into the same buffers: made (and zeroed) once per batch, not
        // once per layer.
        let mut x = x.flatten_all()?.to_vec1::<f32>()?;
        let mut qkv = vec![0f32; rows * 3 * hidden];
        let mut context = vec![0f32; rows * hidden];
        let mut projected = vec![0f32; rows * hidden];
        let mut attended = vec![0f32; rows * hidden];
        let mut inner = vec![0f32; rows * self.intermediate_size];
        for layer in &self.layers {
            layer.qkv.forward_into(&x, hidden, &mut qkv)?;
            attention_into(&qkv, &lengths, self.heads, &mut context)?;
            layer
                .attention_output
                .forward_into(&context, hidden, &mut projected)?;
            layer
                .attention_norm
                .forward_into(&projected, Some(&x), &mut attended)?;
            layer
                .intermediate
                .forward_into(&attended, hidden, &mut inner)?;
            layer
                .output
                .forward_into(&inner, self.intermediate_size, &mut projected)?;
            layer
                .output_norm
                .forward_into(&projected, Some(&attended), &mut x)?;
        }
        let x = Tensor::from_vec(x, (rows, hidden), ids.device())?;
        packing
            .unpack_with_zeros(&x)?
            .reshape((batch, width, hidden))
    }
}

/// Which rows of a padded batch's `(batch · width, features)` layout are real tokens: the
/// whole forward pass runs on the real tokens only (the dense layers and layer norms row by
/// row, attention text by text), so batches of texts of different lengths (the chunks of
/// many files) pay nothing for their padding but a copy in and a copy out.
enum Packing {
    /// No padding: every layout is the padded one.
    None,
    Padded {
        /// The padded row of each real token, in order.
        real: Tensor,
        /// The packed row each padded row reads: its own for a real token, the row after
        /// the last real one (zeros) for padding.
        padded_zeroed: Tensor,
    },
}

impl Packing {
    fn of(key_mask: &[bool]) -> Result<Self> {
        let count = key_mask.iter().filter(|&&real| real).count();
        if count == key_mask.len() || count == 0 {
            return Ok(Self::None);
        }
        let mut real = Vec::with_capacity(count);
        let mut padded_zeroed = Vec::with_capacity(key_mask.len());
        let zero_row = u32::try_from(count).map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        for (row, &is_real) in key_mask.iter().enumerate() {
            if is_real {
                let packed = u32::try_from(real.len()).unwrap_or(u32::MAX);
                real.push(u32::try_from(row).unwrap_or(u32::MAX));
                padded_zeroed.push(packed);
            } else {
                padded_zeroed.push(zero_row);
            }
        }
        let device = &candle_core::Device::Cpu;
        Ok(Self::Padded {
            real: Tensor::from_vec(real, count, device)?,
            padded_zeroed: Tensor::from_vec(padded_zeroed, key_mask.len(), device)?,
        })
    }

    /// The real tokens' rows of a padded layout.
    fn pack(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Self::None => Ok(x.clone()),
            Self::Padded { real, .. } => x.index_select(real, 0),
        }
    }

    /// The padded layout of packed rows, padding filled with zeros (what callers see).
    fn unpack_with_zeros(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Self::None => Ok(x.clone()),
            Self::Padded { padded_zeroed, .. } => {
                let zeros = Tensor::zeros((1, x.dim(1)?), x.dtype(), x.device())?;
                Tensor::cat(&[x, &zeros], 0)?.index_select(padded_zeroed, 0)
            }
        }
    }
}

/// Mean over the real tokens of each row of `hidden` `(batch, width, dims)`, then scaled to
/// unit length.
pub(crate) fn mean_pool_normalized(hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let counts = mask.sum(1)?.maximum(1e-9)?;
    let mean = summed.broadcast_div(&counts)?;
    let norms = mean.sqr()?.sum_keepdim(D::Minus1)?.sqrt()?.maximum(1e-12)?;
    mean.broadcast_div(&norms)
}

/// The first token's (`[CLS]`) state of each row of `hidden` `(batch, width, dims)`, scaled
/// to unit length.
pub(crate) fn first_token_normalized(hidden: &Tensor) -> Result<Tensor> {
    let first = hidden.narrow(1, 0, 1)?.squeeze(1)?;
    let norms = first
        .sqr()?
        .sum_keepdim(D::Minus1)?
        .sqrt()?
        .maximum(1e-12)?;
    first.broadcast_div(&norms)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use candle_core::Device;
    use candle_transformers::models::bert::{BertModel, Config};

    use super::*;
    use crate::files::{CONFIG_FILE, WEIGHTS_FILE};

    /// The largest difference between the reference BERT of candle-transformers and this
    /// encoder over every hidden state of a padded batch, at the real tokens, with these
    /// token types (`None`: all of the first type).
    fn largest_difference_from_the_reference(types: Option<[[u32; 7]; 2]>) -> f32 {
        let root = std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
            || {
                std::path::PathBuf::from(std::env::var_os("HOME").unwrap())
                    .join(".cache/tessera-models")
            },
            std::path::PathBuf::from,
        );
        let dir = crate::find_model_dir(&root)
            .expect("all-MiniLM-L6-v2 under the models folder: run `just models`");
        let file = std::fs::read(dir.join(CONFIG_FILE)).unwrap();
        let config: BertConfig = serde_json::from_slice(&file).unwrap();
        let reference_config: Config = serde_json::from_slice(&file).unwrap();
        let bytes = std::fs::read(dir.join(WEIGHTS_FILE)).unwrap();
        let weights =
            VarBuilder::from_buffered_safetensors(bytes, DType::F32, &Device::Cpu).unwrap();
        let reference = BertModel::load(weights.clone(), &reference_config).unwrap();
        let encoder = BertEncoder::load(weights, &config, DenseKernel::F32).unwrap();

        // Two rows: 7 real tokens, and 4 real tokens then 3 of padding.
        let ids = Tensor::new(
            &[
                [101u32, 7592, 2088, 2003, 1037, 3231, 102],
                [101, 2748, 3231, 102, 0, 0, 0],
            ],
            &Device::Cpu,
        )
        .unwrap();
        let mask = Tensor::new(
            &[[1u32, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0]],
            &Device::Cpu,
        )
        .unwrap();
        let type_ids = types.map(|types| Tensor::new(&types, &Device::Cpu).unwrap());
        let expected = reference
            .forward(
                &ids,
                type_ids.as_ref().unwrap_or(&ids.zeros_like().unwrap()),
                Some(&mask),
            )
            .unwrap()
            .to_vec3::<f32>()
            .unwrap();
        let actual = encoder
            .forward(&ids, &mask, type_ids.as_ref())
            .unwrap()
            .to_vec3::<f32>()
            .unwrap();
        let real = [7, 4];
        let mut largest = 0f32;
        for (row, &length) in real.iter().enumerate() {
            for token in 0..length {
                for (a, e) in actual[row][token].iter().zip(&expected[row][token]) {
                    largest = largest.max((a - e).abs());
                }
            }
        }
        largest
    }

    #[test]
    fn hidden_states_match_the_reference_bert() {
        let largest = largest_difference_from_the_reference(None);
        assert!(largest < 1e-4, "largest difference {largest}");
    }

    /// Sentence pairs (a cross-encoder's input): the second sentence's tokens are of type 1.
    #[test]
    fn hidden_states_of_sentence_pairs_match_the_reference_bert() {
        let largest = largest_difference_from_the_reference(Some([
            [0, 0, 0, 1, 1, 1, 1],
            [0, 0, 1, 1, 0, 0, 0],
        ]));
        assert!(largest < 1e-4, "largest difference {largest}");
    }

    #[test]
    fn packing_keeps_the_real_rows_and_gives_padding_zeros() {
        // Rows 0..6 of a padded layout: rows 2 and 5 are padding.
        let mask = [true, true, false, true, true, false];
        let padded = Tensor::arange(0f32, 12., &Device::Cpu)
            .unwrap()
            .reshape((6, 2))
            .unwrap();
        let packing = Packing::of(&mask).unwrap();
        let packed = packing.pack(&padded).unwrap();
        assert_eq!(
            packed.to_vec2::<f32>().unwrap(),
            [[0., 1.], [2., 3.], [6., 7.], [8., 9.]]
        );
        let back = packing.unpack_with_zeros(&packed).unwrap();
        assert_eq!(
            back.to_vec2::<f32>().unwrap(),
            [[0., 1.], [2., 3.], [0., 0.], [6., 7.], [8., 9.], [0., 0.]]
        );
        // Without padding, nothing moves.
        let none = Packing::of(&[true; 6]).unwrap();
        assert!(matches!(none, Packing::None));
    }
}
