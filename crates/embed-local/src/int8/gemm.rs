//! The packed weight layout and the product of one tile: rows of activations in tiles of
//! `MR`, weights in panels of `NR` features, each tile × panel summed by a kernel (VNNI,
//! AVX2 or portable), then scaled back to `f32` with the bias (and GELU, for the
//! feed-forward layer). The tiles of a product are run by `linear.rs`.

use super::quantize::{Levels, QuantizedWeights, RowScale, quantize_row};
use crate::fastmath::{MulAdd, gelu};

/// Rows of activations per tile.
pub(crate) const MR: usize = 8;
/// Features per panel: three vectors of 16 `i32` sums.
pub(crate) const NR: usize = 48;

/// What is applied to `x · wᵀ + b` before it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    None,
    /// BERT's GELU (with `erf`).
    Gelu,
}

/// Weights in the kernels' order: for each panel of `NR` features, for each group of four
/// depths, the four bytes of each feature in turn (`NR × 4` bytes per group). Depth is
/// padded to a multiple of 4 and features to a multiple of `NR`, with zeros.
pub(crate) struct PackedWeights {
    pub(crate) features: usize,
    pub(crate) depth: usize,
    /// `depth` rounded up to a multiple of 4.
    pub(crate) padded_depth: usize,
    pub(crate) panels: Vec<i8>,
    pub(crate) scales: Vec<f32>,
    pub(crate) sums: Vec<i32>,
    pub(crate) bias: Vec<f32>,
    pub(crate) activation: Activation,
    /// The scheme the weights were quantized with; activations are quantized to match.
    pub(crate) levels: Levels,
}

impl PackedWeights {
    pub(crate) fn new(
        quantized: QuantizedWeights,
        features: usize,
        depth: usize,
        bias: Vec<f32>,
        activation: Activation,
        levels: Levels,
    ) -> Self {
        let padded_depth = depth.div_ceil(4) * 4;
        let panel_count = features.div_ceil(NR);
        let mut panels = vec![0i8; panel_count * padded_depth * NR];
        for (feature, row) in quantized.values.chunks_exact(depth).enumerate() {
            let (panel, column) = (feature / NR, feature % NR);
            let base = panel * padded_depth * NR;
            for (k, &value) in row.iter().enumerate() {
                panels[base + (k / 4) * NR * 4 + column * 4 + k % 4] = value;
            }
        }
        Self {
            features,
            depth,
            padded_depth,
            panels,
            scales: quantized.scales,
            sums: quantized.sums,
            bias,
            activation,
            levels,
        }
    }

    pub(crate) fn panel(&self, index: usize) -> &[i8] {
        let size = self.padded_depth * NR;
        &self.panels[index * size..(index + 1) * size]
    }
}

/// One tile of up to `MR` rows: quantized into `quantized` (`MR × padded_depth` bytes of
/// scratch, whatever they held), summed against every panel by `sums`, scaled and written
/// to `out`. Inlined into each kernel's caller, so on the VNNI and AVX2 paths the
/// quantization and the scaling are compiled for AVX-512 or AVX2 too.
#[inline(always)]
pub(crate) fn tile_with<M: MulAdd>(
    x: &[f32],
    weights: &PackedWeights,
    quantized: &mut [u8],
    out: &mut [f32],
    sums: impl Fn(&[u8], usize, &[i8]) -> [[i32; NR]; MR],
) {
    let (depth, features, padded) = (weights.depth, weights.features, weights.padded_depth);
    let rows = out.len() / features;
    // Bytes past a row's depth meet zero weights, and the rows past a short tile's last
    // give sums that are not used: scratch from the previous tile needs no clearing.
    let tile = &mut quantized[..MR * padded];
    let mut scales = [RowScale {
        scale: 0.0,
        zero_point: 0,
    }; MR];
    for ((x, q), scale) in x
        .chunks_exact(depth)
        .zip(tile.chunks_exact_mut(padded))
        .zip(&mut scales)
    {
        *scale = quantize_row(x, &mut q[..depth], weights.levels.activation);
    }
    for panel in 0..features.div_ceil(NR) {
        let sums = sums(tile, padded, weights.panel(panel));
        let first = panel * NR;
        let width = NR.min(features - first);
        let weight_scales = &weights.scales[first..first + width];
        let weight_sums = &weights.sums[first..first + width];
        let bias = &weights.bias[first..first + width];
        for ((sums, row_scale), out) in sums
            .iter()
            .zip(&scales)
            .zip(out.chunks_exact_mut(features))
            .take(rows)
        {
            let RowScale { scale, zero_point } = *row_scale;
            let out = &mut out[first..first + width];
            for ((((out, &sum), &weight_sum), &weight_scale), &bias) in out
                .iter_mut()
                .zip(&sums[..width])
                .zip(weight_sums)
                .zip(weight_scales)
                .zip(bias)
            {
                let exact = sum - zero_point * weight_sum;
                *out = M::mul_add(exact as f32, scale * weight_scale, bias);
            }
            if weights.activation == Activation::Gelu {
                for out in out.iter_mut() {
                    *out = gelu::<M>(*out);
                }
            }
        }
    }
}

/// The sums `Σ_k tile[r][k] · panel[k][c]` of one tile and one panel, in plain integer
/// arithmetic.
pub(crate) fn tile_sums_portable(tile: &[u8], depth: usize, panel: &[i8]) -> [[i32; NR]; MR] {
    let mut sums = [[0i32; NR]; MR];
    for (row, sums) in sums.iter_mut().enumerate() {
        let a = &tile[row * depth..(row + 1) * depth];
        for (group, b) in panel.chunks_exact(NR * 4).enumerate() {
            let a = &a[group * 4..group * 4 + 4];
            for (c, sum) in sums.iter_mut().enumerate() {
                let b = &b[c * 4..c * 4 + 4];
                *sum += a
                    .iter()
                    .zip(b)
                    .map(|(&a, &b)| i32::from(a) * i32::from(b))
                    .sum::<i32>();
            }
        }
    }
    sums
}
