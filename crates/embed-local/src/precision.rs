//! How the encoder's dense layers multiply: in `f32`, or with 8-bit weights and activations.

use crate::int8;

/// The arithmetic of the encoder's dense layers (about nine tenths of its work).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// 8-bit where the CPU has AVX-512 VNNI (about 2.4× the throughput), `f32` elsewhere.
    #[default]
    Auto,
    /// `f32` throughout: the reference model's vectors to float rounding.
    F32,
    /// 8-bit everywhere; without VNNI a portable kernel computes the same vectors slowly.
    Int8,
}

impl std::str::FromStr for Precision {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(Self::Auto),
            "f32" => Ok(Self::F32),
            "int8" => Ok(Self::Int8),
            other => Err(format!("expected `auto`, `f32` or `int8`, got `{other}`")),
        }
    }
}

/// What a [`Precision`] comes to on this CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DenseKernel {
    F32,
    Int8 { accelerated: bool },
}

impl Precision {
    /// What this precision runs on this CPU: `f32`, `int8 (AVX-512 VNNI)` or
    /// `int8 (portable)`.
    pub fn kernel_name(self) -> &'static str {
        match self.kernel() {
            DenseKernel::F32 => "f32",
            DenseKernel::Int8 { accelerated: true } => "int8 (AVX-512 VNNI)",
            DenseKernel::Int8 { accelerated: false } => "int8 (portable)",
        }
    }

    pub(crate) fn kernel(self) -> DenseKernel {
        let accelerated = int8::accelerated();
        match self {
            Self::F32 => DenseKernel::F32,
            Self::Auto if !accelerated => DenseKernel::F32,
            Self::Auto | Self::Int8 => DenseKernel::Int8 { accelerated },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precisions_parse_from_their_names_only() {
        assert_eq!("auto".parse(), Ok(Precision::Auto));
        assert_eq!("f32".parse(), Ok(Precision::F32));
        assert_eq!("int8".parse(), Ok(Precision::Int8));
        assert!("INT8".parse::<Precision>().is_err());
    }

    #[test]
    fn f32_is_f32_everywhere_and_int8_is_int8_everywhere() {
        assert_eq!(Precision::F32.kernel(), DenseKernel::F32);
        assert!(matches!(Precision::Int8.kernel(), DenseKernel::Int8 { .. }));
        let auto = Precision::Auto.kernel();
        if int8::accelerated() {
            assert_eq!(auto, DenseKernel::Int8 { accelerated: true });
        } else {
            assert_eq!(auto, DenseKernel::F32);
        }
    }
}
