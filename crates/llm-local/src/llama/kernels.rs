//! The f32 kernels: dot products of weight rows, in their storage format, with f32
//! activations (prompts, and matrices kept in f32), and row dequantization (attention is
//! `attend`'s). Exact up to the file's own weight quantization; generated tokens take the
//! 16-bit path of `int16` instead.
//!
//! On x86-64 with AVX-512 or with AVX2 and FMA (the caller's [`InstructionSet`], checked
//! again at run time) the rows go through `pulp`'s safe wrappers of the intrinsics (the
//! AVX-512 ones in `avx512`); elsewhere through portable scalar code. Every path the CPU
//! has is tested against the portable one.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m128i, __m256};

#[cfg(target_arch = "x86_64")]
use pulp::{
    cast,
    x86::{V3, V4},
};

use super::blocks::{BLOCK, Row};
#[cfg(target_arch = "x86_64")]
use super::horizontal_sums::horizontal_sum;
use super::isa::InstructionSet;

/// Sums of each block of 32 activations: a Q4_1 row's minimums multiply them.
pub(crate) fn block_sums(x: &[f32]) -> Vec<f32> {
    x.chunks(BLOCK).map(|block| block.iter().sum()).collect()
}

/// `out[i] = rows(first + i) · x` for every `i` over f32 activations: vectorized for f32
/// rows, the exact scalar reference for quantized ones. `sums` are `x`'s [`block_sums`]
/// (read by Q4_1 rows only).
pub(crate) fn dot_rows<'a>(
    isa: InstructionSet,
    row: impl Fn(usize) -> Row<'a>,
    first: usize,
    x: &[f32],
    sums: &[f32],
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if isa == InstructionSet::Avx512
        && let Some(simd) = V4::try_new()
    {
        simd.vectorize(
            #[inline(always)]
            || dot_rows_with(simd, row, first, x, sums, out),
        );
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if isa <= InstructionSet::Avx2
        && let Some(simd) = V3::try_new()
    {
        simd.vectorize(
            #[inline(always)]
            || dot_rows_with(simd, row, first, x, sums, out),
        );
        return;
    }
    let _ = isa;
    dot_rows_with(Portable, row, first, x, sums, out);
}

#[inline(always)]
fn dot_rows_with<'a>(
    kernels: impl RowsTokens,
    row: impl Fn(usize) -> Row<'a>,
    first: usize,
    x: &[f32],
    sums: &[f32],
    out: &mut [f32],
) {
    for (i, value) in out.iter_mut().enumerate() {
        *value = match row(first + i) {
            Row::F32(weights) => kernels.dot(weights, x),
            // Quantized rows take `int16` for single tokens and `dot_rows_tokens` for
            // prompts; this is their exact reference.
            quantized => scalar_dot(quantized, x, sums),
        };
    }
}

/// Rows a prompt's product dequantizes at once: the buffer it is given holds this many.
pub(crate) const ROWS_AT_ONCE: usize = 4;

/// The vector kernels a prompt's products are built from, for one instruction set.
pub(crate) trait RowsTokens: Copy {
    /// Row `row` as f32 into `out`.
    fn dequantize(self, row: Row<'_>, out: &mut [f32]);
    /// `Σ a·b` over the shorter of the two.
    fn dot(self, a: &[f32], b: &[f32]) -> f32;
    /// `[[w[0] · x[t], w[1] · x[t]] for t in 0..4]`, each chunk of `w` loaded once.
    fn two_rows_four_tokens(self, w: [&[f32]; 2], x: [&[f32]; 4]) -> [[f32; 2]; 4];
    /// `[[w[r] · x[t] for r in 0..4] for t in 0..4]`: with registers enough for sixteen
    /// sums, each chunk of a token is loaded once for four rows, which halves what a
    /// prompt's products read from the second-level cache.
    #[inline(always)]
    fn four_rows_four_tokens(self, w: [&[f32]; 4], x: [&[f32]; 4]) -> [[f32; 4]; 4] {
        let low = self.two_rows_four_tokens([w[0], w[1]], x);
        let high = self.two_rows_four_tokens([w[2], w[3]], x);
        let mut sums = [[0.0; 4]; 4];
        for t in 0..4 {
            sums[t] = [low[t][0], low[t][1], high[t][0], high[t][1]];
        }
        sums
    }
}

/// `out[t × rows + r] = row(r) · tokens[t]` for every row below `rows`: each row is
/// dequantized once into `buffer` ([`ROWS_AT_ONCE`] rows long) and multiplied with four
/// tokens at a time.
pub(crate) fn dot_rows_tokens<'a>(
    isa: InstructionSet,
    row: impl Fn(usize) -> Row<'a>,
    rows: usize,
    tokens: &[&[f32]],
    buffer: &mut [f32],
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if isa == InstructionSet::Avx512
        && let Some(simd) = V4::try_new()
    {
        simd.vectorize(
            #[inline(always)]
            || dot_rows_tokens_with(simd, row, rows, tokens, buffer, out),
        );
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if isa <= InstructionSet::Avx2
        && let Some(simd) = V3::try_new()
    {
        simd.vectorize(
            #[inline(always)]
            || dot_rows_tokens_with(simd, row, rows, tokens, buffer, out),
        );
        return;
    }
    let _ = isa;
    dot_rows_tokens_with(Portable, row, rows, tokens, buffer, out);
}

#[inline(always)]
fn dot_rows_tokens_with<'a>(
    kernels: impl RowsTokens,
    row: impl Fn(usize) -> Row<'a>,
    rows: usize,
    tokens: &[&[f32]],
    buffer: &mut [f32],
    out: &mut [f32],
) {
    let cols = buffer.len() / ROWS_AT_ONCE;
    let (quads, rest) = tokens.as_chunks::<4>();
    let mut r = 0;
    // Four rows against four tokens.
    while r + 4 <= rows {
        let (mut w, mut free) = ([&[][..]; 4], &mut buffer[..]);
        for (k, w) in w.iter_mut().enumerate() {
            let (this, others) = free.split_at_mut(cols);
            kernels.dequantize(row(r + k), this);
            *w = this;
            free = others;
        }
        for (quad, x) in quads.iter().enumerate() {
            let values = kernels.four_rows_four_tokens(w, *x);
            for (i, four) in values.into_iter().enumerate() {
                let at = (quad * 4 + i) * rows + r;
                out[at..at + 4].copy_from_slice(&four);
            }
        }
        for (i, x) in rest.iter().enumerate() {
            let at = (quads.len() * 4 + i) * rows + r;
            for (k, w) in w.iter().enumerate() {
                out[at + k] = kernels.dot(w, x);
            }
        }
        r += 4;
    }
    let (first, second) = buffer[..2 * cols].split_at_mut(cols);
    // Two rows against four tokens: eight independent accumulators keep both FMA pipes
    // busy.
    while r + 2 <= rows {
        kernels.dequantize(row(r), first);
        kernels.dequantize(row(r + 1), second);
        for (quad, x) in quads.iter().enumerate() {
            let values = kernels.two_rows_four_tokens([&*first, &*second], *x);
            for (i, pair) in values.into_iter().enumerate() {
                let at = (quad * 4 + i) * rows + r;
                out[at..at + 2].copy_from_slice(&pair);
            }
        }
        for (i, x) in rest.iter().enumerate() {
            let at = (quads.len() * 4 + i) * rows + r;
            out[at] = kernels.dot(first, x);
            out[at + 1] = kernels.dot(second, x);
        }
        r += 2;
    }
    if r < rows {
        kernels.dequantize(row(r), first);
        for (t, x) in tokens.iter().enumerate() {
            out[t * rows + r] = kernels.dot(first, x);
        }
    }
}

/// The portable kernels: plain Rust, the reference the vector kernels are tested against.
#[derive(Clone, Copy)]
pub(crate) struct Portable;

impl RowsTokens for Portable {
    fn dequantize(self, row: Row<'_>, out: &mut [f32]) {
        dequantize_scalar(row, out);
    }

    fn dot(self, a: &[f32], b: &[f32]) -> f32 {
        f32_dot_scalar(a, b)
    }

    fn two_rows_four_tokens(self, w: [&[f32]; 2], x: [&[f32]; 4]) -> [[f32; 2]; 4] {
        x.map(|x| w.map(|w| f32_dot_scalar(w, x)))
    }
}

fn dequantize_scalar(row: Row<'_>, out: &mut [f32]) {
    match row {
        Row::Q4_1(row) => {
            for (block, q) in row.quants.iter().enumerate() {
                let out = &mut out[block * BLOCK..(block + 1) * BLOCK];
                for (j, byte) in q.iter().enumerate() {
                    out[j] =
                        row.scales[block].get() * f32::from(byte & 0x0F) + row.mins[block].get();
                    out[j + 16] =
                        row.scales[block].get() * f32::from(byte >> 4) + row.mins[block].get();
                }
            }
        }
        Row::Q8_0(row) => {
            for (block, q) in row.quants.iter().enumerate() {
                let out = &mut out[block * BLOCK..(block + 1) * BLOCK];
                for (value, q) in out.iter_mut().zip(q) {
                    *value = row.scales[block].get() * f32::from(*q);
                }
            }
        }
        Row::F32(values) => out[..values.len()].copy_from_slice(values),
    }
}

/// Row `row` as f32 into `out` (an embedding lookup).
pub(crate) fn dequantize(isa: InstructionSet, row: Row<'_>, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if isa == InstructionSet::Avx512
        && let Some(simd) = V4::try_new()
    {
        simd.vectorize(
            #[inline(always)]
            || super::avx512::dequantize(simd, row, out),
        );
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if isa <= InstructionSet::Avx2
        && let Some(simd) = V3::try_new()
    {
        simd.vectorize(
            #[inline(always)]
            || dequantize_v3(simd, row, out),
        );
        return;
    }
    let _ = isa;
    dequantize_scalar(row, out);
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
                total += row.scales[block].get() * sum + row.mins[block].get() * sums[block];
            }
            total
        }
        Row::Q8_0(row) => {
            let mut total = 0.0;
            for (block, q) in row.quants.iter().enumerate() {
                let xs = &x[block * BLOCK..(block + 1) * BLOCK];
                let sum: f32 = q.iter().zip(xs).map(|(q, x)| f32::from(*q) * x).sum();
                total += row.scales[block].get() * sum;
            }
            total
        }
        Row::F32(weights) => f32_dot_scalar(weights, x),
    }
}

fn f32_dot_scalar(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

/// Eight bytes (the low half of `bytes`) widened to eight f32, as unsigned or signed.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn widen_u8(simd: V3, bytes: __m128i) -> __m256 {
    simd.avx
        ._mm256_cvtepi32_ps(simd.avx2._mm256_cvtepu8_epi32(bytes))
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn widen_i8(simd: V3, bytes: __m128i) -> __m256 {
    simd.avx
        ._mm256_cvtepi32_ps(simd.avx2._mm256_cvtepi8_epi32(bytes))
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn f32_dot_v3(simd: V3, a: &[f32], b: &[f32]) -> f32 {
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
impl RowsTokens for V3 {
    #[inline(always)]
    fn dequantize(self, row: Row<'_>, out: &mut [f32]) {
        dequantize_v3(self, row, out);
    }

    #[inline(always)]
    fn dot(self, a: &[f32], b: &[f32]) -> f32 {
        f32_dot_v3(self, a, b)
    }

    #[inline(always)]
    fn two_rows_four_tokens(self, w: [&[f32]; 2], x: [&[f32]; 4]) -> [[f32; 2]; 4] {
        f32_rows_tokens_v3(self, w, x)
    }
}

/// A prompt's products sixteen lanes wide, on `avx512`'s kernels.
#[cfg(target_arch = "x86_64")]
impl RowsTokens for V4 {
    #[inline(always)]
    fn dequantize(self, row: Row<'_>, out: &mut [f32]) {
        super::avx512::dequantize(self, row, out);
    }

    #[inline(always)]
    fn dot(self, a: &[f32], b: &[f32]) -> f32 {
        super::avx512::f32_dot(self, a, b)
    }

    /// Two rows against four tokens, sixteen lanes at a time: eight independent sums.
    #[inline(always)]
    fn two_rows_four_tokens(self, w: [&[f32]; 2], x: [&[f32]; 4]) -> [[f32; 2]; 4] {
        super::avx512::rows_tokens(self, w, x)
    }

    /// Four rows against four tokens: sixteen sums in registers (AVX-512 has 32).
    #[inline(always)]
    fn four_rows_four_tokens(self, w: [&[f32]; 4], x: [&[f32]; 4]) -> [[f32; 4]; 4] {
        super::avx512::rows_tokens(self, w, x)
    }
}

/// `[[w[0] · x[t] for t in 0..4], [w[1] · x[t] …]]`, each chunk of `w` loaded once.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn f32_rows_tokens_v3(simd: V3, w: [&[f32]; 2], x: [&[f32]; 4]) -> [[f32; 2]; 4] {
    let len = x
        .iter()
        .chain(&w)
        .fold(usize::MAX, |len, v| len.min(v.len()));
    let w_chunks = w.map(|w| w[..len].as_chunks::<8>().0);
    let x_chunks = x.map(|x| x[..len].as_chunks::<8>().0);
    let mut acc = [[simd.avx._mm256_setzero_ps(); 2]; 4];
    for i in 0..w_chunks[0].len() {
        let w: [__m256; 2] = [cast(w_chunks[0][i]), cast(w_chunks[1][i])];
        for (acc, x) in acc.iter_mut().zip(&x_chunks) {
            let x: __m256 = cast(x[i]);
            acc[0] = simd.fma._mm256_fmadd_ps(w[0], x, acc[0]);
            acc[1] = simd.fma._mm256_fmadd_ps(w[1], x, acc[1]);
        }
    }
    let done = w_chunks[0].len() * 8;
    let mut sums = [[0.0; 2]; 4];
    for t in 0..4 {
        for k in 0..2 {
            sums[t][k] = horizontal_sum(simd, acc[t][k])
                + f32_dot_scalar(&w[k][done..len], &x[t][done..len]);
        }
    }
    sums
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn dequantize_v3(simd: V3, row: Row<'_>, out: &mut [f32]) {
    let (out_blocks, _) = out.as_chunks_mut::<BLOCK>();
    match row {
        Row::Q4_1(row) => {
            let low_nibbles = simd.sse2._mm_set1_epi8(0x0F);
            for (((q, out), scale), min) in row
                .quants
                .iter()
                .zip(out_blocks)
                .zip(row.scales)
                .zip(row.mins)
            {
                let weights = q4_1_widen(simd, *q, low_nibbles);
                let (scale, min) = (
                    simd.avx._mm256_set1_ps(scale.get()),
                    simd.avx._mm256_set1_ps(min.get()),
                );
                let mut values = [simd.avx._mm256_setzero_ps(); 4];
                for (value, w) in values.iter_mut().zip(weights) {
                    *value = simd.fma._mm256_fmadd_ps(w, scale, min);
                }
                *out = cast(values);
            }
        }
        Row::Q8_0(row) => {
            for ((q, out), scale) in row.quants.iter().zip(out_blocks).zip(row.scales) {
                let weights = q8_0_widen(simd, *q);
                let scale = simd.avx._mm256_set1_ps(scale.get());
                let mut values = [simd.avx._mm256_setzero_ps(); 4];
                for (value, w) in values.iter_mut().zip(weights) {
                    *value = simd.avx._mm256_mul_ps(w, scale);
                }
                *out = cast(values);
            }
        }
        Row::F32(values) => out[..values.len()].copy_from_slice(values),
    }
}

/// A Q4_1 block's 32 quants as f32, in element order.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn q4_1_widen(simd: V3, q: [u8; 16], low_nibbles: __m128i) -> [__m256; 4] {
    let q: __m128i = cast(q);
    let low = simd.sse2._mm_and_si128(q, low_nibbles);
    let high = simd
        .sse2
        ._mm_and_si128(simd.sse2._mm_srli_epi16::<4>(q), low_nibbles);
    [
        widen_u8(simd, low),
        widen_u8(simd, simd.sse2._mm_srli_si128::<8>(low)),
        widen_u8(simd, high),
        widen_u8(simd, simd.sse2._mm_srli_si128::<8>(high)),
    ]
}

/// A Q8_0 block's 32 quants as f32, in element order.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn q8_0_widen(simd: V3, q: [i8; 32]) -> [__m256; 4] {
    let [low, high]: [__m128i; 2] = cast(q);
    [
        widen_i8(simd, low),
        widen_i8(simd, simd.sse2._mm_srli_si128::<8>(low)),
        widen_i8(simd, high),
        widen_i8(simd, simd.sse2._mm_srli_si128::<8>(high)),
    ]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::llama::blocks::{Half, Q4_1Row, Q8_0Row};
    use crate::llama::isa::each_available;

    /// Deterministic pseudo-random values in [-1, 1).
    pub(crate) fn values(seed: u64, len: usize) -> Vec<f32> {
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

    pub(crate) fn halves(seed: u64, len: usize) -> Vec<Half> {
        values(seed, len)
            .into_iter()
            .map(|v| Half(half::f16::from_f32(v).to_bits()))
            .collect()
    }

    #[test]
    fn halves_widen_exactly_like_the_half_crate() {
        for bits in 0..=u16::MAX {
            let reference = half::f16::from_bits(bits);
            if reference.is_finite() {
                assert_eq!(
                    Half(bits).get().to_bits(),
                    reference.to_f32().to_bits(),
                    "{bits:#x}"
                );
            }
        }
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
        let scales = halves(2, blocks);
        let mins = halves(3, blocks);
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
                scales[block].get() * f32::from(q) + mins[block].get()
            })
            .collect();
        let q8_weights: Vec<f32> = (0..blocks * BLOCK)
            .map(|i| scales[i / BLOCK].get() * f32::from(q8[i / BLOCK][i % BLOCK]))
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
            let tolerance = 1e-3 * expected.abs().max(1.0);
            assert!(
                (scalar - expected).abs() < tolerance,
                "{scalar} vs {expected}"
            );
            for isa in each_available() {
                let mut fast = [0.0];
                dot_rows(isa, |_| row, 0, x, &sums, &mut fast);
                assert!(
                    (fast[0] - expected).abs() < tolerance,
                    "{isa:?}: {} vs {expected}",
                    fast[0]
                );
            }
        }

        // Five tokens (a group of four and one more) against seven rows (four, a pair and
        // one more), each row dequantized once; every row kind.
        let tokens: Vec<Vec<f32>> = (10..15).map(|seed| values(seed, blocks * BLOCK)).collect();
        let token_refs: Vec<&[f32]> = tokens.iter().map(Vec::as_slice).collect();
        let f32_short = &f32_row[..blocks * BLOCK];
        let row_kinds = [
            (cases[0].0, q4_weights.as_slice()),
            (cases[1].0, q8_weights.as_slice()),
            (Row::F32(f32_short), f32_short),
        ];
        for isa in each_available() {
            for (row, weights) in row_kinds {
                let mut buffer = vec![0.0; ROWS_AT_ONCE * blocks * BLOCK];
                let mut out = vec![0.0; 5 * 7];
                dot_rows_tokens(isa, |_| row, 7, &token_refs, &mut buffer, &mut out);
                for (t, x) in tokens.iter().enumerate() {
                    let expected = plain(weights, x);
                    for got in &out[t * 7..t * 7 + 7] {
                        assert!(
                            (got - expected).abs() < 1e-3 * expected.abs().max(1.0),
                            "{isa:?}: {got} vs {expected}"
                        );
                    }
                }
                let mut dequantized = vec![0.0; blocks * BLOCK];
                dequantize(isa, row, &mut dequantized);
                assert!(
                    dequantized
                        .iter()
                        .zip(weights)
                        .all(|(a, b)| (a - b).abs() < 1e-6),
                    "{isa:?}"
                );
            }
        }
    }
}
