//! The constants of the vector `eˣ` the softmax runs on: eight lanes in `attend`, sixteen in
//! `avx512`, the same steps and constants.

pub(crate) const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// ln 2 in two parts, so `k · ln 2` is subtracted without rounding error.
pub(crate) const LN_2_HIGH: f32 = 0.693_145_75;
pub(crate) const LN_2_LOW: f32 = 1.428_606_8e-6;
/// Adding 1.5 · 2²³ rounds to an integer k held in the low mantissa bits.
pub(crate) const ROUNDING: f32 = 12_582_912.0;
pub(crate) const ROUNDING_BITS: i32 = 0x4B40_0000;
/// The Taylor series of eʳ for |r| ≤ ln 2 / 2, to r⁷, highest power first (Horner).
pub(crate) const TAYLOR: [f32; 8] = [
    1.0 / 5040.0,
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    0.5,
    1.0,
    1.0,
];
