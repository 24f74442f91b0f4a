//! The fast path of single-token products (generation): the activations quantized to 16 bits
//! per block of 32 (a scale per block, and the block's exact f32 sum for Q4_1's minimums),
//! multiplied with Q4_1 and Q8_0 rows by integer dot products (AVX2 `madd`).
//!
//! Why 16 bits and not llama.cpp's 8: SmolLM2 has outlier activations (at the inputs of its
//! feed-forward down projections and of the output projection) that 8 bits per block cannot
//! carry next to ordinary values; llama.cpp's greedy answer to "What is the capital of
//! France?" on the same file derails for that reason, and so did this engine with 8-bit
//! inputs. At 16 bits a product is within about 1e-5 of the f32 one, and still half the
//! instructions of widening every weight to f32.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m128i, __m256, __m256i};

#[cfg(target_arch = "x86_64")]
use pulp::{cast, x86::V3};

use super::kernels::{BLOCK, Q4_1Row, Q8_0Row, Row};

/// One token's activations, 16 bits per value.
pub(crate) struct Int16Activations {
    scales: Vec<f32>,
    sums: Vec<f32>,
    quants: Vec<[i16; BLOCK]>,
}

impl Int16Activations {
    /// `x` in blocks of 32 (a trailing partial block is ignored: rows of quantized matrices
    /// are whole blocks).
    pub(crate) fn quantize(x: &[f32]) -> Self {
        let (blocks, _) = x.as_chunks::<BLOCK>();
        let mut activations = Self {
            scales: Vec::with_capacity(blocks.len()),
            sums: Vec::with_capacity(blocks.len()),
            quants: Vec::with_capacity(blocks.len()),
        };
        for block in blocks {
            let largest = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let scale = largest / f32::from(i16::MAX);
            let inverse = if largest > 0.0 {
                f32::from(i16::MAX) / largest
            } else {
                0.0
            };
            activations.scales.push(scale);
            activations.sums.push(block.iter().sum());
            // |v × inverse| ≤ 32767, so the cast cannot saturate.
            activations
                .quants
                .push(block.map(|v| (v * inverse).round() as i16));
        }
        activations
    }
}

/// `out[i] = row(first + i) · activations` for every `i`.
pub(crate) fn int16_dot_rows<'a>(
    row: impl Fn(usize) -> Row<'a>,
    first: usize,
    activations: &Int16Activations,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = V3::try_new() {
        simd.vectorize(|| {
            for (i, value) in out.iter_mut().enumerate() {
                *value = match row(first + i) {
                    Row::Q4_1(row) => q4_1_v3(simd, row, activations),
                    Row::Q8_0(row) => q8_0_v3(simd, row, activations),
                    row @ Row::F32(_) => scalar_dot(row, activations),
                };
            }
        });
        return;
    }
    for (i, value) in out.iter_mut().enumerate() {
        *value = scalar_dot(row(first + i), activations);
    }
}

/// The portable kernel: the reference the vector kernels are tested against.
pub(crate) fn scalar_dot(row: Row<'_>, activations: &Int16Activations) -> f32 {
    let blocks = activations
        .quants
        .iter()
        .zip(&activations.scales)
        .zip(&activations.sums);
    let mut total = 0.0;
    for (block, ((x, x_scale), x_sum)) in blocks.enumerate() {
        match row {
            Row::Q4_1(row) => {
                let q = &row.quants[block];
                let mut sum = 0i32;
                for j in 0..16 {
                    sum += i32::from(q[j] & 0x0F) * i32::from(x[j])
                        + i32::from(q[j] >> 4) * i32::from(x[j + 16]);
                }
                total +=
                    row.scales[block].get() * x_scale * sum as f32 + row.mins[block].get() * x_sum;
            }
            Row::Q8_0(row) => {
                let sum: i32 = row.quants[block]
                    .iter()
                    .zip(x)
                    .map(|(w, x)| i32::from(*w) * i32::from(*x))
                    .sum();
                total += row.scales[block].get() * x_scale * sum as f32;
            }
            Row::F32(weights) => {
                let weights = &weights[block * BLOCK..(block + 1) * BLOCK];
                let sum: f32 = weights.iter().zip(x).map(|(w, x)| w * f32::from(*x)).sum();
                total += x_scale * sum;
            }
        }
    }
    total
}

/// `acc + scale × Σ w·x` over a block whose 32 weights are 16-bit in two halves (elements
/// 0..16, 16..32). Each 32-bit lane sums four products of at most 128 × 32767, so nothing
/// overflows and the conversion to f32 is exact.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn add_block(simd: V3, acc: __m256, scale: f32, weights: [__m256i; 2], x: &[i16; BLOCK]) -> __m256 {
    let x: [__m256i; 2] = cast(*x);
    let sums = simd.avx2._mm256_add_epi32(
        simd.avx2._mm256_madd_epi16(weights[0], x[0]),
        simd.avx2._mm256_madd_epi16(weights[1], x[1]),
    );
    simd.fma._mm256_fmadd_ps(
        simd.avx._mm256_set1_ps(scale),
        simd.avx._mm256_cvtepi32_ps(sums),
        acc,
    )
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn q4_1_v3(simd: V3, row: Q4_1Row<'_>, x: &Int16Activations) -> f32 {
    let low_nibbles = simd.sse2._mm_set1_epi8(0x0F);
    let mut acc = simd.avx._mm256_setzero_ps();
    let blocks = row
        .quants
        .iter()
        .zip(row.scales)
        .zip(&x.quants)
        .zip(&x.scales);
    for (((q, scale), xq), x_scale) in blocks {
        // Elements 0..16 are the low nibbles, 16..32 the high ones.
        let q: __m128i = cast(*q);
        let low = simd.sse2._mm_and_si128(q, low_nibbles);
        let high = simd
            .sse2
            ._mm_and_si128(simd.sse2._mm_srli_epi16::<4>(q), low_nibbles);
        let weights = [
            simd.avx2._mm256_cvtepu8_epi16(low),
            simd.avx2._mm256_cvtepu8_epi16(high),
        ];
        acc = add_block(simd, acc, scale.get() * x_scale, weights, xq);
    }
    super::kernels::horizontal_sum(simd, acc) + super::kernels::minimums(row.mins, &x.sums)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn q8_0_v3(simd: V3, row: Q8_0Row<'_>, x: &Int16Activations) -> f32 {
    let mut acc = simd.avx._mm256_setzero_ps();
    let blocks = row
        .quants
        .iter()
        .zip(row.scales)
        .zip(&x.quants)
        .zip(&x.scales);
    for (((q, scale), xq), x_scale) in blocks {
        let [low, high]: [__m128i; 2] = cast(*q);
        let weights = [
            simd.avx2._mm256_cvtepi8_epi16(low),
            simd.avx2._mm256_cvtepi8_epi16(high),
        ];
        acc = add_block(simd, acc, scale.get() * x_scale, weights, xq);
    }
    super::kernels::horizontal_sum(simd, acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llama::kernels::{
        block_sums, dequantize, scalar_dot as exact_dot,
        tests::{halves, values},
    };

    #[test]
    fn sixteen_bit_products_match_exact_ones_and_the_kernels_agree() {
        let blocks = 18;
        let mut x = values(1, blocks * BLOCK);
        // An outlier, as SmolLM2 has: 8 bits per block would lose its neighbours.
        x[5] = 300.0;
        let activations = Int16Activations::quantize(&x);
        let scales = halves(2, blocks);
        let mins = halves(3, blocks);
        let q4: Vec<[u8; 16]> = values(4, blocks * 16)
            .chunks(16)
            .map(|c| std::array::from_fn(|j| ((c[j] + 1.0) * 127.9) as u8))
            .collect();
        // -128 included: the widest product must not overflow.
        let q8: Vec<[i8; 32]> = values(5, blocks * 32)
            .chunks(32)
            .map(|c| std::array::from_fn(|j| if j == 3 { -128 } else { (c[j] * 127.0) as i8 }))
            .collect();
        let f32_row = values(6, blocks * BLOCK);
        let rows = [
            Row::Q4_1(Q4_1Row {
                scales: &scales,
                mins: &mins,
                quants: &q4,
            }),
            Row::Q8_0(Q8_0Row {
                scales: &scales,
                quants: &q8,
            }),
            Row::F32(&f32_row),
        ];
        let sums = block_sums(&x);
        for row in rows {
            let exact = exact_dot(row, &x, &sums);
            // Rounding moves each activation by at most half a step (its block's largest
            // value / 32767), so the product by at most Σ |w| × half a step.
            let mut weights = vec![0.0; x.len()];
            dequantize(row, &mut weights);
            let bound: f32 = weights
                .chunks(BLOCK)
                .zip(x.chunks(BLOCK))
                .map(|(w, x)| {
                    let step = x.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 32767.0;
                    w.iter().map(|w| w.abs()).sum::<f32>() * step / 2.0
                })
                .sum();
            let scalar = scalar_dot(row, &activations);
            let mut fast = [0.0];
            int16_dot_rows(|_| row, 0, &activations, &mut fast);
            assert!(
                (fast[0] - scalar).abs() < 1e-5 * scalar.abs().max(1.0),
                "{} vs {scalar}",
                fast[0]
            );
            assert!(
                (scalar - exact).abs() <= bound * 1.01 + 1e-4,
                "{scalar} vs {exact} (bound {bound})"
            );
        }
    }
}
