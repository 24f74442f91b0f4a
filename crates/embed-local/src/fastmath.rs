//! `exp` and `erf` in plain arithmetic the compiler vectorizes (no calls into libm, no
//! branches), for softmax and GELU over whole rows. Both are within a few units in the last
//! place of `f32` of the library functions on the ranges the encoder uses (tests below).
//! And sums and maxima of a row in independent lanes, which vectorize where one running
//! value cannot. Each build of the kernels multiplies and adds through its [`MulAdd`].

/// How a build of the kernels computes `a · b + c`. LLVM never fuses a product and a sum
/// on its own (the rounding would change), so builds for CPUs with FMA ask for it: one
/// instruction instead of two in every inner loop. The baseline build cannot, as
/// `f32::mul_add` there is a call into the C library's software `fmaf`.
pub(crate) trait MulAdd {
    fn mul_add(a: f32, b: f32, c: f32) -> f32;
}

/// Fused multiply-add (`vfmadd`): for builds compiled with FMA (AVX2 and AVX-512).
pub(crate) enum Fused {}

impl MulAdd for Fused {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

/// A product, then a sum: for the baseline build.
pub(crate) enum Separate {}

impl MulAdd for Separate {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
}

const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split in two, so `k · ln 2` is subtracted without rounding error.
const LN_2_HIGH: f32 = 0.693_145_75;
const LN_2_LOW: f32 = 1.428_606_8e-6;
/// Adding and subtracting 1.5 · 2²³ rounds an `f32` of magnitude below 2²² to the nearest
/// integer (ties to even) with two additions, which vectorize on every x86-64 CPU.
/// Its bits are `ROUNDING_BITS + n` for a sum that rounded to the integer `n` (|n| < 2²²).
pub(crate) const ROUNDING: f32 = 12_582_912.0;
pub(crate) const ROUNDING_BITS: u32 = 0x4B40_0000;

/// `eˣ` with a relative error below 2e-7; below -87 it is flushed to 0, above 88 saturated.
#[inline(always)]
pub(crate) fn exp<M: MulAdd>(input: f32) -> f32 {
    let x = input.clamp(-87.0, 88.0);
    // `shifted` holds k = round(x · log₂e) in its low mantissa bits (see `ROUNDING`): read
    // from there, k needs no float-to-integer conversion, which would not vectorize.
    let shifted = M::mul_add(x, LOG2_E, ROUNDING);
    let k = shifted - ROUNDING;
    let r = M::mul_add(-k, LN_2_LOW, M::mul_add(-k, LN_2_HIGH, x));
    // Taylor series of eʳ for |r| ≤ ln 2 / 2, to r⁷ (its first omitted term is below 1e-8).
    let p = 1.0 / 5040.0;
    let p = M::mul_add(p, r, 1.0 / 720.0);
    let p = M::mul_add(p, r, 1.0 / 120.0);
    let p = M::mul_add(p, r, 1.0 / 24.0);
    let p = M::mul_add(p, r, 1.0 / 6.0);
    let p = M::mul_add(p, r, 0.5);
    let p = M::mul_add(p, r, 1.0);
    let p = M::mul_add(p, r, 1.0);
    // 2ᵏ from its exponent bits k + 127 (k ∈ [-126, 127] here: a normal number).
    let scale = f32::from_bits(shifted.to_bits().wrapping_sub(ROUNDING_BITS - 127) << 23);
    // A select, not a branch, so a loop over a row stays vectorized.
    if input < -87.0 { 0.0 } else { p * scale }
}

/// The error function (Abramowitz and Stegun 7.1.26), absolute error below 1e-6 (1.5e-7 of the formula, the rest f32 rounding near 0); far below the 8-bit products' own error, where it is used.
#[inline(always)]
pub(crate) fn erf<M: MulAdd>(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / M::mul_add(0.327_591_1, a, 1.0);
    let poly = M::mul_add(1.061_405_4, t, -1.453_152_1);
    let poly = M::mul_add(poly, t, 1.421_413_7);
    let poly = M::mul_add(poly, t, -0.284_496_74);
    let poly = M::mul_add(poly, t, 0.254_829_6) * t;
    M::mul_add(-poly, exp::<M>(-a * a), 1.0).copysign(x)
}

/// GELU as BERT defines it: `x · Φ(x) = x/2 · (1 + erf(x/√2))`.
#[inline(always)]
pub(crate) fn gelu<M: MulAdd>(x: f32) -> f32 {
    let half = 0.5 * x;
    M::mul_add(half, erf::<M>(x * std::f32::consts::FRAC_1_SQRT_2), half)
}

/// Folds `map` of each of `values` with `combine` in 16 independent lanes, then the lanes
/// together: the compiler vectorizes this, where one running `f32` sum or maximum must stay
/// in order (and scalar). `start` is `combine`'s identity (0 for a sum, -∞ for a maximum).
#[inline(always)]
pub(crate) fn fold_lanes(
    values: &[f32],
    start: f32,
    map: impl Fn(f32) -> f32,
    combine: impl Fn(f32, f32) -> f32,
) -> f32 {
    let mut lanes = [start; 16];
    let (chunks, rest) = values.as_chunks::<16>();
    for chunk in chunks {
        for (lane, &value) in lanes.iter_mut().zip(chunk) {
            *lane = combine(*lane, map(value));
        }
    }
    rest.iter()
        .map(|&value| map(value))
        .chain(lanes)
        .fold(start, combine)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways of multiplying and adding: fused (as the AVX2 and AVX-512 builds compute;
    /// here through the library's `fmaf`, the same results) and separate (the baseline build).
    #[test]
    fn exp_matches_the_library_function() {
        exp_matches::<Fused>();
        exp_matches::<Separate>();
    }

    fn exp_matches<M: MulAdd>() {
        for i in -17_400..=17_600 {
            let x = i as f32 / 200.0;
            let (got, expected) = (exp::<M>(x), x.exp());
            assert!(
                ((got - expected) / expected).abs() < 2e-7,
                "exp({x}) = {got}, expected {expected}"
            );
        }
        assert_eq!(
            exp::<M>(-87.5),
            0.0,
            "flushed where the library gives denormals"
        );
        assert_eq!(exp::<M>(-1e9), 0.0);
        assert_eq!(exp::<M>(f32::NEG_INFINITY), 0.0);
        assert!(exp::<M>(100.0).is_finite());
    }

    #[test]
    fn erf_and_gelu_match_the_exact_functions() {
        erf_and_gelu_match::<Fused>();
        erf_and_gelu_match::<Separate>();
    }

    fn erf_and_gelu_match<M: MulAdd>() {
        for i in -10_000..=10_000 {
            let x = f64::from(i) / 1000.0;
            let expected = libm_erf(x);
            let got = f64::from(erf::<M>(x as f32));
            assert!(
                (got - expected).abs() < 1e-6,
                "erf({x}) = {got}, expected {expected}"
            );
            let gelu_expected = 0.5 * x * (1.0 + libm_erf(x / std::f64::consts::SQRT_2));
            let gelu_got = f64::from(gelu::<M>(x as f32));
            assert!(
                (gelu_got - gelu_expected).abs() < 2e-6 * x.abs().max(1.0),
                "gelu({x}) = {gelu_got}, expected {gelu_expected}"
            );
        }
    }

    /// erf in f64 by its Maclaurin series (|x| < 3) or continued fraction (beyond): the test's
    /// own reference, independent of the approximation above.
    fn libm_erf(x: f64) -> f64 {
        let a = x.abs();
        let value = if a < 3.0 {
            let mut term = a;
            let mut sum = a;
            for n in 1..200 {
                let n = f64::from(n);
                term *= -a * a / n;
                sum += term / (2.0 * n + 1.0);
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            // erfc(a) = e^{-a²}/√π · 1/(a + 1/2/(a + 1/(a + 3/2/(a + …))))
            let mut fraction = a;
            for k in (1..60).rev() {
                fraction = a + f64::from(k) / 2.0 / fraction;
            }
            1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / fraction
        };
        value.copysign(x)
    }
}
