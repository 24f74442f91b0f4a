//! 8-bit matrix products for the encoder's dense layers. Weights are quantized once, per
//! output feature (symmetric, `i8`); activations per row at every call (asymmetric, `u8`, so
//! the one-sided GELU outputs keep all 256 levels); products are summed exactly in `i32` and
//! scaled back to `f32` with the bias added. On CPUs with AVX-512 VNNI one instruction
//! multiplies and adds 64 byte pairs, four times the pairs of an `f32` fused multiply-add;
//! elsewhere a portable kernel gives the same sums (it is also the tests' reference).

mod gemm;
mod linear;
mod quantize;

pub(crate) use gemm::{Activation, MR, NR, PackedWeights, tile_sums_portable, tile_with};
pub(crate) use linear::Int8Linear;

/// Whether this CPU runs the 8-bit products at full speed (AVX-512 VNNI).
pub(crate) fn accelerated() -> bool {
    crate::avx512::available()
}
