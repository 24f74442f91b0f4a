//! The encoder's self-attention, read straight from the fused query/key/value projection's
//! packed rows (the real tokens of every text, one after another): each text's tokens
//! attend to that text's tokens only, so padding costs nothing, and no head layout is
//! copied out and back. The texts run in parallel, each through [`run`] on the best build
//! of the kernel (`kernel/attention.rs`) this CPU has.

use candle_core::{Result, bail};

use crate::{
    kernel::Kernel,
    parallel::for_each,
    precision::{Accelerator, run},
};

/// Self-attention of the texts whose real tokens' fused projections are the rows of `qkv`
/// (`3 · hidden` values each): queries (already scaled by 1/√head), keys, then values, each
/// `heads` heads wide; text `i` is the next `lengths[i]` rows. Writes the attended values,
/// `hidden` a row, each head's in its columns, into `out`.
pub(crate) fn attention_into(
    qkv: &[f32],
    lengths: &[usize],
    heads: usize,
    out: &mut [f32],
) -> Result<()> {
    let tokens = lengths.iter().sum::<usize>();
    if tokens == 0 || !out.len().is_multiple_of(tokens) || qkv.len() != 3 * out.len() {
        bail!(
            "texts of {lengths:?} tokens, {} projections and {} outputs",
            qkv.len(),
            out.len()
        );
    }
    let hidden = out.len() / tokens;
    let width = 3 * hidden;
    if heads == 0 || !hidden.is_multiple_of(heads) {
        bail!("attention over rows of {width} values in {heads} heads");
    }
    let accelerated = Accelerator::best();
    let mut texts = Vec::with_capacity(lengths.len());
    let (mut rows, mut outputs) = (qkv, out);
    for &length in lengths {
        let (text, rest) = rows.split_at(length * width);
        let (text_out, rest_out) = std::mem::take(&mut outputs).split_at_mut(length * hidden);
        (rows, outputs) = (rest, rest_out);
        if length > 0 {
            texts.push((text, text_out));
        }
    }
    for_each(texts, |(qkv, out)| {
        run(
            accelerated,
            Kernel::Attention {
                qkv,
                tokens: out.len() / hidden,
                heads,
                out,
            },
        );
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use candle_core::{D, Device, IndexOp, Tensor};

    use super::*;
    use crate::cpu::{largest_difference, with_values};

    /// [`attention_into`] on a tensor `(tokens, 3 · hidden)`, into a new one.
    fn attention(qkv: &Tensor, lengths: &[usize], heads: usize) -> Result<Tensor> {
        let (tokens, width) = qkv.dims2()?;
        if !width.is_multiple_of(3) || lengths.iter().sum::<usize>() != tokens {
            bail!("texts of {lengths:?} tokens in {tokens} rows of {width} values");
        }
        let mut out = vec![0f32; tokens * (width / 3)];
        with_values(qkv, |qkv| attention_into(qkv, lengths, heads, &mut out))??;
        Tensor::from_vec(out, (tokens, width / 3), qkv.device())
    }

    /// softmax(q·kᵀ)·v of one text's rows, head by head, with candle's own operations.
    fn reference(qkv: &Tensor, heads: usize) -> Tensor {
        let (tokens, width) = qkv.dims2().unwrap();
        let hidden = width / 3;
        let head = hidden / heads;
        let per_head = |part: usize| {
            qkv.narrow(1, part * hidden, hidden)
                .unwrap()
                .reshape((tokens, heads, head))
                .unwrap()
                .transpose(0, 1)
                .unwrap()
                .contiguous()
                .unwrap()
        };
        let (q, k, v) = (per_head(0), per_head(1), per_head(2));
        let scores = q.matmul(&k.t().unwrap()).unwrap();
        let weights = candle_nn::ops::softmax(&scores, D::Minus1).unwrap();
        weights
            .matmul(&v)
            .unwrap()
            .transpose(0, 1)
            .unwrap()
            .contiguous()
            .unwrap()
            .reshape((tokens, hidden))
            .unwrap()
    }

    /// Texts of lengths that fill no panel or block evenly (and one of a single token),
    /// for a head width of the embedded models (32), a wider one (64) and one that is not
    /// a multiple of the output block (20), through the dispatch and on every build of the
    /// kernel this CPU runs (the baseline one a CPU without AVX2 runs included).
    #[test]
    fn matches_softmax_of_scores_times_values_text_by_text() {
        let device = &Device::Cpu;
        for (heads, head) in [(12, 32), (2, 64), (3, 20)] {
            let hidden = heads * head;
            let lengths = [7usize, 1, 33, 16, 0, 21];
            let tokens = lengths.iter().sum::<usize>();
            let qkv = Tensor::randn(0f32, 1.0, (tokens, 3 * hidden), device).unwrap();
            let dispatched = attention(&qkv, &lengths, heads).unwrap();
            let mut first = 0;
            for &length in &lengths {
                if length == 0 {
                    continue;
                }
                let text = qkv.i(first..first + length).unwrap();
                let expected = reference(&text, heads);
                let values = text.flatten_all().unwrap().to_vec1::<f32>().unwrap();
                for build in crate::precision::builds_on_this_cpu() {
                    let mut out = vec![0f32; length * hidden];
                    run(
                        build,
                        Kernel::Attention {
                            qkv: &values,
                            tokens: length,
                            heads,
                            out: &mut out,
                        },
                    );
                    let got = Tensor::from_vec(out, (length, hidden), device).unwrap();
                    let difference = largest_difference(&got, &expected);
                    assert!(
                        difference < 1e-5,
                        "{build:?}, head {head}, text of {length}: {difference}"
                    );
                }
                let got = dispatched.i(first..first + length).unwrap();
                assert!(largest_difference(&got, &expected) < 1e-5);
                first += length;
            }
        }
    }

    #[test]
    fn lengths_that_do_not_cover_the_rows_are_an_error() {
        let qkv = Tensor::zeros((5, 3 * 64), candle_core::DType::F32, &Device::Cpu).unwrap();
        assert!(attention(&qkv, &[2, 2], 2).is_err());
        assert!(attention(&qkv, &[5], 3).is_err());
    }
}
