//! Attention of one token's heads that share a key/value head: for each,
//! `softmax(scale × query · keys) · values` over the positions it sees. On x86-64 with AVX2
//! and FMA the scores are computed eight keys at a time (eight independent sums, so the
//! multiply-adds pipeline instead of waiting on each other), the softmax's exponentials
//! eight at a time, and the weighted sum of values with one register per eight outputs,
//! position by position, head by head; elsewhere through portable scalar code. With
//! AVX-512 (`avx512`) sixteen lanes at a time, and the heads walk the keys and values
//! together in blocks that stay in the first-level cache, so the shared head's cache is
//! read from memory once, not once per head. A long prompt's attention grows with the
//! square of its length, so this is most of a 4,000-token prompt's time. Every path is
//! tested against the arithmetic in f64.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m256;

#[cfg(target_arch = "x86_64")]
use pulp::{
    cast,
    x86::{V3, V4},
};

use super::isa::InstructionSet;

#[cfg(target_arch = "x86_64")]
use super::horizontal_sums::{horizontal_sum, sums_of_eight};
#[cfg(target_arch = "x86_64")]
use super::kernels::f32_dot_v3;

/// For each head `h` of `queries` (heads of `width` values that share the key/value head
/// `layout` names): `out[h] = softmax(scale × queries[h] · keys) · values` over the
/// positions `layout` names in `keys` and `values`. `scores` is scratch space.
#[allow(clippy::too_many_arguments)]
pub(crate) fn attend(
    isa: InstructionSet,
    queries: &[f32],
    width: usize,
    keys: &[f32],
    values: &[f32],
    layout: Layout,
    scale: f32,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if isa == InstructionSet::Avx512
        && let Some(simd) = V4::try_new()
    {
        simd.vectorize(
            #[inline(always)]
            || {
                attend_v4(
                    simd, queries, width, keys, values, layout, scale, scores, out,
                )
            },
        );
        return;
    }
    let heads = queries.chunks(width).zip(out.chunks_mut(width));
    #[cfg(target_arch = "x86_64")]
    if isa <= InstructionSet::Avx2
        && let Some(simd) = V3::try_new()
    {
        simd.vectorize(
            #[inline(always)]
            || {
                for (query, out) in heads {
                    attend_v3(simd, query, keys, values, layout, scale, scores, out);
                }
            },
        );
        return;
    }
    let _ = isa;
    for (query, out) in heads {
        attend_scalar(query, keys, values, layout, scale, scores, out);
    }
}

/// Where each position's vector is in the cache, and how many positions are seen: the
/// first `visible` positions, whose vectors start `stride` apart at `offset`.
#[derive(Clone, Copy)]
pub(crate) struct Layout {
    pub(crate) stride: usize,
    pub(crate) offset: usize,
    pub(crate) visible: usize,
}

impl Layout {
    fn at(self, position: usize, width: usize) -> std::ops::Range<usize> {
        let start = position * self.stride + self.offset;
        start..start + width
    }
}

fn attend_scalar(
    query: &[f32],
    keys: &[f32],
    values: &[f32],
    layout: Layout,
    scale: f32,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let width = query.len();
    scores.clear();
    scores.extend((0..layout.visible).map(|p| {
        let key = &keys[layout.at(p, width)];
        query.iter().zip(key).map(|(q, k)| q * k).sum::<f32>() * scale
    }));
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0.0;
    for score in scores.iter_mut() {
        *score = (*score - max).exp();
        total += *score;
    }
    out.fill(0.0);
    for (p, weight) in scores.iter().enumerate() {
        for (o, v) in out.iter_mut().zip(&values[layout.at(p, width)]) {
            *o += weight / total * v;
        }
    }
}

/// Outputs per pass over the values: one register each for eight groups of eight.
#[cfg(target_arch = "x86_64")]
const OUTPUTS_PER_PASS: usize = 64;

#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn attend_v3(
    simd: V3,
    query: &[f32],
    keys: &[f32],
    values: &[f32],
    layout: Layout,
    scale: f32,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let width = query.len();
    let visible = layout.visible;
    scores.clear();
    scores.resize(visible, 0.0);
    let (query_chunks, query_rest) = query.as_chunks::<8>();
    // Scores, eight keys at a time: each chunk of the query is loaded once for eight keys.
    let whole = if query_rest.is_empty() {
        visible / 8 * 8
    } else {
        0
    };
    let scale_all = simd.avx._mm256_set1_ps(scale);
    for first in (0..whole).step_by(8) {
        let rows: [&[f32]; 8] = std::array::from_fn(|k| &keys[layout.at(first + k, width)]);
        let mut sums = [simd.avx._mm256_setzero_ps(); 8];
        for (c, chunk) in query_chunks.iter().enumerate() {
            let q: __m256 = cast(*chunk);
            for (sum, row) in sums.iter_mut().zip(&rows) {
                let (key, _) = row[c * 8..c * 8 + 8].as_chunks::<8>();
                *sum = simd.fma._mm256_fmadd_ps(q, cast(key[0]), *sum);
            }
        }
        let eight = simd.avx._mm256_mul_ps(sums_of_eight(simd, sums), scale_all);
        let (target, _) = scores[first..first + 8].as_chunks_mut::<8>();
        target[0] = cast(eight);
    }
    for p in whole..visible {
        scores[p] = f32_dot_v3(simd, query, &keys[layout.at(p, width)]) * scale;
    }

    let total = exp_in_place_v3(simd, scores);
    let inverse = 1.0 / total;

    // The weighted values: a pass over the positions per 64 outputs, each eight of them
    // summed in its own register.
    let mut done = 0;
    if width.is_multiple_of(OUTPUTS_PER_PASS) {
        let inverse_all = simd.avx._mm256_set1_ps(inverse);
        for start in (0..width).step_by(OUTPUTS_PER_PASS) {
            let mut sums = [simd.avx._mm256_setzero_ps(); 8];
            for (p, weight) in scores.iter().enumerate() {
                let weight = simd.avx._mm256_set1_ps(*weight);
                let from = p * layout.stride + layout.offset + start;
                let (row, _) = values[from..from + OUTPUTS_PER_PASS].as_chunks::<8>();
                for (sum, value) in sums.iter_mut().zip(row) {
                    *sum = simd.fma._mm256_fmadd_ps(weight, cast(*value), *sum);
                }
            }
            let (target, _) = out[start..start + OUTPUTS_PER_PASS].as_chunks_mut::<8>();
            for (target, sum) in target.iter_mut().zip(sums) {
                *target = cast(simd.avx._mm256_mul_ps(sum, inverse_all));
            }
        }
        done = width;
    }
    out[done..].fill(0.0);
    for (p, weight) in scores.iter().enumerate() {
        let row = &values[layout.at(p, width)];
        for (o, v) in out[done..].iter_mut().zip(&row[done..]) {
            *o += weight * inverse * v;
        }
    }
}

/// Positions whose keys (or values) every head of a group reads before the next ones: 64
/// positions of 64 values are 16 KB, so the group's other heads read them from the
/// first-level cache instead of from memory (a long prompt's keys and values are several
/// MB per layer).
#[cfg(target_arch = "x86_64")]
const POSITIONS_PER_BLOCK: usize = 64;

/// `attend_v3`'s steps sixteen lanes wide, for the heads that share one key/value head
/// together: scores eight keys at a time over sixteen-lane chunks of each query,
/// exponentials sixteen at a time, and the weighted values with even and odd positions
/// summed apart; keys and values are walked in blocks of [`POSITIONS_PER_BLOCK`] positions,
/// each block read by every head in turn.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn attend_v4(
    simd: V4,
    queries: &[f32],
    width: usize,
    keys: &[f32],
    values: &[f32],
    layout: Layout,
    scale: f32,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    use super::avx512;
    let heads = queries.len() / width;
    let visible = layout.visible;
    // Each head's scores, then each head's softmax normalizer.
    scores.clear();
    scores.resize(heads * (visible + 1), 0.0);
    let (rows, inverses) = scores.split_at_mut(heads * visible);
    let vectorized = width.is_multiple_of(OUTPUTS_PER_PASS);
    for block in (0..visible).step_by(POSITIONS_PER_BLOCK) {
        let end = (block + POSITIONS_PER_BLOCK).min(visible);
        let whole = if vectorized {
            block + (end - block) / 8 * 8
        } else {
            block
        };
        for (query, row) in queries.chunks(width).zip(rows.chunks_mut(visible)) {
            let (query_chunks, _) = query.as_chunks::<16>();
            for first in (block..whole).step_by(8) {
                let mut keys_of = [&[][..]; 8];
                for (k, key) in keys_of.iter_mut().enumerate() {
                    *key = &keys[layout.at(first + k, width)];
                }
                let eight = avx512::eight_scores(simd, query_chunks, keys_of, scale);
                row[first..first + 8].copy_from_slice(&eight);
            }
            for p in whole..end {
                row[p] = avx512::f32_dot(simd, query, &keys[layout.at(p, width)]) * scale;
            }
        }
    }
    for (row, inverse) in rows.chunks_mut(visible).zip(inverses.iter_mut()) {
        *inverse = 1.0 / avx512::exp_in_place(simd, row);
    }
    out.fill(0.0);
    let start = |p: usize| p * layout.stride + layout.offset;
    for block in (0..visible).step_by(POSITIONS_PER_BLOCK) {
        let end = (block + POSITIONS_PER_BLOCK).min(visible);
        for (row, out) in rows.chunks(visible).zip(out.chunks_mut(width)) {
            if vectorized {
                avx512::add_weighted_values(
                    simd,
                    &row[block..end],
                    values,
                    |p| start(block + p),
                    out,
                );
            } else {
                for (p, weight) in row[block..end].iter().enumerate() {
                    let value = &values[layout.at(block + p, width)];
                    for (o, v) in out.iter_mut().zip(value) {
                        *o += weight * v;
                    }
                }
            }
        }
    }
    for (out, inverse) in out.chunks_mut(width).zip(inverses.iter()) {
        for o in out {
            *o *= inverse;
        }
    }
}

/// `exp(score - max)` in place, eight at a time; returns their sum.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn exp_in_place_v3(simd: V3, scores: &mut [f32]) -> f32 {
    let (chunks, rest) = scores.as_chunks_mut::<8>();
    let mut max_all = simd.avx._mm256_set1_ps(f32::NEG_INFINITY);
    for chunk in chunks.iter() {
        max_all = simd.avx._mm256_max_ps(max_all, cast(*chunk));
    }
    let lanes: [f32; 8] = cast(max_all);
    let max = lanes
        .into_iter()
        .chain(rest.iter().copied())
        .fold(f32::NEG_INFINITY, f32::max);
    let max_all = simd.avx._mm256_set1_ps(max);
    let mut total_all = simd.avx._mm256_setzero_ps();
    for chunk in chunks.iter_mut() {
        let e = exp_v3(simd, simd.avx._mm256_sub_ps(cast(*chunk), max_all));
        total_all = simd.avx._mm256_add_ps(total_all, e);
        *chunk = cast(e);
    }
    let mut total = horizontal_sum(simd, total_all);
    for score in rest.iter_mut() {
        *score = (*score - max).exp();
        total += *score;
    }
    total
}

/// `eˣ` of eight values, relative error below 2e-7; below -87 it is 0 (a softmax's
/// arguments are at most 0).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn exp_v3(simd: V3, x: __m256) -> __m256 {
    use super::exp_constants::{LN_2_HIGH, LN_2_LOW, LOG2_E, ROUNDING, ROUNDING_BITS, TAYLOR};
    let (avx, avx2, fma) = (simd.avx, simd.avx2, simd.fma);
    let set = |v: f32| avx._mm256_set1_ps(v);
    let clamped = avx._mm256_max_ps(avx._mm256_min_ps(x, set(88.0)), set(-87.0));
    let shifted = fma._mm256_fmadd_ps(clamped, set(LOG2_E), set(ROUNDING));
    let k = avx._mm256_sub_ps(shifted, set(ROUNDING));
    let r = fma._mm256_fnmadd_ps(k, set(LN_2_HIGH), clamped);
    let r = fma._mm256_fnmadd_ps(k, set(LN_2_LOW), r);
    let mut p = set(TAYLOR[0]);
    for coefficient in &TAYLOR[1..] {
        p = fma._mm256_fmadd_ps(p, r, set(*coefficient));
    }
    // 2ᵏ from its exponent bits k + 127.
    let bits = avx2._mm256_sub_epi32(
        avx._mm256_castps_si256(shifted),
        avx._mm256_set1_epi32(ROUNDING_BITS - 127),
    );
    let two_to_k = avx._mm256_castsi256_ps(avx2._mm256_slli_epi32::<23>(bits));
    let e = avx._mm256_mul_ps(p, two_to_k);
    // Below -87 (a score far below the largest): 0.
    let kept = avx._mm256_cmp_ps::<{ std::arch::x86_64::_CMP_GE_OQ }>(x, set(-87.0));
    avx._mm256_and_ps(e, kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llama::isa::each_available;
    use crate::llama::kernels::tests::values;

    /// softmax(scale × q·k) · v in f64, the reference both paths are held to.
    fn reference(
        query: &[f32],
        keys: &[f32],
        values: &[f32],
        layout: Layout,
        scale: f32,
    ) -> Vec<f64> {
        let width = query.len();
        let scores: Vec<f64> = (0..layout.visible)
            .map(|p| {
                query
                    .iter()
                    .zip(&keys[layout.at(p, width)])
                    .map(|(a, b)| f64::from(*a) * f64::from(*b))
                    .sum::<f64>()
                    * f64::from(scale)
            })
            .collect();
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = scores.iter().map(|s| (s - max).exp()).sum();
        (0..width)
            .map(|i| {
                (0..layout.visible)
                    .map(|p| {
                        (scores[p] - max).exp() / total * f64::from(values[layout.at(p, width)][i])
                    })
                    .sum()
            })
            .collect()
    }

    /// Widths that take each branch (64 and 128: whole passes; 20: no whole chunks of keys;
    /// 72: chunks, but not whole passes), counts of positions with and without a remainder
    /// of eight, and scales that make the softmax flat or peaked.
    #[test]
    fn every_path_matches_the_arithmetic_in_f64() {
        for (width, stride, offset) in [(64, 192, 64), (128, 256, 128), (20, 48, 8), (72, 80, 0)] {
            for visible in [1, 7, 8, 9, 64, 65, 203] {
                for scale in [0.125, 2.0] {
                    let layout = Layout {
                        stride,
                        offset,
                        visible,
                    };
                    let seed = (width * 1000 + visible) as u64;
                    let query = values(seed, width);
                    let keys = values(seed + 1, stride * visible);
                    let cache_values = values(seed + 2, stride * visible);
                    let expected = reference(&query, &keys, &cache_values, layout, scale);
                    let mut scalar = vec![0.0; width];
                    attend_scalar(
                        &query,
                        &keys,
                        &cache_values,
                        layout,
                        scale,
                        &mut Vec::new(),
                        &mut scalar,
                    );
                    for (scalar, expected) in scalar.iter().zip(&expected) {
                        let case = format!("width {width}, visible {visible}, scale {scale}");
                        assert!((f64::from(*scalar) - expected).abs() < 1e-5, "{case}");
                    }
                    // Three heads sharing the key/value head: the second is `query`.
                    let mut queries = values(seed + 3, width);
                    queries.extend_from_slice(&query);
                    queries.extend(values(seed + 4, width));
                    let mut expected_all = Vec::new();
                    for head in queries.chunks(width) {
                        expected_all.extend(reference(head, &keys, &cache_values, layout, scale));
                    }
                    for isa in each_available() {
                        for heads in [1, 3] {
                            let queries = match heads {
                                1 => &query[..],
                                _ => &queries[..],
                            };
                            let expected = match heads {
                                1 => &expected[..],
                                _ => &expected_all[..],
                            };
                            let mut dispatched = vec![0.0; heads * width];
                            attend(
                                isa,
                                queries,
                                width,
                                &keys,
                                &cache_values,
                                layout,
                                scale,
                                &mut vec![1.0; 3],
                                &mut dispatched,
                            );
                            for (dispatched, expected) in dispatched.iter().zip(expected) {
                                let case = format!(
                                    "{isa:?}: {heads} heads, width {width}, visible {visible}, scale {scale}"
                                );
                                assert!((f64::from(*dispatched) - expected).abs() < 1e-5, "{case}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn eight_exponentials_match_the_library_function() {
        let Some(simd) = V3::try_new() else {
            eprintln!("skipped: this CPU has no AVX2 and FMA");
            return;
        };
        for i in (-17_400..=0).step_by(8) {
            let x: [f32; 8] = std::array::from_fn(|j| (i + j as i32) as f32 / 200.0);
            let got: [f32; 8] = cast(simd.vectorize(
                #[inline(always)]
                || exp_v3(simd, cast(x)),
            ));
            for (x, got) in x.iter().zip(got) {
                let expected = x.exp();
                assert!(
                    ((got - expected) / expected).abs() < 2e-7,
                    "exp({x}) = {got}, expected {expected}"
                );
            }
        }
        let low: [f32; 8] = cast(simd.vectorize(
            #[inline(always)]
            || exp_v3(simd, simd.avx._mm256_set1_ps(-90.0)),
        ));
        assert_eq!(low, [0.0; 8]);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sixteen_exponentials_match_the_library_function() {
        let Some(simd) = V4::try_new() else {
            eprintln!("skipped: this CPU has no AVX-512");
            return;
        };
        for i in (-17_400..=0).step_by(16) {
            let x: [f32; 16] = std::array::from_fn(|j| (i + j as i32) as f32 / 200.0);
            let got: [f32; 16] = cast(simd.vectorize(
                #[inline(always)]
                || super::super::avx512::exp(simd, cast(x)),
            ));
            for (x, got) in x.iter().zip(got) {
                let expected = x.exp();
                assert!(
                    ((got - expected) / expected).abs() < 2e-7,
                    "exp({x}) = {got}, expected {expected}"
                );
            }
        }
        let low: [f32; 16] = cast(simd.vectorize(
            #[inline(always)]
            || super::super::avx512::exp(simd, simd.avx512f._mm512_set1_ps(-90.0)),
        ));
        assert_eq!(low, [0.0; 16]);
    }
}
