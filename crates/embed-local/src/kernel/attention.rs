//! One text's self-attention, as each build of the encoder's kernels compiles it. Per head,
//! the keys are laid out in panels of `KEYS` positions (`KEYS × QUERIES` sums stay in
//! registers for the whole head width), each row's softmax uses the vectorized [`exp`], and
//! the values are weighted into `VALUE_ROWS` rows × `DIMS` outputs at a time; each build
//! sizes the blocks for its registers. The plain Rust here is compiled with the encoder's
//! other kernels for the best CPU extensions present ([`run`](crate::precision::run)), so
//! it runs 8 lanes wide with fused multiply-adds on AVX2, 16 on AVX-512, and as compiled
//! for the baseline CPU elsewhere.

use crate::fastmath::{MulAdd, exp, fold_lanes};

/// Output features of a head summed at once per row (two AVX-512 vectors, four AVX2 ones).
const DIMS: usize = 32;

/// Attention of one text's `tokens` rows of fused projections `qkv` into `out`
/// `(tokens, hidden)`, in blocks sized for the build's registers: `QUERIES × KEYS` scores
/// and `VALUE_ROWS × DIMS` weighted values stay in registers while they are summed.
/// Inlined into [`run`](crate::precision::run)'s builds, so it is compiled for the best CPU
/// extensions this one has.
#[inline(always)]
pub(crate) fn attend_text<
    M: MulAdd,
    const QUERIES: usize,
    const KEYS: usize,
    const VALUE_ROWS: usize,
>(
    qkv: &[f32],
    tokens: usize,
    heads: usize,
    out: &mut [f32],
) {
    if tokens == 0 {
        return;
    }
    let hidden = out.len() / tokens;
    let width = 3 * hidden;
    let head = hidden / heads;
    let panels = tokens.div_ceil(KEYS);
    let padded = panels * KEYS;
    // Keys transposed into panels: `keys[panel · head + d][k]` is feature `d` of position
    // `panel · KEYS + k` (zero beyond the text, scored but never weighed).
    let mut keys = vec![[0f32; KEYS]; panels * head];
    let mut scores = vec![[0f32; KEYS]; QUERIES * panels];
    let rows = || qkv.chunks_exact(width).take(tokens);
    for h in 0..heads {
        let (query_at, key_at, value_at) = (h * head, hidden + h * head, 2 * hidden + h * head);
        for (position, row) in rows().enumerate() {
            let panel = &mut keys[(position / KEYS) * head..][..head];
            for (slot, &key) in panel.iter_mut().zip(&row[key_at..key_at + head]) {
                slot[position % KEYS] = key;
            }
        }
        for first in (0..tokens).step_by(QUERIES) {
            let count = QUERIES.min(tokens - first);
            // The queries in place; past the text's last row, the last again (its scores
            // are computed and dropped).
            let mut queries: [&[f32]; QUERIES] = [&[]; QUERIES];
            for (r, query) in queries.iter_mut().enumerate() {
                let row = (first + r.min(count - 1)) * width + query_at;
                *query = &qkv[row..row + head];
            }
            score::<M, QUERIES, KEYS>(&queries, &keys, head, &mut scores);
            for r in 0..count {
                let row = scores[r * panels..(r + 1) * panels].as_flattened_mut();
                softmax_in_place::<M>(&mut row[..tokens]);
            }
            let scores = scores.as_flattened();
            for r in (0..count).step_by(VALUE_ROWS) {
                let together = VALUE_ROWS.min(count - r);
                // Past the block's last row, its weights again (the sums are dropped).
                let mut weights: [&[f32]; VALUE_ROWS] = [&[]; VALUE_ROWS];
                for (i, weights) in weights.iter_mut().enumerate() {
                    let at = (r + i.min(together - 1)) * padded;
                    *weights = &scores[at..at + tokens];
                }
                let values = rows().map(|row| &row[value_at..value_at + head]);
                for (block, start) in (0..head).step_by(DIMS).enumerate() {
                    let width = DIMS.min(head - start);
                    let sums = if width == DIMS {
                        weigh::<M, VALUE_ROWS>(&weights, values.clone(), block)
                    } else {
                        weigh_partial::<M, VALUE_ROWS>(&weights, values.clone(), start)
                    };
                    for (i, sums) in sums.iter().take(together).enumerate() {
                        let at = (first + r + i) * hidden + query_at + start;
                        out[at..at + width].copy_from_slice(&sums[..width]);
                    }
                }
            }
        }
    }
}

/// The scores `queries · keys` of `QUERIES` queries (each a head's features) against every
/// panel of keys, into `scores[r · panels + panel]`: `QUERIES × KEYS` sums in registers.
#[inline(always)]
fn score<M: MulAdd, const QUERIES: usize, const KEYS: usize>(
    queries: &[&[f32]; QUERIES],
    keys: &[[f32; KEYS]],
    head: usize,
    scores: &mut [[f32; KEYS]],
) {
    let panels = keys.len() / head;
    for (panel, keys) in keys.chunks_exact(head).enumerate() {
        let mut sums = [[0f32; KEYS]; QUERIES];
        for (d, key) in keys.iter().enumerate() {
            for (sums, query) in sums.iter_mut().zip(queries) {
                let q = query[d];
                for (sum, &k) in sums.iter_mut().zip(key) {
                    *sum = M::mul_add(q, k, *sum);
                }
            }
        }
        for (r, sums) in sums.into_iter().enumerate() {
            scores[r * panels + panel] = sums;
        }
    }
}

/// `Σ weights[i][p] · values[p]` over features `block · DIMS ..` of the values, for each of
/// `ROWS` rows of weights: `ROWS × DIMS` sums in registers over all positions.
#[inline(always)]
fn weigh<'a, M: MulAdd, const ROWS: usize>(
    weights: &[&[f32]; ROWS],
    values: impl Iterator<Item = &'a [f32]>,
    block: usize,
) -> [[f32; DIMS]; ROWS] {
    let mut sums = [[0f32; DIMS]; ROWS];
    for (position, value) in values.enumerate() {
        let (value, _) = value.as_chunks::<DIMS>();
        let value = &value[block];
        let mut w = [0f32; ROWS];
        for (w, weights) in w.iter_mut().zip(weights) {
            *w = weights[position];
        }
        for (sums, &w) in sums.iter_mut().zip(&w) {
            for (sum, &v) in sums.iter_mut().zip(value) {
                *sum = M::mul_add(w, v, *sum);
            }
        }
    }
    sums
}

/// [`weigh`] for the last features of a head whose width is not a multiple of `DIMS`
/// (none of the embedded models has one), from feature `start` on.
#[inline(always)]
fn weigh_partial<'a, M: MulAdd, const ROWS: usize>(
    weights: &[&[f32]; ROWS],
    values: impl Iterator<Item = &'a [f32]>,
    start: usize,
) -> [[f32; DIMS]; ROWS] {
    let mut sums = [[0f32; DIMS]; ROWS];
    for (position, value) in values.enumerate() {
        for (sums, weights) in sums.iter_mut().zip(weights) {
            let w = weights[position];
            for (sum, &v) in sums.iter_mut().zip(&value[start..]) {
                *sum = M::mul_add(w, v, *sum);
            }
        }
    }
    sums
}

/// Softmax of `row` in place.
#[inline(always)]
fn softmax_in_place<M: MulAdd>(row: &mut [f32]) {
    let max = fold_lanes(
        row,
        f32::NEG_INFINITY,
        |v| v,
        |a, b| if b > a { b } else { a },
    );
    for value in row.iter_mut() {
        *value = exp::<M>(*value - max);
    }
    let scale = 1.0 / fold_lanes(row, 0.0, |v| v, |a, b| a + b);
    for value in row.iter_mut() {
        *value *= scale;
    }
}
