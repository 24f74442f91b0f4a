//! The fast path of single-token products (generation): the activations quantized to 16 bits
//! per block of 32 (a scale per block, and the block's exact f32 sum for Q4_1's minimums),
//! multiplied with Q4_1 and Q8_0 rows by integer dot products (`madd` of AVX2, or of
//! AVX-512 BW in `avx512`).
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
use pulp::{
    cast,
    x86::{V3, V4},
};

#[cfg(target_arch = "x86_64")]
use super::blocks::Half;
use super::blocks::{BLOCK, Int16Activations, Q4_1Row, Q8_0Row, Row};
#[cfg(target_arch = "x86_64")]
use super::horizontal_sums::horizontal_sum;
use super::isa::InstructionSet;

/// `out[i] = row(first + i) · activations` for every `i`.
pub(crate) fn int16_dot_rows<'a>(
    isa: InstructionSet,
    row: impl Fn(usize) -> Row<'a>,
    first: usize,
    activations: &Int16Activations,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if isa == InstructionSet::Avx512
        && let Some(simd) = V4::try_new()
    {
        use super::avx512::{q4_1_int16, q8_0_int16};
        simd.vectorize(
            #[inline(always)]
            || {
                for (i, value) in out.iter_mut().enumerate() {
                    *value = match row(first + i) {
                        Row::Q4_1(row) => q4_1_int16(simd, row, activations),
                        Row::Q8_0(row) => q8_0_int16(simd, row, activations),
                        row @ Row::F32(_) => scalar_dot(row, activations),
                    };
                }
            },
        );
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if isa <= InstructionSet::Avx2
        && let Some(simd) = V3::try_new()
    {
        simd.vectorize(
            #[inline(always)]
            || {
                for (i, value) in out.iter_mut().enumerate() {
                    *value = match row(first + i) {
                        Row::Q4_1(row) => q4_1_v3(simd, row, activations),
                        Row::Q8_0(row) => q8_0_v3(simd, row, activations),
                        row @ Row::F32(_) => scalar_dot(row, activations),
                    };
                }
            },
        );
        return;
    }
    let _ = isa;
    for (i, value) in out.iter_mut().enumerate() {
        *value = scalar_dot(row(first + i), activations);
    }
}

/// The portable kernel: the reference the vector kernels are tested against.
pub(crate) fn scalar_dot(row: Row<'_>, activations: &Int16Activations) -> f32 {
    let blocks = activations
        .quants()
        .iter()
        .zip(activations.scales())
        .zip(activations.sums());
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

/// Eight half-precision values widened at once, exactly as [`Half::get`] widens one (the
/// exponent and mantissa moved into f32's places and rescaled by 2^112, the sign moved).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn widen_halves(simd: V3, halves: &[Half; 8]) -> __m256 {
    const TWO_TO_112: u32 = 0x7780_0000;
    let (avx, avx2) = (simd.avx, simd.avx2);
    let mut bits = [0u16; 8];
    for (bits, half) in bits.iter_mut().zip(halves) {
        *bits = half.0;
    }
    let wide = avx2._mm256_cvtepu16_epi32(cast(bits));
    let magnitude =
        avx2._mm256_slli_epi32::<13>(avx2._mm256_and_si256(wide, avx._mm256_set1_epi32(0x7fff)));
    let magnitude = avx._mm256_mul_ps(
        avx._mm256_castsi256_ps(magnitude),
        avx._mm256_castsi256_ps(avx._mm256_set1_epi32(TWO_TO_112 as i32)),
    );
    let sign =
        avx2._mm256_slli_epi32::<16>(avx2._mm256_and_si256(wide, avx._mm256_set1_epi32(0x8000)));
    avx._mm256_or_ps(magnitude, avx._mm256_castsi256_ps(sign))
}

/// `Σ_b w_scale[b] × x_scale[b] × (words(q[b]) · x[b])` over a row's blocks, plus
/// `Σ_b min[b] × x_sum[b]` when the row has minimums (Q4_1): the scales' products eight
/// blocks at a time (the rest one by one), the blocks two at a time into two sums.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn int16_blocks_v3<Q: Copy>(
    simd: V3,
    quants: &[Q],
    scales: &[Half],
    mins: Option<&[Half]>,
    x: &Int16Activations,
    words: impl Fn(Q) -> [__m256i; 2],
) -> f32 {
    let (avx, fma) = (simd.avx, simd.fma);
    let mut acc = [avx._mm256_setzero_ps(); 2];
    let mut minimums = avx._mm256_setzero_ps();
    let whole = quants.len() / 8 * 8;
    for start in (0..whole).step_by(8) {
        let (w_scales, _) = scales[start..start + 8].as_chunks::<8>();
        let (xs, _) = x.scales()[start..start + 8].as_chunks::<8>();
        let products: [f32; 8] =
            cast(avx._mm256_mul_ps(widen_halves(simd, &w_scales[0]), cast(xs[0])));
        if let Some(mins) = mins {
            let (mins, _) = mins[start..start + 8].as_chunks::<8>();
            let (sums, _) = x.sums()[start..start + 8].as_chunks::<8>();
            minimums = fma._mm256_fmadd_ps(widen_halves(simd, &mins[0]), cast(sums[0]), minimums);
        }
        for b in (start..start + 8).step_by(2) {
            let (i, j) = (b - start, b + 1 - start);
            acc[0] = add_block(simd, acc[0], products[i], words(quants[b]), &x.quants()[b]);
            acc[1] = add_block(
                simd,
                acc[1],
                products[j],
                words(quants[b + 1]),
                &x.quants()[b + 1],
            );
        }
    }
    let mut rest_minimums = 0.0;
    for b in whole..quants.len() {
        let product = scales[b].get() * x.scales()[b];
        acc[b % 2] = add_block(simd, acc[b % 2], product, words(quants[b]), &x.quants()[b]);
        if let Some(mins) = mins {
            rest_minimums += mins[b].get() * x.sums()[b];
        }
    }
    let total = avx._mm256_add_ps(avx._mm256_add_ps(acc[0], acc[1]), minimums);
    horizontal_sum(simd, total) + rest_minimums
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn q4_1_v3(simd: V3, row: Q4_1Row<'_>, x: &Int16Activations) -> f32 {
    let low_nibbles = simd.sse2._mm_set1_epi8(0x0F);
    int16_blocks_v3(simd, row.quants, row.scales, Some(row.mins), x, |q| {
        // Elements 0..16 are the low nibbles, 16..32 the high ones.
        let q: __m128i = cast(q);
        let low = simd.sse2._mm_and_si128(q, low_nibbles);
        let high = simd
            .sse2
            ._mm_and_si128(simd.sse2._mm_srli_epi16::<4>(q), low_nibbles);
        [
            simd.avx2._mm256_cvtepu8_epi16(low),
            simd.avx2._mm256_cvtepu8_epi16(high),
        ]
    })
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn q8_0_v3(simd: V3, row: Q8_0Row<'_>, x: &Int16Activations) -> f32 {
    int16_blocks_v3(simd, row.quants, row.scales, None, x, |q| {
        let [low, high]: [__m128i; 2] = cast(q);
        [
            simd.avx2._mm256_cvtepi8_epi16(low),
            simd.avx2._mm256_cvtepi8_epi16(high),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llama::isa::each_available;
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
            dequantize(InstructionSet::Portable, row, &mut weights);
            let bound: f32 = weights
                .chunks(BLOCK)
                .zip(x.chunks(BLOCK))
                .map(|(w, x)| {
                    let step = x.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 32767.0;
                    w.iter().map(|w| w.abs()).sum::<f32>() * step / 2.0
                })
                .sum();
            let scalar = scalar_dot(row, &activations);
            for isa in each_available() {
                let mut fast = [0.0];
                int16_dot_rows(isa, |_| row, 0, &activations, &mut fast);
                assert!(
                    (fast[0] - scalar).abs() < 1e-5 * scalar.abs().max(1.0),
                    "{isa:?}: {} vs {scalar}",
                    fast[0]
                );
            }
            assert!(
                (scalar - exact).abs() <= bound * 1.01 + 1e-4,
                "{scalar} vs {exact} (bound {bound})"
            );
        }
    }

    /// Every finite half, eight at a time, widened as `Half::get` widens it.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn eight_halves_widen_exactly() {
        let Some(simd) = V3::try_new() else {
            eprintln!("skipped: this CPU has no AVX2 and FMA");
            return;
        };
        let all: Vec<Half> = (0..=u16::MAX).map(Half).collect();
        let (chunks, _) = all.as_chunks::<8>();
        for chunk in chunks {
            let got: [f32; 8] = cast(simd.vectorize(
                #[inline(always)]
                || widen_halves(simd, chunk),
            ));
            for (half, got) in chunk.iter().zip(got) {
                if half::f16::from_bits(half.0).is_finite() {
                    assert_eq!(got.to_bits(), half.get().to_bits(), "{:#x}", half.0);
                }
            }
        }
    }
}
