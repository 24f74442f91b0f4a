//! Weight matrices as the engine keeps them: the file's Q4_1 and Q8_0 blocks as they are
//! (their f16 scales included), f32 for unquantized tensors, and any
//! other quantization re-quantized to Q8_0. Products run over the engine's thread pool.

use candle_core::{
    Device,
    quantized::{GgmlDType, QTensor},
};
use rayon::prelude::*;

use super::blocks::{BLOCK, Half, Int16Activations, Q4_1Row, Q8_0Row, Row};
use super::int16::int16_dot_rows;
use super::isa::InstructionSet;
use super::kernels::{ROWS_AT_ONCE, block_sums, dequantize, dot_rows, dot_rows_tokens};

/// Rows handed to one task at a time when a single token's product is split over threads.
const ROWS_PER_TASK: usize = 32;
/// Tokens handed to one task at a time when several are multiplied (a prompt): each row is
/// dequantized once per task and multiplied with all of them. A token's sums depend on its
/// place in its group (groups of four and the rest run different kernels), which is why
/// prefix reuse keeps whole groups only.
pub(crate) const TOKENS_PER_TASK: usize = 32;

enum Weights {
    Q4_1 {
        scales: Vec<Half>,
        mins: Vec<Half>,
        quants: Vec<[u8; 16]>,
    },
    Q8_0 {
        scales: Vec<Half>,
        quants: Vec<[i8; 32]>,
    },
    F32(Vec<f32>),
}

/// A `rows × cols` weight matrix (GGUF's `[cols, rows]` tensor: one row per output).
pub(crate) struct Matrix {
    rows: usize,
    cols: usize,
    weights: Weights,
}

fn half(bytes: &[u8]) -> Half {
    Half(u16::from_le_bytes([bytes[0], bytes[1]]))
}

impl Matrix {
    pub(crate) fn from_qtensor(tensor: &QTensor) -> candle_core::Result<Self> {
        let (rows, cols) = tensor.shape().dims2()?;
        let quantized = matches!(tensor.dtype(), GgmlDType::Q4_1 | GgmlDType::Q8_0);
        if quantized && cols % BLOCK != 0 {
            candle_core::bail!("rows of {cols} weights are not whole blocks");
        }
        let weights = match tensor.dtype() {
            GgmlDType::Q4_1 => {
                let data = tensor.data()?;
                let blocks = data.chunks_exact(20);
                Weights::Q4_1 {
                    scales: blocks.clone().map(|b| half(&b[0..2])).collect(),
                    mins: blocks.clone().map(|b| half(&b[2..4])).collect(),
                    quants: blocks.map(|b| std::array::from_fn(|j| b[4 + j])).collect(),
                }
            }
            GgmlDType::Q8_0 => {
                let data = tensor.data()?;
                let blocks = data.chunks_exact(34);
                Weights::Q8_0 {
                    scales: blocks.clone().map(|b| half(&b[0..2])).collect(),
                    quants: blocks
                        .map(|b| std::array::from_fn(|j| b[2 + j] as i8))
                        .collect(),
                }
            }
            GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16 => Weights::F32(
                tensor
                    .dequantize(&Device::Cpu)?
                    .flatten_all()?
                    .to_vec1::<f32>()?,
            ),
            _ if cols % BLOCK == 0 => {
                let requantized =
                    QTensor::quantize(&tensor.dequantize(&Device::Cpu)?, GgmlDType::Q8_0)?;
                return Self::from_qtensor(&requantized);
            }
            other => candle_core::bail!("{other:?} rows of {cols} weights are not supported"),
        };
        let stored = match &weights {
            Weights::Q4_1 { quants, .. } => quants.len() * BLOCK,
            Weights::Q8_0 { quants, .. } => quants.len() * BLOCK,
            Weights::F32(values) => values.len(),
        };
        if stored != rows * cols {
            candle_core::bail!("{stored} weights stored for a {rows}×{cols} matrix");
        }
        Ok(Self {
            rows,
            cols,
            weights,
        })
    }

    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    pub(crate) fn cols(&self) -> usize {
        self.cols
    }

    fn row(&self, r: usize) -> Row<'_> {
        let blocks = self.cols / BLOCK;
        let range = r * blocks..(r + 1) * blocks;
        match &self.weights {
            Weights::Q4_1 {
                scales,
                mins,
                quants,
            } => Row::Q4_1(Q4_1Row {
                scales: &scales[range.clone()],
                mins: &mins[range.clone()],
                quants: &quants[range],
            }),
            Weights::Q8_0 { scales, quants } => Row::Q8_0(Q8_0Row {
                scales: &scales[range.clone()],
                quants: &quants[range],
            }),
            Weights::F32(values) => Row::F32(&values[r * self.cols..(r + 1) * self.cols]),
        }
    }

    /// Row `r` as f32 (an embedding lookup).
    pub(crate) fn dequantize_row(&self, isa: InstructionSet, r: usize, out: &mut [f32]) {
        dequantize(isa, self.row(r), out);
    }

    /// `out[t][r] = row r · x[t]` for each of the tokens in `x` (`tokens × cols`, row-major);
    /// `out` is `tokens × rows`. One token's rows are split over the pool's threads, each row
    /// read in its stored format; several tokens are split into groups, and each row is
    /// dequantized once per group and multiplied with four of its tokens at a time.
    pub(crate) fn multiply(&self, isa: InstructionSet, x: &[f32], out: &mut [f32]) {
        if x.len() == self.cols && !matches!(self.weights, Weights::F32(_)) {
            let activations = Int16Activations::quantize(x);
            out.par_chunks_mut(ROWS_PER_TASK)
                .enumerate()
                .for_each(|(task, out)| {
                    int16_dot_rows(
                        isa,
                        |r| self.row(r),
                        task * ROWS_PER_TASK,
                        &activations,
                        out,
                    );
                });
            return;
        }
        if x.len() == self.cols {
            let sums = block_sums(x);
            out.par_chunks_mut(ROWS_PER_TASK)
                .enumerate()
                .for_each(|(task, out)| {
                    dot_rows(isa, |r| self.row(r), task * ROWS_PER_TASK, x, &sums, out);
                });
            return;
        }
        let (rows, cols) = (self.rows, self.cols);
        out.par_chunks_mut(rows * TOKENS_PER_TASK)
            .zip(x.par_chunks(cols * TOKENS_PER_TASK))
            .for_each_init(
                || vec![0.0; ROWS_AT_ONCE * cols],
                |buffer, (out, x)| {
                    let tokens: Vec<&[f32]> = x.chunks(cols).collect();
                    dot_rows_tokens(isa, |r| self.row(r), rows, &tokens, buffer, out);
                },
            );
    }
}
