//! The encoder's kernels compiled for AVX2 and FMA, chosen at run time: the CPUs without
//! AVX-512 VNNI (most laptops and many cloud machines) run the 8-bit products here.
//!
//! [`run`] takes a [`Kernel`] and runs it in a function compiled for AVX2 and FMA when the
//! CPU has them, so the plain Rust of the 8-bit tiles' quantization and scaling, GELU and
//! attention is vectorized 8 lanes wide; elsewhere the same code runs as compiled for the
//! baseline CPU. The 8-bit product's inner loop is written with `vpmaddubsw`, which
//! multiplies 32 unsigned × signed byte pairs and adds neighbours into 16 `i16` sums, and
//! `vpmaddwd` by ones, which adds those in pairs into 8 `i32` sums: the four depths of a
//! group of the packed layout. `vpmaddubsw` saturates, so on this path activations are
//! quantized to `0..=181` and weights to `±90` ([`crate::int8::Levels::AVX2`]): no pair can
//! exceed `i16::MAX`, and the sums are exactly the portable kernel's on the same bytes.
//!
//! This file holds one of the workspace's two `unsafe` calls (decision 0021; the other is
//! its AVX-512 twin in `avx512.rs`): the call of the function compiled for AVX2 and FMA,
//! which is sound only on a CPU that has them, so it is made only after the CPU was checked
//! at run time. The kernels themselves use the safe intrinsics and bounds-checked slices.

use crate::kernel::{Kernel, run_portable};

/// Whether this CPU has AVX2 and FMA (checked once, then cached by the standard library).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Runs `kernel` compiled for AVX2 and FMA where the CPU has them, else for the baseline CPU
/// (with the portable 8-bit kernel: the same sums).
pub(crate) fn run(kernel: Kernel<'_>) {
    #[cfg(target_arch = "x86_64")]
    if available() {
        #[allow(unsafe_code)]
        // SAFETY: `run_avx2` is compiled for avx2 and fma, and `available()` has just
        // confirmed this CPU has both. Nothing else is required: it reads and writes only
        // through bounds-checked slices.
        return unsafe { x86::run_avx2(kernel) };
    }
    run_portable(kernel);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi32, _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set1_epi16,
        _mm256_set1_epi32, _mm256_setzero_si256,
    };

    use super::Kernel;
    use crate::{
        fastmath::Fused,
        int8::{MR, NR},
        kernel::{attend_text, run_with},
    };

    /// Rows of the tile summed at once.
    const ROWS: usize = 4;
    /// Vectors of 8 features summed at once: `ROWS × VECTORS` = 12 sums in registers, with 3
    /// weight vectors and the broadcast row beside them (AVX2 has 16 registers).
    const VECTORS: usize = 3;
    /// Vectors of 8 features in a panel.
    const PANEL_VECTORS: usize = NR / 8;

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn run_avx2(kernel: Kernel<'_>) {
        // 16 registers: attention keeps 4 queries × 16 keys of scores and 2 rows × 32
        // features of weighted values in 8 of them.
        run_with::<Fused>(
            kernel,
            |tile, depth, panel| tile_sums_avx2(tile, depth, panel),
            attend_text::<Fused, 4, 16, 2>,
        );
    }

    /// The sums of one tile (`MR` rows of `depth` bytes) and one panel (`depth / 4` groups
    /// of `NR × 4` bytes), in blocks of `ROWS` rows × `VECTORS` vectors, each over the whole
    /// depth.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn tile_sums_avx2(tile: &[u8], depth: usize, panel: &[i8]) -> [[i32; NR]; MR] {
        let groups = depth / 4;
        let (a, _) = tile.as_chunks::<4>();
        let (b, _) = panel.as_chunks::<32>();
        let b = &b[..PANEL_VECTORS * groups];
        let ones = _mm256_set1_epi16(1);
        let mut out = [[0i32; NR]; MR];
        for first_row in (0..MR).step_by(ROWS) {
            let mut rows: [&[[u8; 4]]; ROWS] = [&[]; ROWS];
            for (row, rows) in rows.iter_mut().enumerate() {
                let start = (first_row + row) * groups;
                *rows = &a[start..start + groups];
            }
            for first_vector in (0..PANEL_VECTORS).step_by(VECTORS) {
                let mut sums = [[_mm256_setzero_si256(); VECTORS]; ROWS];
                for (group, b) in b.chunks_exact(PANEL_VECTORS).enumerate() {
                    let mut w = [_mm256_setzero_si256(); VECTORS];
                    for (w, b) in w.iter_mut().zip(&b[first_vector..]) {
                        *w = bytemuck::cast::<[i8; 32], __m256i>(*b);
                    }
                    for (sums, row) in sums.iter_mut().zip(&rows) {
                        let x = _mm256_set1_epi32(i32::from_ne_bytes(row[group]));
                        for (sum, &w) in sums.iter_mut().zip(&w) {
                            // Each i16 is a pair of products, at most 2 · 181 · 90 in size.
                            let pairs = _mm256_maddubs_epi16(x, w);
                            *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(pairs, ones));
                        }
                    }
                }
                for (out, sums) in out[first_row..].iter_mut().zip(&sums) {
                    let out = &mut out[first_vector * 8..];
                    for (out, sum) in out.chunks_exact_mut(8).zip(sums) {
                        out.copy_from_slice(&bytemuck::cast::<__m256i, [i32; 8]>(*sum));
                    }
                }
            }
        }
        out
    }
}
