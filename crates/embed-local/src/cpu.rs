//! Reading a candle tensor's `f32` values in place.

use candle_core::{Result, Storage, Tensor, bail};

/// Calls `f` with the values of `tensor` (made contiguous first if it is not), without
/// copying them out of candle's storage.
pub(crate) fn with_values<R>(tensor: &Tensor, f: impl FnOnce(&[f32]) -> R) -> Result<R> {
    let tensor = tensor.contiguous()?;
    let (storage, layout) = tensor.storage_and_layout();
    let Storage::Cpu(storage) = &*storage else {
        bail!("the encoder's own kernels run on the CPU only");
    };
    let Some((start, end)) = layout.contiguous_offsets() else {
        bail!("a non-contiguous tensor");
    };
    Ok(f(&storage.as_slice::<f32>()?[start..end]))
}

/// The largest absolute difference between two tensors of the same shape (tests compare
/// kernels with candle's operations by it).
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn largest_difference(a: &Tensor, b: &Tensor) -> f32 {
    (a - b)
        .unwrap()
        .abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}
