//! Dot products of one weight row, in its storage format, with f32 activations. The
//! activations are never quantized (SmolLM2's outlier activations do not survive 8-bit
//! blocks), so a product is exact up to the file's own weight quantization.
//!
//! On x86-64 with AVX2 and FMA (checked once per call at run time) the rows go through
//! `pulp`'s safe wrappers of the intrinsics; elsewhere through portable scalar code. The
//! two are tested against each other.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m128i, __m256};

#[cfg(target_arch = "x86_64")]
use pulp::{cast, x86::V3};

/// Weights per quantization block (Q4_1 and Q8_0 alike).
pub(crate) const BLOCK: usize = 32;

/// One row of a Q4_1 matrix: weight = scale × q + min, q in 0..16; byte j of a block holds
/// element j (low nibble) and element j + 16 (high nibble).
#[derive(Clone, Copy)]
pub(crate) struct Q4_1Row<'a> {
    pub scales: &'a [f32],
    pub mins: &'a [f32],
    pub quants: &'a [[u8; 16]],
}

/// One row of a Q8_0 matrix: weight = scale × q.
#[derive(Clone, Copy)]
pub(crate) struct Q8_0Row<'a> {
    pub scales: &'a [f32],
    pub quants: &'a [[i8; 32]],
}

/// A row in any of the formats the engine keeps.
#[derive(Clone, Copy)]
pub(crate) enum Row<'a> {
    Q4_1(Q4_1Row<'a>),
    Q8_0(Q8_0Row<'a>),
    F32(&'a [f32]),
}

/// Sums of each block of 32 activations: a Q4_1 row's minimums multiply them.
pub(crate) fn block_sums(x: &[f32]) -> Vec<f32> {
    x.chunks(BLOCK).map(|block| block.iter().sum()).collect()
}

/// `out[i] = rows(first + i) · x` for every `i`, with the fastest kernels this CPU has.
/// `sums` are `x`'s [`block_sums`] (read by Q4_1 rows only).
pub(crate) fn dot_rows<'a>(
    row: impl Fn(usize) -> Row<'a>,
    first: usize,
    x: &[f32],
    sums: &[f32],
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = V3::try_new() {
        simd.vectorize(|| {
            for (i, value) in out.iter_mut().enumerate() {
                *value = simd_dot(simd, row(first + i), x, sums);
            }
        });
        return;
    }
    for (i, value) in out.iter_mut().enumerate() {
        *value = scalar_dot(row(first + i), x, sums);
    }
}

/// `a · b` over the shorter length, with the fastest kernel this CPU has.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = V3::try_new() {
        return simd.vectorize(|| f32_dot_v3(simd, a, b));
    }
    f32_dot_scalar(a, b)
}

/// The portable kernels: the reference the vector kernels are tested against.
pub(crate) fn scalar_dot(row: Row<'_>, x: &[f32], sums: &[f32]) -> f32 {
    match row {
        Row::Q4_1(row) => {
            let mut total = 0.0;
            for (block, q) in row.quants.iter().enumerate() {
                let xs = &x[block * BLOCK..(block + 1) * BLOCK];
                let mut sum = 0.0;
                for (j, byte) in q.iter().enumerate() {
                    sum += f32::from(byte & 0x0F) * xs[j] + f32::from(byte >> 4) * xs[j + 16];
                }
                total += row.scales[block] * sum + row.mins[block] * sums[block];
            }
            total
        }
        Row::Q8_0(row) => {
            let mut total = 0.0;
            for (block, q) in row.quants.iter().enumerate() {
                let xs = &x[block * BLOCK..(block + 1) * BLOCK];
                let sum: f32 = q.iter().zip(xs).map(|(q, x)| f32::from(*q) * x).sum();
                total += row.scales[block] * sum;
            }
            total
        }
        Row::F32(weights) => f32_dot_scalar(weights, x),
    }
}

fn f32_dot_scalar(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn simd_dot(simd: V3, row: Row<'_>, x: &[f32], sums: &[f32]) -> f32 {
    match row {
        Row::Q4_1(row) => q4_1_v3(simd, row, x, sums),
        Row::Q8_0(row) => q8_0_v3(simd, row, x),
        Row::F32(weights) => f32_dot_v3(simd, weights, x),
    }
}

/// Eight bytes (the low half of `bytes`) widened to eight f32, as unsigned or signed.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn widen_u8(simd: V3, bytes: __m128i) -> __m256 {
    simd.avx._mm256_cvtepi32_ps(simd.avx2._mm256_cvtepu8_epi32(bytes))
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn widen_i8(simd: V3, bytes: __m128i) -> __m256 {
    simd.avx._mm256_cvtepi32_ps(simd.avx2._mm256_cvtepi8_epi32(bytes))
}

/// Σ over a block of `w[j] · x[j]` for the block's 32 weights already widened to f32.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn block_dot(simd: V3, weights: [__m256; 4], xs: &[f32; BLOCK]) -> __m256 {
    let x: [__m256; 4] = cast(*xs);
    let mut sum = simd.avx._mm256_mul_ps(weights[0], x[0]);
    sum = simd.fma._mm256_fmadd_ps(weights[1], x[1], sum);
    sum = simd.fma._mm256_fmadd_ps(weights[2], x[2], sum);
    simd.fma._mm256_fmadd_ps(weights[3], x[3], sum)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn q4_1_v3(simd: V3, row: Q4_1Row<'_>, x: &[f32], sums: &[f32]) -> f32 {
    let (xs, _) = x.as_chunks::<BLOCK>();
    let low_nibbles = simd.sse2._mm_set1_epi8(0x0F);
    let mut acc = simd.avx._mm256_setzero_ps();
    for ((q, xs), scale) in row.quants.iter().zip(xs).zip(row.scales) {
        let q: __m128i = cast(*q);
        let low = simd.sse2._mm_and_si128(q, low_nibbles);
        let high = simd
            .sse2
            ._mm_and_si128(simd.sse2._mm_srli_epi16::<4>(q), low_nibbles);
        let weights = [
            widen_u8(simd, low),
            widen_u8(simd, simd.sse2._mm_srli_si128::<8>(low)),
            widen_u8(simd, high),
            widen_u8(simd, simd.sse2._mm_srli_si128::<8>(high)),
        ];
        let sum = block_dot(simd, weights, xs);
        acc = simd
            .fma
            ._mm256_fmadd_ps(simd.avx._mm256_set1_ps(*scale), sum, acc);
    }
    horizontal_sum(simd, acc) + f32_dot_v3(simd, row.mins, sums)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn q8_0_v3(simd: V3, row: Q8_0Row<'_>, x: &[f32]) -> f32 {
    let (xs, _) = x.as_chunks::<BLOCK>();
    let mut acc = simd.avx._mm256_setzero_ps();
    for ((q, xs), scale) in row.quants.iter().zip(xs).zip(row.scales) {
        let [low, high]: [__m128i; 2] = cast(*q);
        let weights = [
            widen_i8(simd, low),
            widen_i8(simd, simd.sse2._mm_srli_si128::<8>(low)),
            widen_i8(simd, high),
            widen_i8(simd, simd.sse2._mm_srli_si128::<8>(high)),
        ];
        let sum = block_dot(simd, weights, xs);
        acc = simd
            .fma
            ._mm256_fmadd_ps(simd.avx._mm256_set1_ps(*scale), sum, acc);
    }
    horizontal_sum(simd, acc)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn f32_dot_v3(simd: V3, a: &[f32], b: &[f32]) -> f32 {
    let len = a.len().min(b.len());
    let (a_chunks, a_rest) = a[..len].as_chunks::<8>();
    let (b_chunks, b_rest) = b[..len].as_chunks::<8>();
    let mut acc = simd.avx._mm256_setzero_ps();
    for (a, b) in a_chunks.iter().zip(b_chunks) {
        acc = simd.fma._mm256_fmadd_ps(cast(*a), cast(*b), acc);
    }
    horizontal_sum(simd, acc) + f32_dot_scalar(a_rest, b_rest)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn horizontal_sum(simd: V3, v: __m256) -> f32 {
    let halves = simd.sse._mm_add_ps(
        simd.avx._mm256_castps256_ps128(v),
        simd.avx._mm256_extractf128_ps::<1>(v),
    );
    let pairs = simd.sse3._mm_hadd_ps(halves, halves);
    simd.sse._mm_cvtss_f32(simd.sse3._mm_hadd_ps(pairs, pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random values in [-1, 1).
    fn values(seed: u64, len: usize) -> Vec<f32> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    fn bytes(seed: u64, len: usize) -> Vec<u8> {
        values(seed, len)
            .into_iter()
            .map(|v| ((v + 1.0) * 127.9) as u8)
            .collect()
    }

    #[test]
    fn every_kernel_matches_the_scalar_reference_and_plain_arithmetic() {
        let blocks = 48;
        let x = values(1, blocks * BLOCK);
        let sums = block_sums(&x);
        let scales = values(2, blocks);
        let mins = values(3, blocks);
        let q4: Vec<[u8; 16]> = bytes(4, blocks * 16)
            .chunks(16)
            .map(|c| c.try_into().expect("16 bytes"))
            .collect();
        let q8: Vec<[i8; 32]> = bytes(5, blocks * 32)
            .chunks(32)
            .map(|c| std::array::from_fn(|j| c[j] as i8))
            .collect();
        let f32_row = values(6, blocks * BLOCK + 5);
        let x_long = values(7, blocks * BLOCK + 5);

        // Plain arithmetic on the dequantized rows: what each kernel must reproduce.
        let q4_weights: Vec<f32> = (0..blocks * BLOCK)
            .map(|i| {
                let (block, j) = (i / BLOCK, i % BLOCK);
                let byte = q4[block][j % 16];
                let q = if j < 16 { byte & 0x0F } else { byte >> 4 };
                scales[block] * f32::from(q) + mins[block]
            })
            .collect();
        let q8_weights: Vec<f32> = (0..blocks * BLOCK)
            .map(|i| scales[i / BLOCK] * f32::from(q8[i / BLOCK][i % BLOCK]))
            .collect();
        let plain = |w: &[f32], x: &[f32]| -> f32 { w.iter().zip(x).map(|(a, b)| a * b).sum() };

        let cases = [
            (
                Row::Q4_1(Q4_1Row {
                    scales: &scales,
                    mins: &mins,
                    quants: &q4,
                }),
                plain(&q4_weights, &x),
                &x,
            ),
            (
                Row::Q8_0(Q8_0Row {
                    scales: &scales,
                    quants: &q8,
                }),
                plain(&q8_weights, &x),
                &x,
            ),
            (Row::F32(&f32_row), plain(&f32_row, &x_long), &x_long),
        ];
        for (row, expected, x) in cases {
            let scalar = scalar_dot(row, x, &sums);
            let mut fast = [0.0];
            dot_rows(|_| row, 0, x, &sums, &mut fast);
            let tolerance = 1e-3 * expected.abs().max(1.0);
            assert!((scalar - expected).abs() < tolerance, "{scalar} vs {expected}");
            assert!((fast[0] - expected).abs() < tolerance, "{} vs {expected}", fast[0]);
        }
        assert!((dot(&f32_row, &x_long) - plain(&f32_row, &x_long)).abs() < 1e-3);
    }
}
