//! Work split over rayon's pool, the pool (and thread count) candle's own CPU kernels use.

use rayon::prelude::*;

/// Calls `f(index, input, output)` for each pair of consecutive chunks of `input` and
/// `output`, on rayon's pool; in order on this thread when candle runs on one thread
/// (`RAYON_NUM_THREADS=1`), so no pool is woken for nothing.
pub(crate) fn for_each_chunk<A: Sync, B: Send>(
    input: &[A],
    input_chunk: usize,
    output: &mut [B],
    output_chunk: usize,
    f: impl Fn(usize, &[A], &mut [B]) + Sync,
) {
    if candle_core::utils::get_num_threads() <= 1 {
        for (index, (input, output)) in input
            .chunks(input_chunk)
            .zip(output.chunks_mut(output_chunk))
            .enumerate()
        {
            f(index, input, output);
        }
    } else {
        input
            .par_chunks(input_chunk)
            .zip(output.par_chunks_mut(output_chunk))
            .enumerate()
            .for_each(|(index, (input, output))| f(index, input, output));
    }
}

/// Calls `f` with each of `items`, on rayon's pool (which balances items of unequal size);
/// in order on this thread when candle runs on one thread.
pub(crate) fn for_each<T: Send>(items: Vec<T>, f: impl Fn(T) + Sync + Send) {
    if candle_core::utils::get_num_threads() <= 1 {
        items.into_iter().for_each(f);
    } else {
        items.into_par_iter().for_each(f);
    }
}
