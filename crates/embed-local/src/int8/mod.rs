//! 8-bit matrix products for the encoder's dense layers. Weights are quantized once, per
//! output feature (symmetric, `i8`); activations per row at every call (asymmetric, `u8`, so
//! the one-sided GELU outputs keep all 256 levels); products are summed exactly in `i32` and
//! scaled back to `f32` with the bias added. On CPUs with AVX-512 VNNI one instruction
//! multiplies and adds 64 byte pairs, four times the pairs of an `f32` fused multiply-add;
//! on AVX2 two instructions multiply and add 32 pairs through saturating `i16` sums, so
//! both are quantized to fewer levels there (`Levels::AVX2`) and no sum can saturate;
//! elsewhere a portable kernel gives the same sums as either (it is also the tests'
//! reference).

mod gemm;
mod linear;
mod quantize;

pub(crate) use gemm::{Activation, MR, NR, PackedWeights, tile_sums_portable, tile_with};
pub(crate) use linear::Int8Linear;
#[cfg(test)]
pub(crate) use quantize::Levels;
