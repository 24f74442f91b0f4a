//! The kernels compiled for AVX-512 (x86-64-v4): the twins of the AVX2 ones in `kernels`
//! (prompt products over dequantized rows), `int16` (a generated token's products) and
//! `attend` (attention), sixteen lanes wide instead of eight. On cores with full-width
//! 512-bit units that is twice the multiply-adds per instruction; elsewhere it still halves
//! the instructions decoded. Each is tested against the portable reference in its own
//! module's tests, on CPUs that have AVX-512 (skipped with a message elsewhere).

use std::arch::x86_64::{__m128i, __m256i, __m512, __m512i};

use pulp::{cast, x86::V4};

use super::blocks::{BLOCK, Half, Int16Activations, Q4_1Row, Q8_0Row, Row};

/// `Σ a·b` over the shorter of the two.
#[inline(always)]
pub(crate) fn f32_dot(simd: V4, a: &[f32], b: &[f32]) -> f32 {
    let len = a.len().min(b.len());
    let (a_chunks, a_rest) = a[..len].as_chunks::<16>();
    let (b_chunks, b_rest) = b[..len].as_chunks::<16>();
    let f = simd.avx512f;
    // Two sums, so consecutive multiply-adds do not wait on each other.
    let mut acc = [f._mm512_setzero_ps(); 2];
    let (a_pairs, a_last) = a_chunks.as_chunks::<2>();
    let (b_pairs, b_last) = b_chunks.as_chunks::<2>();
    for (a, b) in a_pairs.iter().zip(b_pairs) {
        acc[0] = f._mm512_fmadd_ps(cast(a[0]), cast(b[0]), acc[0]);
        acc[1] = f._mm512_fmadd_ps(cast(a[1]), cast(b[1]), acc[1]);
    }
    for (a, b) in a_last.iter().zip(b_last) {
        acc[0] = f._mm512_fmadd_ps(cast(*a), cast(*b), acc[0]);
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(a, b)| a * b).sum();
    f._mm512_reduce_add_ps(f._mm512_add_ps(acc[0], acc[1])) + tail
}

/// `[[w[r] · x[t] for r in 0..R] for t in 0..4]`, sixteen lanes at a time, every chunk of
/// a row and of a token loaded once.
#[inline(always)]
pub(crate) fn rows_tokens<const R: usize>(
    simd: V4,
    w: [&[f32]; R],
    x: [&[f32]; 4],
) -> [[f32; R]; 4] {
    let f = simd.avx512f;
    let mut len = usize::MAX;
    for v in x.iter().chain(&w) {
        len = len.min(v.len());
    }
    let mut w_chunks = [&[][..]; R];
    for (chunks, w) in w_chunks.iter_mut().zip(&w) {
        *chunks = w[..len].as_chunks::<16>().0;
    }
    let mut x_chunks = [&[][..]; 4];
    for (chunks, x) in x_chunks.iter_mut().zip(&x) {
        *chunks = x[..len].as_chunks::<16>().0;
    }
    let mut acc = [[f._mm512_setzero_ps(); R]; 4];
    for i in 0..w_chunks[0].len() {
        let mut rows = [f._mm512_setzero_ps(); R];
        for (row, chunks) in rows.iter_mut().zip(&w_chunks) {
            *row = cast(chunks[i]);
        }
        for (acc, chunks) in acc.iter_mut().zip(&x_chunks) {
            let x: __m512 = cast(chunks[i]);
            for (acc, row) in acc.iter_mut().zip(rows) {
                *acc = f._mm512_fmadd_ps(row, x, *acc);
            }
        }
    }
    let done = w_chunks[0].len() * 16;
    let mut sums = [[0.0; R]; 4];
    for t in 0..4 {
        for k in 0..R {
            let mut tail = 0.0;
            for (a, b) in w[k][done..len].iter().zip(&x[t][done..len]) {
                tail += a * b;
            }
            sums[t][k] = f._mm512_reduce_add_ps(acc[t][k]) + tail;
        }
    }
    sums
}

/// Sixteen bytes widened to sixteen f32, as unsigned or signed.
#[inline(always)]
fn widen_u8(simd: V4, bytes: __m128i) -> __m512 {
    let f = simd.avx512f;
    f._mm512_cvtepi32_ps(f._mm512_cvtepu8_epi32(bytes))
}

#[inline(always)]
fn widen_i8(simd: V4, bytes: __m128i) -> __m512 {
    let f = simd.avx512f;
    f._mm512_cvtepi32_ps(f._mm512_cvtepi8_epi32(bytes))
}

/// A Q4_1 block's quants as bytes: elements 0..16 (the low nibbles), then 16..32.
#[inline(always)]
fn q4_1_nibbles(simd: V4, q: [u8; 16]) -> [__m128i; 2] {
    let sse2 = simd.sse2;
    let q: __m128i = cast(q);
    let low_nibbles = sse2._mm_set1_epi8(0x0F);
    [
        sse2._mm_and_si128(q, low_nibbles),
        sse2._mm_and_si128(sse2._mm_srli_epi16::<4>(q), low_nibbles),
    ]
}

/// Row `row` as f32 into `out`.
#[inline(always)]
pub(crate) fn dequantize(simd: V4, row: Row<'_>, out: &mut [f32]) {
    let f = simd.avx512f;
    let (out_blocks, _) = out.as_chunks_mut::<BLOCK>();
    match row {
        Row::Q4_1(row) => {
            let blocks = row.quants.iter().zip(row.scales).zip(row.mins);
            for (((q, scale), min), out) in blocks.zip(out_blocks) {
                let [low, high] = q4_1_nibbles(simd, *q);
                let (scale, min) = (f._mm512_set1_ps(scale.get()), f._mm512_set1_ps(min.get()));
                let values: [__m512; 2] = [
                    f._mm512_fmadd_ps(widen_u8(simd, low), scale, min),
                    f._mm512_fmadd_ps(widen_u8(simd, high), scale, min),
                ];
                *out = cast(values);
            }
        }
        Row::Q8_0(row) => {
            for ((q, scale), out) in row.quants.iter().zip(row.scales).zip(out_blocks) {
                let [low, high]: [__m128i; 2] = cast(*q);
                let scale = f._mm512_set1_ps(scale.get());
                let values: [__m512; 2] = [
                    f._mm512_mul_ps(widen_i8(simd, low), scale),
                    f._mm512_mul_ps(widen_i8(simd, high), scale),
                ];
                *out = cast(values);
            }
        }
        Row::F32(values) => out[..values.len()].copy_from_slice(values),
    }
}

/// `acc + scale × Σ w·x` over a block of 32 16-bit weights in element order. Each 32-bit
/// lane sums two products of at most 128 × 32767, so nothing overflows and the conversion
/// to f32 is exact.
#[inline(always)]
fn add_block(simd: V4, acc: __m512, scale: f32, weights: __m512i, x: &[i16; BLOCK]) -> __m512 {
    let f = simd.avx512f;
    let sums = simd.avx512bw._mm512_madd_epi16(weights, cast(*x));
    f._mm512_fmadd_ps(f._mm512_set1_ps(scale), f._mm512_cvtepi32_ps(sums), acc)
}

/// A Q4_1 block's 32 quants as 16-bit values, in element order.
#[inline(always)]
fn q4_1_words(simd: V4, q: [u8; 16]) -> __m512i {
    let bytes: __m256i = cast(q4_1_nibbles(simd, q));
    simd.avx512bw._mm512_cvtepu8_epi16(bytes)
}

/// A Q8_0 block's 32 quants as 16-bit values.
#[inline(always)]
fn q8_0_words(simd: V4, q: [i8; 32]) -> __m512i {
    simd.avx512bw._mm512_cvtepi8_epi16(cast(q))
}

/// Sixteen half-precision values widened at once (`vcvtph2ps`, exact). A fixed-size copy
/// compiles to two moves; a variable-length one would call `memmove`.
#[inline(always)]
fn widen_halves(simd: V4, halves: &[Half; 16]) -> __m512 {
    let mut bits = [0u16; 16];
    for (bits, half) in bits.iter_mut().zip(halves) {
        *bits = half.0;
    }
    simd.avx512f._mm512_cvtph_ps(cast(bits))
}

/// `Σ_b w_scale[b] × x_scale[b] × (words(q[b]) · x[b])` over a row's blocks, plus
/// `Σ_b min[b] × x_sum[b]` when the row has minimums (Q4_1). The scales' products are
/// computed sixteen blocks at a time (the rest, fewer than sixteen, one by one); the
/// blocks go two at a time into two sums, so consecutive blocks do not wait on each other.
#[inline(always)]
fn int16_blocks<Q: Copy>(
    simd: V4,
    quants: &[Q],
    scales: &[Half],
    mins: Option<&[Half]>,
    x: &Int16Activations,
    words: impl Fn(Q) -> __m512i,
) -> f32 {
    let f = simd.avx512f;
    let mut acc = [f._mm512_setzero_ps(); 2];
    let mut minimums = f._mm512_setzero_ps();
    let (x_quants, x_scales, x_sums) = (x.quants(), x.scales(), x.sums());
    let whole = quants.len() / 16 * 16;
    for start in (0..whole).step_by(16) {
        let (w_scales, _) = scales[start..start + 16].as_chunks::<16>();
        let (xs, _) = x_scales[start..start + 16].as_chunks::<16>();
        let products: [f32; 16] =
            cast(f._mm512_mul_ps(widen_halves(simd, &w_scales[0]), cast(xs[0])));
        if let Some(mins) = mins {
            let (mins, _) = mins[start..start + 16].as_chunks::<16>();
            let (sums, _) = x_sums[start..start + 16].as_chunks::<16>();
            minimums = f._mm512_fmadd_ps(widen_halves(simd, &mins[0]), cast(sums[0]), minimums);
        }
        for b in (start..start + 16).step_by(2) {
            let (i, j) = (b - start, b + 1 - start);
            acc[0] = add_block(simd, acc[0], products[i], words(quants[b]), &x_quants[b]);
            acc[1] = add_block(
                simd,
                acc[1],
                products[j],
                words(quants[b + 1]),
                &x_quants[b + 1],
            );
        }
    }
    let mut rest_minimums = 0.0;
    for b in whole..quants.len() {
        let product = scales[b].get() * x_scales[b];
        acc[b % 2] = add_block(simd, acc[b % 2], product, words(quants[b]), &x_quants[b]);
        if let Some(mins) = mins {
            rest_minimums += mins[b].get() * x_sums[b];
        }
    }
    f._mm512_reduce_add_ps(f._mm512_add_ps(f._mm512_add_ps(acc[0], acc[1]), minimums))
        + rest_minimums
}

/// A Q4_1 row times a token's 16-bit activations.
#[inline(always)]
pub(crate) fn q4_1_int16(simd: V4, row: Q4_1Row<'_>, x: &Int16Activations) -> f32 {
    int16_blocks(simd, row.quants, row.scales, Some(row.mins), x, |q| {
        q4_1_words(simd, q)
    })
}

/// A Q8_0 row times a token's 16-bit activations.
#[inline(always)]
pub(crate) fn q8_0_int16(simd: V4, row: Q8_0Row<'_>, x: &Int16Activations) -> f32 {
    int16_blocks(simd, row.quants, row.scales, None, x, |q| {
        q8_0_words(simd, q)
    })
}

/// Attention's scores: `scale × query · key` for `keys.len()` keys, eight at a time, each
/// eight sums of sixteen lanes folded to one register of eight scores.
#[inline(always)]
pub(crate) fn eight_scores(
    simd: V4,
    query: &[[f32; 16]],
    keys: [&[f32]; 8],
    scale: f32,
) -> [f32; 8] {
    let f = simd.avx512f;
    let mut sums = [f._mm512_setzero_ps(); 8];
    for (c, chunk) in query.iter().enumerate() {
        let q: __m512 = cast(*chunk);
        for (sum, key) in sums.iter_mut().zip(&keys) {
            let (key, _) = key[c * 16..c * 16 + 16].as_chunks::<16>();
            *sum = f._mm512_fmadd_ps(q, cast(key[0]), *sum);
        }
    }
    // A loop, not `map`: the closure would be called out of line, without AVX-512.
    let mut halves = [simd.avx._mm256_setzero_ps(); 8];
    for (half, sum) in halves.iter_mut().zip(sums) {
        *half = simd.avx._mm256_add_ps(
            f._mm512_castps512_ps256(sum),
            simd.avx512dq._mm512_extractf32x8_ps::<1>(sum),
        );
    }
    let eight = super::horizontal_sums::sums_of_eight(*simd, halves);
    cast(
        simd.avx
            ._mm256_mul_ps(eight, simd.avx._mm256_set1_ps(scale)),
    )
}

/// `exp(score - max)` in place, sixteen at a time; returns their sum.
#[inline(always)]
pub(crate) fn exp_in_place(simd: V4, scores: &mut [f32]) -> f32 {
    let f = simd.avx512f;
    let (chunks, rest) = scores.as_chunks_mut::<16>();
    let mut max_all = f._mm512_set1_ps(f32::NEG_INFINITY);
    for chunk in chunks.iter() {
        max_all = f._mm512_max_ps(max_all, cast(*chunk));
    }
    let max = rest
        .iter()
        .copied()
        .fold(f._mm512_reduce_max_ps(max_all), f32::max);
    let max_all = f._mm512_set1_ps(max);
    let mut total_all = f._mm512_setzero_ps();
    for chunk in chunks.iter_mut() {
        let e = exp(simd, f._mm512_sub_ps(cast(*chunk), max_all));
        total_all = f._mm512_add_ps(total_all, e);
        *chunk = cast(e);
    }
    let mut total = f._mm512_reduce_add_ps(total_all);
    for score in rest.iter_mut() {
        *score = (*score - max).exp();
        total += *score;
    }
    total
}

/// `eˣ` of sixteen values: `attend`'s eight-lane function, the same steps and constants.
#[inline(always)]
pub(crate) fn exp(simd: V4, x: __m512) -> __m512 {
    use super::exp_constants as c;
    let f = simd.avx512f;
    let set = |v: f32| f._mm512_set1_ps(v);
    let clamped = f._mm512_max_ps(f._mm512_min_ps(x, set(88.0)), set(-87.0));
    let shifted = f._mm512_fmadd_ps(clamped, set(c::LOG2_E), set(c::ROUNDING));
    let k = f._mm512_sub_ps(shifted, set(c::ROUNDING));
    let r = f._mm512_fnmadd_ps(k, set(c::LN_2_HIGH), clamped);
    let r = f._mm512_fnmadd_ps(k, set(c::LN_2_LOW), r);
    let mut p = set(c::TAYLOR[0]);
    for coefficient in &c::TAYLOR[1..] {
        p = f._mm512_fmadd_ps(p, r, set(*coefficient));
    }
    let bits = f._mm512_sub_epi32(
        f._mm512_castps_si512(shifted),
        f._mm512_set1_epi32(c::ROUNDING_BITS - 127),
    );
    let two_to_k = f._mm512_castsi512_ps(f._mm512_slli_epi32::<23>(bits));
    let e = f._mm512_mul_ps(p, two_to_k);
    let kept = f._mm512_cmp_ps_mask::<{ std::arch::x86_64::_CMP_GE_OQ }>(x, set(-87.0));
    f._mm512_maskz_mov_ps(kept, e)
}

/// `out[i] += Σ_p weight[p] × values[p][i]` for a width that is whole passes of 64
/// outputs: four registers per pass, and even and odd positions summed apart, so eight sums
/// are in flight.
#[inline(always)]
pub(crate) fn add_weighted_values(
    simd: V4,
    weights: &[f32],
    values: &[f32],
    row_start: impl Fn(usize) -> usize,
    out: &mut [f32],
) {
    const PASS: usize = 64;
    let f = simd.avx512f;
    let load = |p: usize, start: usize| -> [__m512; 4] {
        let from = row_start(p) + start;
        let (row, _) = values[from..from + PASS].as_chunks::<16>();
        [cast(row[0]), cast(row[1]), cast(row[2]), cast(row[3])]
    };
    for start in (0..out.len()).step_by(PASS) {
        let mut sums = [[f._mm512_setzero_ps(); 4]; 2];
        let (pairs, last) = weights.as_chunks::<2>();
        for (pair, w) in pairs.iter().enumerate() {
            for (half, sums) in sums.iter_mut().enumerate() {
                let weight = f._mm512_set1_ps(w[half]);
                let row = load(2 * pair + half, start);
                for (sum, value) in sums.iter_mut().zip(row) {
                    *sum = f._mm512_fmadd_ps(weight, value, *sum);
                }
            }
        }
        if let [w] = last {
            let weight = f._mm512_set1_ps(*w);
            let row = load(weights.len() - 1, start);
            for (sum, value) in sums[0].iter_mut().zip(row) {
                *sum = f._mm512_fmadd_ps(weight, value, *sum);
            }
        }
        let (target, _) = out[start..start + PASS].as_chunks_mut::<16>();
        for ((target, even), odd) in target.iter_mut().zip(sums[0]).zip(sums[1]) {
            let total = f._mm512_add_ps(f._mm512_add_ps(even, odd), cast(*target));
            *target = cast(total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every finite half, sixteen at a time, widened as `Half::get` widens it.
    #[test]
    fn sixteen_halves_widen_exactly() {
        let Some(simd) = V4::try_new() else {
            eprintln!("skipped: this CPU has no AVX-512");
            return;
        };
        let all: Vec<Half> = (0..=u16::MAX).map(Half).collect();
        let (chunks, _) = all.as_chunks::<16>();
        for chunk in chunks {
            let got: [f32; 16] = cast(simd.vectorize(
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
