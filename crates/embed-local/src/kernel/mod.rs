//! The encoder's hot loops as pieces of work ([`Kernel`]: an 8-bit tile, one text's
//! attention, rows of a layer norm) and the body every build of them compiles
//! ([`run_with`]), with the baseline CPU's build ([`run_portable`]). The AVX2 and AVX-512
//! builds are in `avx2.rs` and `avx512.rs`; `precision.rs` chooses among them. Nothing here
//! reaches a build or a layer that runs kernels, so those reach the loops only through
//! [`run`](crate::precision::run).

mod attention;
mod norm;

pub(crate) use attention::attend_text;
pub(crate) use norm::{NormParameters, normalize_rows};

use crate::{
    fastmath::{MulAdd, Separate},
    int8::{self, PackedWeights},
};

/// A piece of work [`run`](crate::precision::run) compiles for each
/// [`Accelerator`](crate::precision::Accelerator).
pub(crate) enum Kernel<'a> {
    /// One tile of up to `MR` rows of activations through every panel of 8-bit weights.
    Tile {
        x: &'a [f32],
        weights: &'a PackedWeights,
        /// Scratch for the tile's quantized rows: `MR × padded_depth` bytes.
        quantized: &'a mut [u8],
        out: &'a mut [f32],
    },
    /// Self-attention of one text's `tokens` rows of fused query/key/value projections.
    Attention {
        qkv: &'a [f32],
        tokens: usize,
        heads: usize,
        out: &'a mut [f32],
    },
    /// Layer normalisation of rows of `x` (plus `residual`).
    Norm {
        x: &'a [f32],
        residual: Option<&'a [f32]>,
        parameters: NormParameters<'a>,
        out: &'a mut [f32],
    },
    /// The integer sums of one quantized tile and one panel alone (the tests compare the
    /// kernels' sums bit for bit).
    #[cfg(test)]
    Sums {
        tile: &'a [u8],
        depth: usize,
        panel: &'a [i8],
        out: &'a mut [[i32; int8::NR]; int8::MR],
    },
}

/// `kernel` compiled for the baseline CPU, with the portable 8-bit kernel: the same sums as
/// the accelerated ones.
pub(crate) fn run_portable(kernel: Kernel<'_>) {
    run_with::<Separate>(
        kernel,
        int8::tile_sums_portable,
        attend_text::<Separate, 4, 16, 2>,
    );
}

/// `kernel` with `sums` as the 8-bit tile's integer kernel, `attend` as attention (its
/// blocks sized for the build's registers) and `M` as every product's addition. Inlined, so
/// each caller compiles it (quantization, scaling, GELU, attention and layer norms
/// included) for its own instruction set.
#[inline(always)]
pub(crate) fn run_with<M: MulAdd>(
    kernel: Kernel<'_>,
    sums: impl Fn(&[u8], usize, &[i8]) -> [[i32; int8::NR]; int8::MR],
    attend: impl Fn(&[f32], usize, usize, &mut [f32]),
) {
    match kernel {
        Kernel::Tile {
            x,
            weights,
            quantized,
            out,
        } => int8::tile_with::<M>(x, weights, quantized, out, &sums),
        Kernel::Attention {
            qkv,
            tokens,
            heads,
            out,
        } => attend(qkv, tokens, heads, out),
        Kernel::Norm {
            x,
            residual,
            parameters,
            out,
        } => normalize_rows::<M>(x, residual, parameters, out),
        #[cfg(test)]
        Kernel::Sums {
            tile,
            depth,
            panel,
            out,
        } => *out = sums(tile, depth, panel),
    }
}
