//! Work split over rayon's pool, the pool (and thread count) candle's own CPU kernels use.

use rayon::prelude::*;

/// Whether the work runs on this thread alone: rayon's pool has one thread
/// (`RAYON_NUM_THREADS=1`). Asked of rayon, not of `candle_core::utils::get_num_threads`,
/// which reads and parses `/proc/cpuinfo` on every call (the kernels ask about a hundred
/// times a forward pass; a profile of NFCorpus's ingestion found about 2 % of the CPU time
/// in the kernel formatting that file).
fn on_one_thread() -> bool {
    rayon::current_num_threads() <= 1
}

/// Calls `f(state, input, output)` for each pair of consecutive chunks of `input` and
/// `output`, on rayon's pool, with a `state` made by `init` once per task rayon splits the
/// work into (scratch space, reused from chunk to chunk instead of made for each); in order
/// on this thread with one `state` when candle runs on one thread (`RAYON_NUM_THREADS=1`),
/// so no pool is woken for nothing.
pub(crate) fn for_each_chunk_with<A: Sync, B: Send, S>(
    input: &[A],
    input_chunk: usize,
    output: &mut [B],
    output_chunk: usize,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, &[A], &mut [B]) + Sync + Send,
) {
    if on_one_thread() {
        let mut state = init();
        for (input, output) in input
            .chunks(input_chunk)
            .zip(output.chunks_mut(output_chunk))
        {
            f(&mut state, input, output);
        }
    } else {
        input
            .par_chunks(input_chunk)
            .zip(output.par_chunks_mut(output_chunk))
            .for_each_init(init, |state, (input, output)| f(state, input, output));
    }
}

/// Calls `f` with each of `items`, on rayon's pool (which balances items of unequal size);
/// in order on this thread when candle runs on one thread.
pub(crate) fn for_each<T: Send>(items: Vec<T>, f: impl Fn(T) + Sync + Send) {
    if on_one_thread() {
        items.into_iter().for_each(f);
    } else {
        items.into_par_iter().for_each(f);
    }
}
