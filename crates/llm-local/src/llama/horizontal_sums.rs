//! Horizontal sums of AVX2 registers, which the kernels of every width end in: one register's
//! eight lanes to one value (`kernels`, `int16`, `attend`), and eight registers to one
//! register of their eight sums (`attend`'s scores, and `avx512`'s once each sixteen-lane sum
//! is folded to eight lanes).

use std::arch::x86_64::__m256;

use pulp::x86::V3;

/// The sum of `v`'s eight lanes.
#[inline(always)]
pub(crate) fn horizontal_sum(simd: V3, v: __m256) -> f32 {
    let halves = simd.sse._mm_add_ps(
        simd.avx._mm256_castps256_ps128(v),
        simd.avx._mm256_extractf128_ps::<1>(v),
    );
    let pairs = simd.sse3._mm_hadd_ps(halves, halves);
    simd.sse._mm_cvtss_f32(simd.sse3._mm_hadd_ps(pairs, pairs))
}

/// The eight horizontal sums of `sums`, in order, in one register.
#[inline(always)]
pub(crate) fn sums_of_eight(simd: V3, sums: [__m256; 8]) -> __m256 {
    let avx = simd.avx;
    // Pairs, then quadruples: each 128-bit half then holds four partial sums of its keys.
    let a = avx._mm256_hadd_ps(sums[0], sums[1]);
    let b = avx._mm256_hadd_ps(sums[2], sums[3]);
    let c = avx._mm256_hadd_ps(sums[4], sums[5]);
    let d = avx._mm256_hadd_ps(sums[6], sums[7]);
    let low_keys = avx._mm256_hadd_ps(a, b);
    let high_keys = avx._mm256_hadd_ps(c, d);
    // Lanes 0-3 of each hold keys' lower halves, lanes 4-7 their upper halves.
    let lower = avx._mm256_permute2f128_ps::<0x20>(low_keys, high_keys);
    let upper = avx._mm256_permute2f128_ps::<0x31>(low_keys, high_keys);
    avx._mm256_add_ps(lower, upper)
}
