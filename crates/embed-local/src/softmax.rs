//! Attention's softmax with the padding mask applied in the same pass.

use candle_core::{Result, Tensor};

use crate::{
    cpu::with_values,
    fastmath::exp,
    parallel::for_each_chunk,
    precision::{Accelerator, Kernel, run},
};

/// Softmax over the last dimension of `scores` `(batch, heads, width, width)`, where keys
/// with `key_mask` `(batch · width)` 0 (padding) get no weight. Each row's exponentials use
/// the vectorized [`exp`].
pub(crate) fn masked_softmax(scores: &Tensor, key_mask: &[bool]) -> Result<Tensor> {
    let (batch, heads, queries, width) = scores.dims4()?;
    if key_mask.len() != batch * width {
        candle_core::bail!("a mask of {} for {batch} rows of {width}", key_mask.len());
    }
    // 0 for real keys, -∞ for padding: added to the scores, it zeroes their exponentials.
    let bias: Vec<f32> = key_mask
        .iter()
        .map(|&real| if real { 0.0 } else { f32::NEG_INFINITY })
        .collect();
    // One (text, head) block of `queries` rows at a time: its rows share the text's mask.
    let block = queries * width;
    let mut out = vec![0f32; batch * heads * block];
    let accelerated = Accelerator::best();
    with_values(scores, |scores| {
        for_each_chunk(scores, block, &mut out, block, |index, scores, out| {
            let b = index / heads;
            let bias = &bias[b * width..(b + 1) * width];
            run(accelerated, Kernel::Softmax { scores, bias, out });
        });
    })?;
    Tensor::from_vec(out, (batch, heads, queries, width), scores.device())
}

/// Softmax of each row of `bias.len()` scores plus `bias`, into `out`. Inlined into
/// [`run`]'s builds, so it is compiled for the best CPU extensions this one has.
#[inline(always)]
pub(crate) fn softmax_rows(scores: &[f32], bias: &[f32], out: &mut [f32]) {
    let width = bias.len();
    for (scores, out) in scores.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
        softmax_row(scores, bias, out);
    }
}

#[inline(always)]
fn softmax_row(scores: &[f32], bias: &[f32], out: &mut [f32]) {
    for ((out, &s), &b) in out.iter_mut().zip(scores).zip(bias) {
        *out = s + b;
    }
    let max = lanes(out, f32::NEG_INFINITY, |a, b| if b > a { b } else { a });
    if max == f32::NEG_INFINITY {
        // Every key is padding (never so in practice: [CLS] is real): no weight anywhere.
        out.fill(0.0);
        return;
    }
    for out in out.iter_mut() {
        *out = exp(*out - max);
    }
    let scale = 1.0 / lanes(out, 0.0, |a, b| a + b);
    for out in out.iter_mut() {
        *out *= scale;
    }
}

/// Folds `values` with `f` in 16 independent lanes, then the lanes together: the compiler
/// vectorizes this, where one running `f32` sum or maximum must stay in order (and scalar).
#[inline(always)]
fn lanes(values: &[f32], start: f32, f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut lanes = [start; 16];
    let (chunks, rest) = values.as_chunks::<16>();
    for chunk in chunks {
        for (lane, &value) in lanes.iter_mut().zip(chunk) {
            *lane = f(*lane, value);
        }
    }
    rest.iter().chain(&lanes).fold(start, |a, &b| f(a, b))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use candle_core::Device;

    use super::*;

    #[test]
    fn matches_candle_softmax_with_the_mask_as_a_large_negative_bias() {
        let device = &Device::Cpu;
        let (batch, heads, width) = (3, 2, 5);
        let scores = Tensor::randn(0f32, 3.0, (batch, heads, width, width), device).unwrap();
        let mask = [
            true, true, true, true, true, //
            true, true, true, false, false, //
            true, false, false, false, false,
        ];
        let got = masked_softmax(&scores, &mask).unwrap();
        let bias: Vec<f32> = mask.iter().map(|&m| if m { 0.0 } else { -1e9 }).collect();
        let bias = Tensor::from_vec(bias, (batch, 1, 1, width), device).unwrap();
        let expected =
            candle_nn::ops::softmax_last_dim(&scores.broadcast_add(&bias).unwrap()).unwrap();
        let difference = (got - expected)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(difference < 1e-6, "max difference {difference}");
    }

    #[test]
    fn a_row_of_padding_only_gets_no_weight() {
        let scores = Tensor::ones((1, 1, 2, 2), candle_core::DType::F32, &Device::Cpu).unwrap();
        let got = masked_softmax(&scores, &[false, false]).unwrap();
        assert_eq!(
            got.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            [0.0; 4]
        );
    }

    #[test]
    fn a_wrong_mask_length_is_an_error() {
        let scores = Tensor::zeros((1, 1, 2, 2), candle_core::DType::F32, &Device::Cpu).unwrap();
        assert!(masked_softmax(&scores, &[true]).is_err());
    }
}
