//! The arithmetic of BERT's layer normalisation over rows (the residual added in the same
//! pass), as each build of the encoder's kernels compiles it. Each row's sums run in
//! independent lanes, so they vectorize; compiled with the encoder's other kernels for the
//! best CPU extensions present.

use crate::fastmath::{MulAdd, fold_lanes};

/// The parameters of one layer norm as a kernel reads them.
#[derive(Clone, Copy)]
pub(crate) struct NormParameters<'a> {
    pub(crate) weight: &'a [f32],
    pub(crate) bias: &'a [f32],
    pub(crate) eps: f32,
}

/// Each row of `x` (plus `residual`) normalised into `out`. Inlined into
/// [`run`](crate::precision::run)'s builds.
#[inline(always)]
pub(crate) fn normalize_rows<M: MulAdd>(
    x: &[f32],
    residual: Option<&[f32]>,
    parameters: NormParameters<'_>,
    out: &mut [f32],
) {
    let size = parameters.weight.len();
    for (row, out) in out.chunks_exact_mut(size).enumerate() {
        let x = &x[row * size..(row + 1) * size];
        match residual {
            Some(residual) => {
                let residual = &residual[row * size..(row + 1) * size];
                for ((out, &x), &r) in out.iter_mut().zip(x).zip(residual) {
                    *out = x + r;
                }
            }
            None => out.copy_from_slice(x),
        }
        let mean = fold_lanes(out, 0.0, |v| v, |a, b| a + b) / size as f32;
        for value in out.iter_mut() {
            *value -= mean;
        }
        let variance = fold_lanes(out, 0.0, |v| v * v, |a, b| a + b) / size as f32;
        let scale = 1.0 / (variance + parameters.eps).sqrt();
        for ((value, &weight), &bias) in out.iter_mut().zip(parameters.weight).zip(parameters.bias)
        {
            *value = M::mul_add(*value * scale, weight, bias);
        }
    }
}
