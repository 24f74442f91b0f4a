//! Which instruction set the engine's kernels run on. The widest the CPU has is chosen at
//! run time (AVX-512, else AVX2 with FMA, else portable code), so one binary runs its
//! fastest path on every x86-64 CPU and the portable one everywhere else; a narrower one
//! can be asked for (a benchmark compares the paths on one machine), and the kernel tests
//! run every path the CPU has against the portable reference.

#[cfg(target_arch = "x86_64")]
use pulp::x86::{V3, V4};

/// The instruction sets the kernels are written for, widest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum InstructionSet {
    /// AVX-512 F, BW, CD, DQ and VL (x86-64-v4): 16 lanes of f32 per instruction.
    Avx512,
    /// AVX2 and FMA (x86-64-v3): 8 lanes.
    Avx2,
    /// Plain Rust, for every CPU: the reference the others are tested against.
    Portable,
}

impl InstructionSet {
    /// Every set, widest first.
    pub const ALL: [Self; 3] = [Self::Avx512, Self::Avx2, Self::Portable];

    /// Whether this CPU can run the kernels written for `self`.
    pub fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => V4::try_new().is_some(),
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => V3::try_new().is_some(),
            Self::Portable => true,
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The widest set this CPU has, no wider than `limit` (`None`: no limit).
    pub fn widest(limit: Option<Self>) -> Self {
        Self::ALL
            .into_iter()
            .filter(|set| limit.is_none_or(|limit| *set >= limit))
            .find(|set| set.available())
            .unwrap_or(Self::Portable)
    }

    /// The name logs and benchmarks print.
    pub fn name(self) -> &'static str {
        match self {
            Self::Avx512 => "avx512",
            Self::Avx2 => "avx2",
            Self::Portable => "portable",
        }
    }
}

/// Every set this CPU has, widest first; the others are named on stderr as skipped, so a
/// test never reports a path it did not run as passed.
#[cfg(test)]
pub(crate) fn each_available() -> impl Iterator<Item = InstructionSet> {
    InstructionSet::ALL.into_iter().filter(|set| {
        let available = set.available();
        if !available {
            eprintln!("skipped the {} kernels: this CPU lacks them", set.name());
        }
        available
    })
}
