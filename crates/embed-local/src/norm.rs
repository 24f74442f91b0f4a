//! BERT's layer normalisation, with the residual it follows added in the same pass: one read
//! of the two inputs and one write per row, where an addition then candle's layer norm make
//! two passes and an intermediate tensor. Rows run in parallel, in tasks, each through
//! [`run`] on the best build of the kernel (`kernel/norm.rs`) this CPU has.

use candle_core::{Result, Tensor, bail};
use candle_nn::VarBuilder;

use crate::{
    cpu::with_values,
    kernel::{Kernel, NormParameters},
    parallel::for_each,
    precision::{Accelerator, run},
};

/// Rows normalised per task.
const ROWS_PER_TASK: usize = 64;

/// `(x + residual − mean) / √(variance + eps) · weight + bias` over each row.
pub(crate) struct LayerNorm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    /// The layer norm `LayerNorm` under `vb`, over rows of `size` values.
    pub(crate) fn load(vb: &VarBuilder, size: usize, eps: f64) -> Result<Self> {
        let vb = vb.pp("LayerNorm");
        Ok(Self {
            weight: vb.get(size, "weight")?.to_vec1()?,
            bias: vb.get(size, "bias")?.to_vec1()?,
            eps: eps as f32,
        })
    }

    /// The normalised rows of `x` `(rows, size)`, plus `residual` (same shape) first if given.
    pub(crate) fn forward(&self, x: &Tensor, residual: Option<&Tensor>) -> Result<Tensor> {
        let (rows, size) = x.dims2()?;
        if size != self.weight.len() {
            bail!("rows of {size} for a layer norm of {}", self.weight.len());
        }
        if let Some(residual) = residual
            && residual.dims2()? != (rows, size)
        {
            bail!(
                "a residual of {:?} for rows {rows} × {size}",
                residual.dims()
            );
        }
        let mut out = vec![0f32; rows * size];
        with_values(x, |x| match residual {
            None => self.forward_into(x, None, &mut out),
            Some(residual) => with_values(residual, |residual| {
                self.forward_into(x, Some(residual), &mut out)
            })?,
        })??;
        Tensor::from_vec(out, (rows, size), x.device())
    }

    /// The normalised rows of `x` (plus `residual`, of the same length) into `out`.
    pub(crate) fn forward_into(
        &self,
        x: &[f32],
        residual: Option<&[f32]>,
        out: &mut [f32],
    ) -> Result<()> {
        let size = self.weight.len();
        if size == 0 || !x.len().is_multiple_of(size) {
            bail!("{} values in rows of a layer norm of {size}", x.len());
        }
        if out.len() != x.len() || residual.is_some_and(|residual| residual.len() != x.len()) {
            bail!(
                "rows of {} values, a residual of {:?} and {} outputs",
                x.len(),
                residual.map(<[f32]>::len),
                out.len()
            );
        }
        let parameters = NormParameters {
            weight: &self.weight,
            bias: &self.bias,
            eps: self.eps,
        };
        let accelerated = Accelerator::best();
        let chunk = ROWS_PER_TASK * size;
        let residuals = residual.map(|residual| residual.chunks(chunk));
        let tasks: Vec<_> = match residuals {
            None => x
                .chunks(chunk)
                .zip(out.chunks_mut(chunk))
                .map(|(x, out)| (x, None, out))
                .collect(),
            Some(residuals) => x
                .chunks(chunk)
                .zip(residuals)
                .zip(out.chunks_mut(chunk))
                .map(|((x, residual), out)| (x, Some(residual), out))
                .collect(),
        };
        for_each(tasks, |(x, residual, out)| {
            run(
                accelerated,
                Kernel::Norm {
                    x,
                    residual,
                    parameters,
                    out,
                },
            );
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use candle_core::{DType, Device, Module};

    use super::*;
    use crate::cpu::largest_difference;

    /// candle's layer norm of `x + residual` (and of `x` alone), against this one through
    /// the dispatch and on every build of the kernel this CPU runs.
    #[test]
    fn matches_candles_layer_norm_of_the_sum() {
        let device = &Device::Cpu;
        let (rows, size) = (133, 384);
        let weight = Tensor::randn(1f32, 0.2, size, device).unwrap();
        let bias = Tensor::randn(0f32, 0.2, size, device).unwrap();
        let x = Tensor::randn(0.5f32, 3.0, (rows, size), device).unwrap();
        let residual = Tensor::randn(0f32, 1.0, (rows, size), device).unwrap();
        let reference = candle_nn::LayerNorm::new(weight.clone(), bias.clone(), 1e-12);
        let norm = LayerNorm {
            weight: weight.to_vec1().unwrap(),
            bias: bias.to_vec1().unwrap(),
            eps: 1e-12,
        };
        let values = |tensor: &Tensor| tensor.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let (x_values, residual_values) = (values(&x), values(&residual));
        for residual in [None, Some(&residual)] {
            let sum = match residual {
                Some(residual) => (&x + residual).unwrap(),
                None => x.clone(),
            };
            let expected = reference.forward(&sum).unwrap();
            let got = norm.forward(&x, residual).unwrap();
            assert!(largest_difference(&got, &expected) < 1e-4);
            for build in crate::precision::builds_on_this_cpu() {
                let mut out = vec![0f32; rows * size];
                run(
                    build,
                    Kernel::Norm {
                        x: &x_values,
                        residual: residual.map(|_| residual_values.as_slice()),
                        parameters: NormParameters {
                            weight: &norm.weight,
                            bias: &norm.bias,
                            eps: norm.eps,
                        },
                        out: &mut out,
                    },
                );
                let got = Tensor::from_vec(out, (rows, size), device).unwrap();
                let difference = largest_difference(&got, &expected);
                assert!(difference < 1e-4, "{build:?}: {difference}");
            }
        }
    }

    #[test]
    fn mismatched_shapes_are_errors() {
        let device = &Device::Cpu;
        let norm = LayerNorm {
            weight: vec![1.0; 4],
            bias: vec![0.0; 4],
            eps: 1e-12,
        };
        let x = Tensor::zeros((2, 4), DType::F32, device).unwrap();
        assert!(
            norm.forward(&Tensor::zeros((2, 5), DType::F32, device).unwrap(), None)
                .is_err()
        );
        let residual = Tensor::zeros((3, 4), DType::F32, device).unwrap();
        assert!(norm.forward(&x, Some(&residual)).is_err());
    }
}
