//! The llama architecture's forward pass, written for one CPU process: weights kept in the
//! file's own quantization (`matrix`), f32 activations for prompts and 16-bit ones for
//! generated tokens (`int16`), a key/value cache that grows with the conversation, and every
//! matrix product and attention head (`attend`) spread over a dedicated rayon pool. It
//! replaces candle's `quantized_llama`, whose per-operation tensors and 8-bit activations
//! made SmolLM2 both slow and (without f32 down projections) incoherent; the tests hold it
//! to candle's f32 reference.

mod attend;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod blocks;
#[cfg(target_arch = "x86_64")]
mod exp_constants;
#[cfg(target_arch = "x86_64")]
mod horizontal_sums;
mod int16;
mod isa;
mod kernels;
mod matrix;
#[cfg(all(test, feature = "testing"))]
mod tests;

use candle_core::quantized::gguf_file;
use rayon::prelude::*;

use self::{
    attend::{Layout, attend},
    matrix::{Matrix, TOKENS_PER_TASK},
};
use crate::LoadError;
pub use isa::InstructionSet;

/// How many of `shared` cached positions a prompt can reuse and still compute exactly what
/// it would without them: whole groups of [`TOKENS_PER_TASK`] positions from the start
/// (a prompt's tokens are multiplied in such groups, and a token's sums depend on its place
/// in its group).
pub(crate) fn reusable_positions(shared: usize) -> usize {
    shared / TOKENS_PER_TASK * TOKENS_PER_TASK
}

/// Shape and constants of the model, from the GGUF metadata.
#[derive(Debug, Clone, Copy)]
struct Config {
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    embedding: usize,
    rms_epsilon: f32,
    rope_base: f32,
}

impl Config {
    fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim
    }
}

struct Layer {
    attention_norm: Vec<f32>,
    query: Matrix,
    key: Matrix,
    value: Matrix,
    attention_output: Matrix,
    ffn_norm: Vec<f32>,
    gate: Matrix,
    up: Matrix,
    down: Matrix,
}

/// Keys and values of every position seen so far, `positions × kv_dim` each.
#[derive(Default, Clone)]
struct LayerCache {
    keys: Vec<f32>,
    values: Vec<f32>,
}

/// One sequence's keys and values in every layer: the model's working cache, and what
/// prefix reuse (`prefix_cache`) keeps of earlier requests.
#[derive(Default)]
pub(crate) struct KvCache {
    layers: Vec<LayerCache>,
    positions: usize,
}

impl KvCache {
    /// Positions held.
    #[cfg(test)]
    pub(crate) fn positions(&self) -> usize {
        self.positions
    }

    /// Memory held by the keys and values (what is allocated, not only what is used).
    pub(crate) fn bytes(&self) -> usize {
        self.layers
            .iter()
            .map(|layer| (layer.keys.capacity() + layer.values.capacity()) * size_of::<f32>())
            .sum()
    }

    /// Frees what a growing cache allocated beyond its positions (up to as much again), so
    /// a kept cache costs what [`Self::bytes`] of its positions says.
    pub(crate) fn shrink_to_fit(&mut self) {
        for layer in &mut self.layers {
            layer.keys.shrink_to_fit();
            layer.values.shrink_to_fit();
        }
    }

    /// A copy of the first `positions` positions (at most all of them).
    pub(crate) fn prefix(&self, positions: usize) -> Self {
        let positions = positions.min(self.positions);
        let layers = self
            .layers
            .iter()
            .map(|layer| {
                let kv = layer.keys.len().checked_div(self.positions).unwrap_or(0);
                LayerCache {
                    keys: layer.keys[..positions * kv].to_vec(),
                    values: layer.values[..positions * kv].to_vec(),
                }
            })
            .collect();
        Self { layers, positions }
    }

    /// A cache of `positions` zeros in `layers` layers of `kv` values per position (tests).
    #[cfg(test)]
    pub(crate) fn zeros(layers: usize, kv: usize, positions: usize) -> Self {
        let layer = LayerCache {
            keys: vec![0.0; kv * positions],
            values: vec![0.0; kv * positions],
        };
        Self {
            layers: vec![layer; layers],
            positions,
        }
    }

    /// Cuts the cache back to `positions` (no-op when it holds fewer).
    pub(crate) fn truncate(&mut self, positions: usize) {
        if positions >= self.positions {
            return;
        }
        for layer in &mut self.layers {
            let kv = layer.keys.len() / self.positions;
            layer.keys.truncate(positions * kv);
            layer.values.truncate(positions * kv);
        }
        self.positions = positions;
    }
}

/// A loaded llama model with its cache and thread pool.
pub(crate) struct Llama {
    config: Config,
    embeddings: Matrix,
    layers: Vec<Layer>,
    output_norm: Vec<f32>,
    /// `None`: the output projection is the embedding matrix (tied weights).
    output: Option<Matrix>,
    cache: KvCache,
    pool: rayon::ThreadPool,
    /// The kernels every product and attention head runs.
    isa: InstructionSet,
}

impl Llama {
    /// Reads the model's tensors from a GGUF file whose metadata is `content`.
    pub(crate) fn load<R: std::io::Read + std::io::Seek>(
        content: &gguf_file::Content,
        reader: &mut R,
        threads: usize,
        isa: InstructionSet,
    ) -> Result<Self, LoadError> {
        let architecture = content
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        if architecture != "llama" {
            return Err(LoadError::Unsupported(format!(
                "architecture `{architecture}` (only llama)"
            )));
        }
        let number = |key: &str| -> Result<usize, LoadError> {
            content
                .metadata
                .get(&format!("llama.{key}"))
                .and_then(|v| v.to_u32().ok())
                .map(|v| v as usize)
                .ok_or_else(|| LoadError::Metadata(format!("no llama.{key}")))
        };
        let heads = number("attention.head_count")?;
        let embedding = number("embedding_length")?;
        let head_dim = embedding / heads.max(1);
        let config = Config {
            heads,
            kv_heads: number("attention.head_count_kv")?,
            head_dim,
            embedding,
            rms_epsilon: content
                .metadata
                .get("llama.attention.layer_norm_rms_epsilon")
                .and_then(|v| v.to_f32().ok())
                .ok_or_else(|| LoadError::Metadata("no rms epsilon".into()))?,
            rope_base: content
                .metadata
                .get("llama.rope.freq_base")
                .and_then(|v| v.to_f32().ok())
                .unwrap_or(10_000.0),
        };
        if heads == 0
            || config.kv_heads == 0
            || heads % config.kv_heads != 0
            || head_dim * heads != embedding
            || head_dim % 2 != 0
            || number("rope.dimension_count").unwrap_or(head_dim) != head_dim
        {
            return Err(LoadError::Unsupported(format!(
                "attention shape: {heads} heads, {} key/value heads, {embedding} dimensions",
                config.kv_heads
            )));
        }
        if content
            .tensor_infos
            .contains_key("blk.0.ffn_gate_inp.weight")
        {
            return Err(LoadError::Unsupported("mixture of experts".into()));
        }

        let mut read = |name: &str| content.tensor(reader, name, &candle_core::Device::Cpu);
        let embeddings = Matrix::from_qtensor(&read("token_embd.weight")?)?;
        let output = match content.tensor_infos.contains_key("output.weight") {
            true => Some(Matrix::from_qtensor(&read("output.weight")?)?),
            false => None,
        };
        let output_norm = vector(read("output_norm.weight")?)?;
        let mut layers = Vec::new();
        for index in 0..number("block_count")? {
            let attention_norm = vector(read(&format!("blk.{index}.attn_norm.weight"))?)?;
            let ffn_norm = vector(read(&format!("blk.{index}.ffn_norm.weight"))?)?;
            let mut matrix = |part: &str| -> Result<Matrix, LoadError> {
                Ok(Matrix::from_qtensor(&read(&format!(
                    "blk.{index}.{part}.weight"
                ))?)?)
            };
            let layer = Layer {
                query: matrix("attn_q")?,
                key: matrix("attn_k")?,
                value: matrix("attn_v")?,
                attention_output: matrix("attn_output")?,
                gate: matrix("ffn_gate")?,
                up: matrix("ffn_up")?,
                down: matrix("ffn_down")?,
                attention_norm,
                ffn_norm,
            };
            layers.push(layer);
        }
        let model = Self {
            config,
            cache: KvCache {
                layers: layers.iter().map(|_| LayerCache::default()).collect(),
                positions: 0,
            },
            embeddings,
            layers,
            output_norm,
            output,
            pool: rayon::ThreadPoolBuilder::new()
                .num_threads(threads.max(1))
                .thread_name(|i| format!("tessera-llm-{i}"))
                .build()
                .map_err(|e| LoadError::Thread(e.to_string()))?,
            isa,
        };
        model.check_shapes()?;
        Ok(model)
    }

    fn check_shapes(&self) -> Result<(), LoadError> {
        let c = &self.config;
        let (d, kv) = (c.embedding, c.kv_dim());
        let ff = self.layers.first().map_or(0, |l| l.gate.rows());
        let mismatch = |what: &str, m: &Matrix, rows: usize, cols: usize| {
            (m.rows() != rows || m.cols() != cols).then(|| {
                LoadError::Metadata(format!(
                    "{what} is {}×{}, expected {rows}×{cols}",
                    m.rows(),
                    m.cols()
                ))
            })
        };
        let vocab = self.embeddings.rows();
        let mut problems = vec![mismatch("token_embd", &self.embeddings, vocab, d)];
        if let Some(output) = &self.output {
            problems.push(mismatch("output", output, vocab, d));
        }
        for layer in &self.layers {
            problems.extend([
                mismatch("attn_q", &layer.query, d, d),
                mismatch("attn_k", &layer.key, kv, d),
                mismatch("attn_v", &layer.value, kv, d),
                mismatch("attn_output", &layer.attention_output, d, d),
                mismatch("ffn_gate", &layer.gate, ff, d),
                mismatch("ffn_up", &layer.up, ff, d),
                mismatch("ffn_down", &layer.down, d, ff),
            ]);
            if layer.attention_norm.len() != d || layer.ffn_norm.len() != d {
                problems.push(Some(LoadError::Metadata(
                    "norm weights of the wrong size".into(),
                )));
            }
        }
        if self.output_norm.len() != d {
            problems.push(Some(LoadError::Metadata(
                "output norm of the wrong size".into(),
            )));
        }
        match problems.into_iter().flatten().next() {
            Some(problem) => Err(problem),
            None => Ok(()),
        }
    }

    /// Takes the working cache out (the model is left with an empty one): to keep it for a
    /// later request that shares its prefix.
    pub(crate) fn take_cache(&mut self) -> KvCache {
        let empty = KvCache {
            layers: self.layers.iter().map(|_| LayerCache::default()).collect(),
            positions: 0,
        };
        std::mem::replace(&mut self.cache, empty)
    }

    /// Makes `cache` the working cache; one of another shape is refused.
    pub(crate) fn set_cache(&mut self, cache: KvCache) -> Result<(), String> {
        let kv = self.config.kv_dim() * cache.positions;
        let fits = cache.layers.len() == self.layers.len()
            && cache
                .layers
                .iter()
                .all(|layer| layer.keys.len() == kv && layer.values.len() == kv);
        if !fits {
            return Err("a saved cache does not fit this model".into());
        }
        self.cache = cache;
        Ok(())
    }

    pub(crate) fn vocabulary(&self) -> usize {
        self.embeddings.rows()
    }

    /// Runs `tokens` at positions `position..`, appending them to the cache (which is cut
    /// back to `position` first: 0 starts a new conversation), and returns the logits of the
    /// last token.
    pub(crate) fn forward(&mut self, tokens: &[u32], position: usize) -> Result<Vec<f32>, String> {
        if position > self.cache.positions {
            return Err(format!(
                "position {position} is past the {} cached positions",
                self.cache.positions
            ));
        }
        if tokens.is_empty() {
            return Err("no tokens to run".into());
        }
        if let Some(token) = tokens.iter().find(|t| **t as usize >= self.vocabulary()) {
            return Err(format!("token {token} is outside the vocabulary"));
        }
        self.cache.truncate(position);
        self.cache.positions = position + tokens.len();
        let Self {
            config,
            embeddings,
            layers,
            output_norm,
            output,
            cache,
            pool,
            isa,
            ..
        } = self;
        let (config, isa) = (*config, *isa);
        pool.install(|| {
            let d = config.embedding;
            let n = tokens.len();
            let mut hidden = vec![0.0; n * d];
            for (token, row) in tokens.iter().zip(hidden.chunks_mut(d)) {
                embeddings.dequantize_row(isa, *token as usize, row);
            }
            let rope = Rope::new(&config, position, n);
            let mut normed = vec![0.0; n * d];
            for (layer, cache) in layers.iter().zip(cache.layers.iter_mut()) {
                rms_norm(
                    &hidden,
                    &layer.attention_norm,
                    config.rms_epsilon,
                    &mut normed,
                );
                let attended = attention(isa, &config, layer, cache, &rope, &normed, position);
                let mut projected = vec![0.0; n * d];
                layer
                    .attention_output
                    .multiply(isa, &attended, &mut projected);
                add(&mut hidden, &projected);

                rms_norm(&hidden, &layer.ffn_norm, config.rms_epsilon, &mut normed);
                let ff = layer.gate.rows();
                let mut gate = vec![0.0; n * ff];
                let mut up = vec![0.0; n * ff];
                layer.gate.multiply(isa, &normed, &mut gate);
                layer.up.multiply(isa, &normed, &mut up);
                for (g, u) in gate.iter_mut().zip(&up) {
                    *g = *g / (1.0 + (-*g).exp()) * u;
                }
                layer.down.multiply(isa, &gate, &mut projected);
                add(&mut hidden, &projected);
            }
            let last = &hidden[(n - 1) * d..];
            let mut normed_last = vec![0.0; d];
            rms_norm(last, output_norm, config.rms_epsilon, &mut normed_last);
            let output = output.as_ref().unwrap_or(embeddings);
            let mut logits = vec![0.0; output.rows()];
            output.multiply(isa, &normed_last, &mut logits);
            Ok(logits)
        })
    }
}

/// A one-dimensional tensor (norm weights) as f32.
fn vector(tensor: candle_core::quantized::QTensor) -> Result<Vec<f32>, LoadError> {
    Ok(tensor
        .dequantize(&candle_core::Device::Cpu)?
        .flatten_all()?
        .to_vec1::<f32>()?)
}

fn add(target: &mut [f32], values: &[f32]) {
    for (t, v) in target.iter_mut().zip(values) {
        *t += v;
    }
}

/// `x / rms(x) × weight` for each row of `x` (rows as long as `weight`).
fn rms_norm(x: &[f32], weight: &[f32], epsilon: f32, out: &mut [f32]) {
    let d = weight.len();
    for (x, out) in x.chunks(d).zip(out.chunks_mut(d)) {
        let mean_square = x.iter().map(|v| v * v).sum::<f32>() / d as f32;
        let scale = 1.0 / (mean_square + epsilon).sqrt();
        for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
            *o = v * scale * w;
        }
    }
}

/// Rotary position embedding angles for the tokens of one forward pass: GGML's "normal"
/// (interleaved) layout, rotating pairs `(2i, 2i + 1)` of each head.
struct Rope {
    /// `tokens × head_dim / 2` (cos, sin) pairs.
    angles: Vec<(f32, f32)>,
    half: usize,
}

impl Rope {
    fn new(config: &Config, position: usize, tokens: usize) -> Self {
        let half = config.head_dim / 2;
        let frequencies: Vec<f32> = (0..half)
            .map(|i| {
                1.0 / config
                    .rope_base
                    .powf((2 * i) as f32 / config.head_dim as f32)
            })
            .collect();
        let angles = (position..position + tokens)
            .flat_map(|p| {
                frequencies.iter().map(move |f| {
                    let angle = p as f32 * f;
                    (angle.cos(), angle.sin())
                })
            })
            .collect();
        Self { angles, half }
    }

    /// Rotates every head of `row` (the vectors of token `t`).
    fn apply(&self, t: usize, row: &mut [f32]) {
        let angles = &self.angles[t * self.half..(t + 1) * self.half];
        for head in row.chunks_mut(2 * self.half) {
            for (pair, (cos, sin)) in head.chunks_exact_mut(2).zip(angles) {
                let (a, b) = (pair[0], pair[1]);
                pair[0] = a * cos - b * sin;
                pair[1] = a * sin + b * cos;
            }
        }
    }
}

/// Self-attention of the `normed` tokens at `position..` over the cache (which they are
/// appended to): causal, grouped-query. Returns `tokens × embedding`, before the output
/// projection.
fn attention(
    isa: InstructionSet,
    config: &Config,
    layer: &Layer,
    cache: &mut LayerCache,
    rope: &Rope,
    normed: &[f32],
    position: usize,
) -> Vec<f32> {
    let (d, kv, hd) = (config.embedding, config.kv_dim(), config.head_dim);
    let n = normed.len() / d;
    let mut queries = vec![0.0; n * d];
    let mut keys = vec![0.0; n * kv];
    let mut values = vec![0.0; n * kv];
    layer.query.multiply(isa, normed, &mut queries);
    layer.key.multiply(isa, normed, &mut keys);
    layer.value.multiply(isa, normed, &mut values);
    for t in 0..n {
        rope.apply(t, &mut queries[t * d..(t + 1) * d]);
        rope.apply(t, &mut keys[t * kv..(t + 1) * kv]);
    }
    cache.keys.extend_from_slice(&keys);
    cache.values.extend_from_slice(&values);

    let group = config.heads / config.kv_heads;
    let scale = 1.0 / (hd as f32).sqrt();
    let (all_keys, all_values) = (&cache.keys, &cache.values);
    let mut out = vec![0.0; n * d];
    // One task per (token, key/value head): its heads' outputs are one slice of `out`, and
    // they read that key/value head's cache together.
    let kv_heads = config.kv_heads;
    out.par_chunks_mut(group * hd)
        .zip(queries.par_chunks(group * hd))
        .enumerate()
        .for_each_init(Vec::new, |scores, (i, (out, queries))| {
            let (t, kv_head) = (i / kv_heads, i % kv_heads);
            let layout = Layout {
                stride: kv,
                offset: kv_head * hd,
                visible: position + t + 1,
            };
            attend(
                isa, queries, hd, all_keys, all_values, layout, scale, scores, out,
            );
        });
    out
}
