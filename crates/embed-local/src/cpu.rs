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
