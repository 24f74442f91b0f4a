//! How the encoder's dense layers multiply (in `f32`, or with 8-bit weights and
//! activations), and which CPU's build of the hot loops runs them: AVX-512 VNNI, AVX2 or the
//! baseline CPU.

use crate::{
    avx2, avx512,
    kernel::{Kernel, run_portable},
};

/// The arithmetic of the encoder's dense layers (about nine tenths of its work).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// 8-bit where the CPU has AVX-512 VNNI or AVX2 (about 2.4× the f32 throughput with
    /// VNNI), `f32` elsewhere.
    #[default]
    Auto,
    /// `f32` throughout: the reference model's vectors to float rounding.
    F32,
    /// 8-bit everywhere, on the best kernel the CPU has (AVX-512 VNNI, then AVX2); without
    /// either a portable kernel computes the same vectors slowly.
    Int8,
    /// For measurement: 8-bit on the AVX2 kernel (and its quantization scheme) even where
    /// the CPU has VNNI, to measure and test on a VNNI machine what an AVX2-only CPU runs.
    /// Portable where the CPU lacks AVX2.
    Int8Avx2,
}

impl std::str::FromStr for Precision {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(Self::Auto),
            "f32" => Ok(Self::F32),
            "int8" => Ok(Self::Int8),
            "int8-avx2" => Ok(Self::Int8Avx2),
            other => Err(format!(
                "expected `auto`, `f32`, `int8` or `int8-avx2`, got `{other}`"
            )),
        }
    }
}

/// What a [`Precision`] comes to on this CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DenseKernel {
    F32,
    /// 8-bit products on the kernel of `accelerated` (the portable one for `None`).
    Int8 {
        accelerated: Option<Accelerator>,
    },
}

impl Precision {
    /// What this precision runs on this CPU: `f32`, `int8 (AVX-512 VNNI)`, `int8 (AVX2)` or
    /// `int8 (portable)`.
    pub fn kernel_name(self) -> &'static str {
        match self.kernel() {
            DenseKernel::F32 => "f32",
            DenseKernel::Int8 {
                accelerated: Some(Accelerator::Avx512Vnni),
            } => "int8 (AVX-512 VNNI)",
            DenseKernel::Int8 {
                accelerated: Some(Accelerator::Avx2),
            } => "int8 (AVX2)",
            DenseKernel::Int8 { accelerated: None } => "int8 (portable)",
        }
    }

    pub(crate) fn kernel(self) -> DenseKernel {
        let best = Accelerator::best();
        match self {
            Self::F32 => DenseKernel::F32,
            Self::Auto if best.is_none() => DenseKernel::F32,
            Self::Auto | Self::Int8 => DenseKernel::Int8 { accelerated: best },
            Self::Int8Avx2 => DenseKernel::Int8 {
                accelerated: Accelerator::Avx2.available().then_some(Accelerator::Avx2),
            },
        }
    }
}

/// The CPU extensions the encoder has its own builds of the hot loops for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Accelerator {
    /// AVX-512 F, BW and VNNI: `vpdpbusd` for the 8-bit products, 16 `f32` lanes.
    Avx512Vnni,
    /// AVX2 and FMA: `vpmaddubsw` for the 8-bit products, 8 `f32` lanes.
    Avx2,
}

impl Accelerator {
    /// The best one this CPU has (checked once, then cached by the standard library).
    pub(crate) fn best() -> Option<Self> {
        [Self::Avx512Vnni, Self::Avx2]
            .into_iter()
            .find(|accelerator| accelerator.available())
    }

    pub(crate) fn available(self) -> bool {
        match self {
            Self::Avx512Vnni => avx512::available(),
            Self::Avx2 => avx2::available(),
        }
    }
}

/// Runs `kernel` as compiled for `accelerated` (each falls back to the baseline build on a
/// CPU that lacks it), or for the baseline CPU with the portable 8-bit kernel.
pub(crate) fn run(accelerated: Option<Accelerator>, kernel: Kernel<'_>) {
    match accelerated {
        Some(Accelerator::Avx512Vnni) => avx512::run(kernel),
        Some(Accelerator::Avx2) => avx2::run(kernel),
        None => run_portable(kernel),
    }
}

/// Every build of the kernels this CPU runs: the baseline one (`None`), then each
/// accelerated one it has; those it lacks are named on standard error, never run.
#[cfg(test)]
pub(crate) fn builds_on_this_cpu() -> Vec<Option<Accelerator>> {
    let mut builds = vec![None];
    for accelerator in [Accelerator::Avx2, Accelerator::Avx512Vnni] {
        if accelerator.available() {
            builds.push(Some(accelerator));
        } else {
            eprintln!("{accelerator:?} skipped: this CPU lacks it");
        }
    }
    builds
}

/// The CPU flags the kernels are chosen by, as benchmarks print them
/// (`avx2 yes, fma yes, avx512f no, …`; the architecture's name elsewhere).
pub fn cpu_flags() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        let flags = [
            ("avx2", std::arch::is_x86_feature_detected!("avx2")),
            ("fma", std::arch::is_x86_feature_detected!("fma")),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
            ("avx512bw", std::arch::is_x86_feature_detected!("avx512bw")),
            (
                "avx512_vnni",
                std::arch::is_x86_feature_detected!("avx512vnni"),
            ),
        ];
        flags
            .iter()
            .map(|(name, present)| format!("{name} {}", if *present { "yes" } else { "no" }))
            .collect::<Vec<_>>()
            .join(", ")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        format!("{} (no x86 kernels)", std::env::consts::ARCH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::int8::{Levels, MR, NR};

    #[test]
    fn precisions_parse_from_their_names_only() {
        assert_eq!("auto".parse(), Ok(Precision::Auto));
        assert_eq!("f32".parse(), Ok(Precision::F32));
        assert_eq!("int8".parse(), Ok(Precision::Int8));
        assert_eq!("int8-avx2".parse(), Ok(Precision::Int8Avx2));
        assert!("INT8".parse::<Precision>().is_err());
        assert!("avx2".parse::<Precision>().is_err());
    }

    #[test]
    fn each_precision_runs_the_kernel_this_cpu_has() {
        assert_eq!(Precision::F32.kernel(), DenseKernel::F32);
        let best = Accelerator::best();
        assert_eq!(
            Precision::Int8.kernel(),
            DenseKernel::Int8 { accelerated: best }
        );
        let auto = Precision::Auto.kernel();
        if best.is_some() {
            assert_eq!(auto, DenseKernel::Int8 { accelerated: best });
        } else {
            assert_eq!(auto, DenseKernel::F32);
        }
        if avx2::available() {
            assert_eq!(Precision::Int8Avx2.kernel_name(), "int8 (AVX2)");
        } else {
            assert_eq!(Precision::Int8Avx2.kernel_name(), "int8 (portable)");
        }
        if avx512::available() {
            assert_eq!(Precision::Auto.kernel_name(), "int8 (AVX-512 VNNI)");
        }
    }

    /// A tile and a panel packed as the kernels read them, over `depth` (a multiple of 4).
    fn tile_and_panel(depth: usize, seed: u32, levels: Levels) -> (Vec<u8>, Vec<i8>) {
        // A small linear congruential generator: reproducible bytes without a dependency.
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            state >> 8
        };
        let activations = u32::from(levels.activation) + 1;
        let weights = 2 * u32::from(levels.weight.unsigned_abs()) + 1;
        let tile = (0..MR * depth)
            .map(|_| (next() % activations) as u8)
            .collect();
        let weight = i32::from(levels.weight);
        let panel = (0..depth * NR)
            .map(|_| (next() % weights) as i32 - weight)
            .map(|w| w as i8)
            .collect();
        (tile, panel)
    }

    /// Each accelerated kernel this CPU has gives the portable kernel's integer sums exactly,
    /// on its own scheme's ranges: random bytes over depths that are not multiples of any
    /// unroll, and the extremes (every activation at its top level against every weight at
    /// ±its top level), where a saturating `i16` pair sum would show.
    #[test]
    fn accelerated_sums_equal_the_portable_sums() {
        for (accelerator, levels) in [
            (Accelerator::Avx512Vnni, Levels::FULL),
            (Accelerator::Avx2, Levels::AVX2),
        ] {
            if !accelerator.available() {
                continue;
            }
            for (index, depth) in [4usize, 8, 12, 36, 388, 1540, 1604].into_iter().enumerate() {
                let (tile, panel) = tile_and_panel(depth, index as u32, levels);
                let top = vec![levels.activation; MR * depth];
                let high = vec![levels.weight; depth * NR];
                let low = vec![-levels.weight; depth * NR];
                for (tile, panel) in [(&tile, &panel), (&top, &high), (&top, &low)] {
                    let mut expected = [[0; NR]; MR];
                    run_portable(Kernel::Sums {
                        tile,
                        depth,
                        panel,
                        out: &mut expected,
                    });
                    let mut got = [[0; NR]; MR];
                    run(
                        Some(accelerator),
                        Kernel::Sums {
                            tile,
                            depth,
                            panel,
                            out: &mut got,
                        },
                    );
                    assert_eq!(got, expected, "{accelerator:?}, depth {depth}");
                }
            }
            let extreme = i32::from(levels.activation) * i32::from(levels.weight);
            let (top, high) = (vec![levels.activation; MR * 8], vec![levels.weight; 8 * NR]);
            let mut sums = [[0; NR]; MR];
            run(
                Some(accelerator),
                Kernel::Sums {
                    tile: &top,
                    depth: 8,
                    panel: &high,
                    out: &mut sums,
                },
            );
            assert_eq!(sums, [[8 * extreme; NR]; MR], "{accelerator:?}");
        }
    }
}
