//! A dense layer with 8-bit weights, applied to candle tensors: its rows in tiles of `MR`,
//! run in parallel, each through [`run`] on the kernel the layer was quantized for.

use candle_core::{Result, Tensor, bail};

use super::{
    gemm::{Activation, MR, PackedWeights},
    quantize::{Levels, quantize_weights},
};
use crate::{
    cpu::with_values,
    kernel::Kernel,
    parallel::for_each_chunk_with,
    precision::{Accelerator, run},
};

/// `y = act(x · wᵀ + b)` with `w` quantized to 8 bits per output feature at load.
pub(crate) struct Int8Linear {
    weights: PackedWeights,
    /// The VNNI or AVX2 kernel, or the portable one (`None`: the same sums, much slower).
    accelerated: Option<Accelerator>,
}

impl Int8Linear {
    /// Quantizes `weight` `(features, depth)` for the kernel of `accelerated` and keeps
    /// `bias` `(features)` as is.
    pub(crate) fn new(
        weight: &Tensor,
        bias: &Tensor,
        activation: Activation,
        accelerated: Option<Accelerator>,
    ) -> Result<Self> {
        let levels = match accelerated {
            Some(Accelerator::Avx2) => Levels::AVX2,
            Some(Accelerator::Avx512Vnni) | None => Levels::FULL,
        };
        Self::with_levels(weight, bias, activation, accelerated, levels)
    }

    /// As [`Self::new`], with the quantization scheme chosen apart from the kernel (the
    /// tests run the portable kernel on each accelerated kernel's scheme).
    fn with_levels(
        weight: &Tensor,
        bias: &Tensor,
        activation: Activation,
        accelerated: Option<Accelerator>,
        levels: Levels,
    ) -> Result<Self> {
        let (features, depth) = weight.dims2()?;
        let bias = bias.to_vec1::<f32>()?;
        if bias.len() != features {
            bail!("a bias of {} for {features} features", bias.len());
        }
        let values = weight.flatten_all()?.to_vec1::<f32>()?;
        let quantized = quantize_weights(&values, features, depth, levels);
        Ok(Self {
            weights: PackedWeights::new(quantized, features, depth, bias, activation, levels),
            accelerated,
        })
    }

    /// `x` `(rows, depth)` → `(rows, features)`.
    pub(crate) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (rows, _) = x.dims2()?;
        let mut out = vec![0f32; rows * self.weights.features];
        with_values(x, |x| self.forward_into(x, &mut out))??;
        Tensor::from_vec(out, (rows, self.weights.features), x.device())
    }

    /// Rows of `depth` values in `x` → the same number of rows of `features` in `out`.
    pub(crate) fn forward_into(&self, x: &[f32], out: &mut [f32]) -> Result<()> {
        let (depth, features) = (self.weights.depth, self.weights.features);
        if depth == 0 || !x.len().is_multiple_of(depth) {
            bail!("an input of {} values for a layer of {depth}", x.len());
        }
        if out.len() != x.len() / depth * features {
            bail!(
                "{} outputs for {} rows of {features}",
                out.len(),
                x.len() / depth
            );
        }
        multiply(x, &self.weights, out, self.accelerated);
        Ok(())
    }
}

/// `out (rows, features) = act(x (rows, depth) · wᵀ + bias)`, with `x` quantized per row, on
/// the kernel of `accelerated` (the portable one for `None`).
fn multiply(x: &[f32], weights: &PackedWeights, out: &mut [f32], accelerated: Option<Accelerator>) {
    let (depth, features) = (weights.depth, weights.features);
    for_each_chunk_with(
        x,
        MR * depth,
        out,
        MR * features,
        || vec![0u8; MR * weights.padded_depth],
        |quantized, x, out| {
            run(
                accelerated,
                Kernel::Tile {
                    x,
                    weights,
                    quantized,
                    out,
                },
            );
        },
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use candle_core::{Device, Module};

    use super::*;

    /// The 8-bit layer is within the quantization error of the f32 layer, on each scheme (all
    /// levels for VNNI, fewer weight levels for AVX2) and each kernel this CPU has, with and
    /// without the fused GELU, for shapes that are not multiples of the tile (rows), panel
    /// (features) or group (depth) sizes, or deeper than a tile kept on the stack; each
    /// accelerated kernel agrees with the portable one on its scheme to float rounding
    /// (their integer sums are identical: `precision::tests` checks them bit for bit).
    #[test]
    fn matches_the_f32_layer_within_quantization_error() {
        let device = &Device::Cpu;
        for (rows, features, depth) in [
            (21, 100, 38),
            (8, 48, 4),
            (1, 5, 3),
            (64, 384, 384),
            (9, 50, 1601),
        ] {
            let weight = Tensor::randn(0f32, 0.05, (features, depth), device).unwrap();
            let bias = Tensor::randn(0f32, 0.1, features, device).unwrap();
            let x = Tensor::randn(0f32, 1.0, (rows, depth), device).unwrap();
            let linear = candle_nn::Linear::new(weight.clone(), Some(bias.clone()));
            for activation in [Activation::None, Activation::Gelu] {
                let expected = linear.forward(&x).unwrap();
                let expected = match activation {
                    Activation::None => expected,
                    Activation::Gelu => expected.gelu_erf().unwrap(),
                };
                let expected = expected.to_vec2::<f32>().unwrap();
                for accelerator in [Accelerator::Avx512Vnni, Accelerator::Avx2] {
                    let fast =
                        Int8Linear::new(&weight, &bias, activation, Some(accelerator)).unwrap();
                    let levels = fast.weights.levels;
                    let portable =
                        Int8Linear::with_levels(&weight, &bias, activation, None, levels).unwrap();
                    let got = portable.forward(&x).unwrap().to_vec2::<f32>().unwrap();
                    // Each product's error is bounded by the two half-steps, summed over
                    // depth (GELU's slope is below 1.13).
                    let x_step = 8.0 / f32::from(levels.activation);
                    let w_step = 0.25 / f32::from(levels.weight);
                    let bound = 1.13 * depth as f32 * (x_step * 0.25 + w_step * 4.0) / 2.0 + 1e-5;
                    for (got, expected) in got.iter().flatten().zip(expected.iter().flatten()) {
                        assert!((got - expected).abs() < bound, "{got} against {expected}");
                    }
                    if accelerator.available() {
                        let fast = fast.forward(&x).unwrap().to_vec2::<f32>().unwrap();
                        for (fast, got) in fast.iter().flatten().zip(got.iter().flatten()) {
                            // The same integer sums; the scaling may round differently once
                            // compiled with fused multiply-adds.
                            assert!(
                                (fast - got).abs() <= 1e-5 * got.abs().max(1.0),
                                "{accelerator:?}: {fast} against {got}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_wrong_input_width_is_an_error() {
        let device = &Device::Cpu;
        let layer = Int8Linear::new(
            &Tensor::zeros((4, 8), candle_core::DType::F32, device).unwrap(),
            &Tensor::zeros(4, candle_core::DType::F32, device).unwrap(),
            Activation::None,
            None,
        )
        .unwrap();
        let x = Tensor::zeros((2, 7), candle_core::DType::F32, device).unwrap();
        assert!(layer.forward(&x).is_err());
    }
}
