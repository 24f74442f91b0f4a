//! Quantization of weights (per output feature) and activations (per row).

use crate::fastmath::{ROUNDING, ROUNDING_BITS};

/// The integer ranges of one 8-bit scheme: activations in `0..=activation`, weights in
/// `-weight..=weight`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Levels {
    pub(crate) activation: u8,
    pub(crate) weight: i8,
}

impl Levels {
    /// Every level of both bytes: the VNNI kernel (and the portable one) sum their products
    /// in `i32` directly.
    pub(crate) const FULL: Self = Self {
        activation: 255,
        weight: 127,
    };
    /// The AVX2 kernel adds each pair of products in a saturating `i16` (`vpmaddubsw`), so a
    /// pair must stay within `i16::MAX`: `2 · 181 · 90 = 32580`. The levels are split about
    /// evenly (182 for activations, 181 for weights): over 512 texts of the real model that
    /// kept each vector closer to f32 (cosine mean 0.9977, least 0.9960) than all 256
    /// activation levels with weights at ±64 (0.9969, 0.9918) or 7-bit activations with
    /// every weight level (0.9975, 0.9960).
    pub(crate) const AVX2: Self = Self {
        activation: 181,
        weight: 90,
    };
}

/// Weights `(features, depth)` as `i8` with one scale per feature: `w ≈ scale · q`,
/// `q ∈ [-levels.weight, levels.weight]`.
pub(crate) struct QuantizedWeights {
    pub(crate) values: Vec<i8>,
    pub(crate) scales: Vec<f32>,
    /// `Σ q` of each feature: the correction for the activations' zero points.
    pub(crate) sums: Vec<i32>,
}

pub(crate) fn quantize_weights(
    weights: &[f32],
    features: usize,
    depth: usize,
    levels: Levels,
) -> QuantizedWeights {
    let top = f32::from(levels.weight);
    let mut values = Vec::with_capacity(features * depth);
    let mut scales = Vec::with_capacity(features);
    let mut sums = Vec::with_capacity(features);
    for row in weights.chunks_exact(depth).take(features) {
        let largest = row.iter().fold(0f32, |m, w| m.max(w.abs()));
        let scale = if largest > 0.0 { largest / top } else { 1.0 };
        let mut sum = 0i32;
        for w in row {
            // In range by construction: |w / scale| ≤ levels.weight.
            let q = (w / scale).round_ties_even() as i8;
            sum += i32::from(q);
            values.push(q);
        }
        scales.push(scale);
        sums.push(sum);
    }
    QuantizedWeights {
        values,
        scales,
        sums,
    }
}

/// One row of activations as `u8`: `x ≈ scale · (q - zero_point)`. The range always holds
/// 0, so zeros (and a row of zeros) are exact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RowScale {
    pub(crate) scale: f32,
    pub(crate) zero_point: i32,
}

/// Quantizes `row` into `out` (the same length), in `0..=top`. Inlined, so it is compiled
/// for the CPU the tile kernel is compiled for.
#[inline(always)]
pub(crate) fn quantize_row(row: &[f32], out: &mut [u8], top: u8) -> RowScale {
    let top = f32::from(top);
    let (low, high) = row
        .iter()
        .fold((0f32, 0f32), |(low, high), &x| (low.min(x), high.max(x)));
    if high - low <= f32::MIN_POSITIVE || !(high - low).is_finite() {
        out.fill(0);
        return RowScale {
            scale: if (high - low).is_finite() {
                1.0
            } else {
                f32::NAN
            },
            zero_point: 0,
        };
    }
    let scale = (high - low) / top;
    let inverse = 1.0 / scale;
    let zero_point = (-low * inverse).round_ties_even().clamp(0.0, top);
    for (q, &x) in out.iter_mut().zip(row) {
        // Clamped, then rounded by adding `ROUNDING`: the integer is the low byte of the
        // sum's bits (a float-to-integer conversion here would not vectorize).
        let level = (x * inverse + zero_point).clamp(0.0, top) + ROUNDING;
        *q = (level.to_bits().wrapping_sub(ROUNDING_BITS) & 0xFF) as u8;
    }
    RowScale {
        scale,
        zero_point: zero_point as i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_round_trip_within_half_a_step() {
        let weights = [
            0.5f32, -1.0, 0.25, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 1.0, -2.0, 0.1,
        ];
        let q = quantize_weights(&weights, 3, 4, Levels::FULL);
        assert_eq!(q.values.len(), 12);
        assert_eq!(&q.values[0..4], &[64, -127, 32, 0]);
        assert_eq!(&q.values[4..8], &[0, 0, 0, 0], "a zero row stays zero");
        for (feature, row) in weights.chunks(4).enumerate() {
            let scale = q.scales[feature];
            for (i, w) in row.iter().enumerate() {
                let back = scale * f32::from(q.values[feature * 4 + i]);
                assert!((back - w).abs() <= scale / 2.0 + 1e-6, "{back} for {w}");
            }
            let sum: i32 = q.values[feature * 4..feature * 4 + 4]
                .iter()
                .map(|&v| i32::from(v))
                .sum();
            assert_eq!(q.sums[feature], sum);
        }
    }

    #[test]
    fn rows_round_trip_within_half_a_step_and_keep_zero_exact() {
        let row = [-0.17f32, 0.0, 0.9, 3.2, -0.05, 1.7];
        let mut q = [0u8; 6];
        let s = quantize_row(&row, &mut q, 255);
        assert_eq!(q[1] as i32, s.zero_point, "zero is exact");
        for (x, &v) in row.iter().zip(&q) {
            let back = s.scale * (v as i32 - s.zero_point) as f32;
            assert!((back - x).abs() <= s.scale / 2.0 + 1e-6, "{back} for {x}");
        }
        assert_eq!(q[3], 255);
    }

    #[test]
    fn fewer_levels_are_the_same_rounding_on_a_coarser_grid() {
        let weights = [0.5f32, -1.0, 0.25, 0.0];
        let q = quantize_weights(&weights, 1, 4, Levels::AVX2);
        assert_eq!(q.values, [45, -90, 22, 0], "22.5 rounds to even");
        assert_eq!(q.sums, [-23]);
        let mut row = [0u8; 3];
        let s = quantize_row(&[-1.0, 0.0, 1.0], &mut row, 127);
        assert_eq!((row, s.zero_point), ([0, 64, 127], 64));
    }

    #[test]
    fn a_positive_row_still_holds_zero() {
        let mut q = [0u8; 3];
        let s = quantize_row(&[1.0, 2.0, 3.0], &mut q, 255);
        assert_eq!(s.zero_point, 0);
        assert_eq!(q, [85, 170, 255]);
    }

    #[test]
    fn a_row_of_zeros_is_all_zero_points() {
        let mut q = [7u8; 4];
        let s = quantize_row(&[0.0; 4], &mut q, 255);
        assert_eq!(q, [0; 4]);
        assert_eq!(s.zero_point, 0);
        assert_eq!(s.scale, 1.0);
    }
}
