//! Batches (pure domain): OpenAI's Batch API as Tessera runs it. It owns what a batch is
//! (an input file of JSON lines, one endpoint, a window, a status and its counts), how its
//! input is checked before anything runs, and how a [`BatchRunner`] works through a batch
//! under a lease: each line's answer is kept as it arrives, so a runner that stops loses
//! nothing and a second one takes over where it left off, skipping what is kept; cancelling
//! and the window's end are honoured between lines; at the end the answers become an output
//! file and an error file. It knows nothing of HTTP, SQL or models: adapters implement
//! [`BatchStore`], [`BatchFiles`] (the knowledge domain's files) and [`LineExecutor`] (the
//! completion and embedding pipelines, called without HTTP). The `contract` feature has the
//! store port's contract suite (`batch_store_contract!`).

mod batch;
#[cfg(feature = "contract")]
pub mod contract;
mod input;
mod output;
mod ports;
mod runner;
mod service;

pub use batch::{
    Batch, BatchEnd, BatchEndpoint, BatchId, BatchProblem, BatchStatus, COMPLETION_WINDOW,
    LineResult, RequestCounts,
};
pub use input::{InputLine, MAX_CUSTOM_ID_CHARS, MAX_LINES, parse_input};
pub use output::{output_line, result_files};
pub use ports::{BatchFiles, BatchStore, InputFileError, LineExecutor, LineResponse};
pub use runner::{BatchRunner, RunnerSettings};
pub use service::{BatchService, NewBatch};
// The contract macro's path to the kernel, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
