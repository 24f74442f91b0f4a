//! The data the kernels of every instruction set read, in the engine's block layouts: a
//! weight row in each format it keeps (Q4_1 and Q8_0 blocks of [`BLOCK`] weights with their
//! half-precision scales, or plain f32) and one token's activations quantized to 16 bits per
//! block (`int16`'s path). The dispatching modules (`matrix`, `kernels`, `int16`) and the
//! AVX-512 kernels (`avx512`) read them alike, so this module imports none of those.

/// Weights per quantization block (Q4_1 and Q8_0 alike).
pub(crate) const BLOCK: usize = 32;

/// A half-precision scale as the file stores it: kept in 2 bytes, not widened at load,
/// because generation reads every weight block from memory once per token and the scales
/// are a sixth of a Q4_1 block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Half(pub u16);

impl Half {
    /// The value as f32: exponent and mantissa moved into f32's places and rescaled by 2^112
    /// (the difference of the exponent biases), which is exact for normal and subnormal
    /// halves alike. (Weights hold no infinities or NaNs.)
    #[inline(always)]
    pub(crate) fn get(self) -> f32 {
        const TWO_TO_112: u32 = 0x7780_0000;
        let magnitude =
            f32::from_bits(u32::from(self.0 & 0x7fff) << 13) * f32::from_bits(TWO_TO_112);
        f32::from_bits(magnitude.to_bits() | (u32::from(self.0 & 0x8000) << 16))
    }
}

/// One row of a Q4_1 matrix: weight = scale × q + min, q in 0..16; byte j of a block holds
/// element j (low nibble) and element j + 16 (high nibble).
#[derive(Clone, Copy)]
pub(crate) struct Q4_1Row<'a> {
    pub scales: &'a [Half],
    pub mins: &'a [Half],
    pub quants: &'a [[u8; 16]],
}

/// One row of a Q8_0 matrix: weight = scale × q.
#[derive(Clone, Copy)]
pub(crate) struct Q8_0Row<'a> {
    pub scales: &'a [Half],
    pub quants: &'a [[i8; 32]],
}

/// A row in any of the formats the engine keeps.
#[derive(Clone, Copy)]
pub(crate) enum Row<'a> {
    Q4_1(Q4_1Row<'a>),
    Q8_0(Q8_0Row<'a>),
    F32(&'a [f32]),
}

/// One token's activations, 16 bits per value.
pub(crate) struct Int16Activations {
    scales: Vec<f32>,
    sums: Vec<f32>,
    quants: Vec<[i16; BLOCK]>,
}

impl Int16Activations {
    /// `x` in blocks of 32 (a trailing partial block is ignored: rows of quantized matrices
    /// are whole blocks).
    pub(crate) fn quantize(x: &[f32]) -> Self {
        let (blocks, _) = x.as_chunks::<BLOCK>();
        let mut activations = Self {
            scales: Vec::with_capacity(blocks.len()),
            sums: Vec::with_capacity(blocks.len()),
            quants: Vec::with_capacity(blocks.len()),
        };
        for block in blocks {
            let largest = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let scale = largest / f32::from(i16::MAX);
            let inverse = if largest > 0.0 {
                f32::from(i16::MAX) / largest
            } else {
                0.0
            };
            activations.scales.push(scale);
            activations.sums.push(block.iter().sum());
            // |v × inverse| ≤ 32767, so the cast cannot saturate.
            activations
                .quants
                .push(block.map(|v| (v * inverse).round() as i16));
        }
        activations
    }

    /// Each block's 16-bit values.
    #[inline]
    pub(crate) fn quants(&self) -> &[[i16; BLOCK]] {
        &self.quants
    }

    /// Each block's scale.
    #[inline]
    pub(crate) fn scales(&self) -> &[f32] {
        &self.scales
    }

    /// Each block's exact sum (for Q4_1's minimums).
    #[inline]
    pub(crate) fn sums(&self) -> &[f32] {
        &self.sums
    }
}
