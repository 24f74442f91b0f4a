//! The encoder's kernels compiled for AVX-512 (with VNNI), chosen at run time.
//!
//! [`run`] takes a [`Kernel`] and runs it in a function compiled for AVX-512 F, BW and VNNI
//! when the CPU has them, so the plain Rust of the 8-bit tiles' quantization and scaling,
//! GELU and attention is vectorized 16 lanes wide; elsewhere the same code runs as compiled
//! for the baseline CPU. The 8-bit product's inner loop is written with the VNNI intrinsic
//! `vpdpbusd`, which multiplies 64 unsigned × signed byte pairs and adds them, four at a
//! time, into 16 `i32` sums: a tile of 8 rows × 48 features keeps its 24 sums in registers
//! for the whole depth.
//!
//! This file holds one of the workspace's two `unsafe` calls (decision 0021; the other is
//! its AVX2 twin in `avx2.rs`): the call of the function compiled for AVX-512, which is
//! sound only on a CPU that has it, so it is made only after the CPU was checked at run
//! time. The kernels themselves use the safe intrinsics and
//! bounds-checked slices.

use crate::kernel::{Kernel, run_portable};

/// Whether this CPU has AVX-512 F, BW and VNNI (checked once, then cached by the standard
/// library).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Runs `kernel` compiled for AVX-512 where the CPU has it (with VNNI for the 8-bit
/// products), else for the baseline CPU (with the portable 8-bit kernel: the same sums).
pub(crate) fn run(kernel: Kernel<'_>) {
    #[cfg(target_arch = "x86_64")]
    if available() {
        #[allow(unsafe_code)]
        // SAFETY: `run_avx512` is compiled for avx512f, avx512bw and avx512vnni, and
        // `available()` has just confirmed this CPU has all three. Nothing else is required:
        // it reads and writes only through bounds-checked slices.
        return unsafe { x86::run_avx512(kernel) };
    }
    run_portable(kernel);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m512i, _mm512_dpbusd_epi32, _mm512_set1_epi32, _mm512_setzero_si512,
    };

    use super::Kernel;
    use crate::{
        fastmath::Fused,
        int8::{MR, NR},
        kernel::{attend_text, run_with},
    };

    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) fn run_avx512(kernel: Kernel<'_>) {
        // Attention's blocks twice AVX2's: 8 queries × 16 keys of scores and 4 rows × 32
        // features of weighted values, 8 of the 32 registers each. Larger blocks measured
        // slower: LLVM no longer vectorized them (8 × 32 and 8 rows ran scalar).
        run_with::<Fused>(
            kernel,
            |tile, depth, panel| tile_sums_vnni(tile, depth, panel),
            attend_text::<Fused, 8, 16, 4>,
        );
    }

    /// The sums of one tile (`MR` rows of `depth` bytes) and one panel (`depth / 4` groups
    /// of `NR × 4` bytes).
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    fn tile_sums_vnni(tile: &[u8], depth: usize, panel: &[i8]) -> [[i32; NR]; MR] {
        let groups = depth / 4;
        let (a, _) = tile.as_chunks::<4>();
        let (b, _) = panel.as_chunks::<64>();
        let (a, b) = (&a[..MR * groups], &b[..3 * groups]);
        let mut sums = [[_mm512_setzero_si512(); 3]; MR];
        for group in 0..groups {
            let b0: __m512i = bytemuck::cast(b[3 * group]);
            let b1: __m512i = bytemuck::cast(b[3 * group + 1]);
            let b2: __m512i = bytemuck::cast(b[3 * group + 2]);
            for (row, sums) in sums.iter_mut().enumerate() {
                let a = _mm512_set1_epi32(i32::from_ne_bytes(a[row * groups + group]));
                sums[0] = _mm512_dpbusd_epi32(sums[0], a, b0);
                sums[1] = _mm512_dpbusd_epi32(sums[1], a, b1);
                sums[2] = _mm512_dpbusd_epi32(sums[2], a, b2);
            }
        }
        let mut out = [[0i32; NR]; MR];
        for (out, sums) in out.iter_mut().zip(&sums) {
            for (out, sum) in out.chunks_exact_mut(16).zip(sums) {
                out.copy_from_slice(&bytemuck::cast::<__m512i, [i32; 16]>(*sum));
            }
        }
        out
    }
}
