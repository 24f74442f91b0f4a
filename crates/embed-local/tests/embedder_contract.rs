//! The `Embedder` contract (tessera-knowledge's suite) on each embedded model (fetched by
//! `just models`), on each kernel this CPU has: f32, the best 8-bit kernel, and the AVX2
//! kernel's scheme where that is another one.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;

use tessera_embed_local::{LocalEmbedder, LocalEmbedderOptions, LocalEmbeddingModel, Precision};
use tessera_knowledge::Embedder;

mod support;

use support::models_dir;

/// The precisions that run distinct kernels here (8-bit on AVX2 is the best kernel already
/// where the CPU lacks VNNI).
fn distinct_kernels() -> Vec<Precision> {
    let mut kernels: Vec<Precision> = Vec::new();
    for precision in [Precision::F32, Precision::Int8, Precision::Int8Avx2] {
        if kernels
            .iter()
            .all(|kept| kept.kernel_name() != precision.kernel_name())
        {
            kernels.push(precision);
        }
    }
    kernels
}

/// Runs the suite on `model`, loaded once per kernel.
async fn contract_holds(model: LocalEmbeddingModel) {
    let root = models_dir();
    let dir = model.find(&root).unwrap_or_else(|| {
        panic!(
            "{} is not under {}: run `just models`",
            model.name(),
            root.display()
        )
    });
    for precision in distinct_kernels() {
        eprintln!("{} on {}", model.name(), precision.kernel_name());
        let options = LocalEmbedderOptions {
            model,
            precision,
            ..LocalEmbedderOptions::default()
        };
        let embedder: Arc<dyn Embedder> =
            Arc::new(LocalEmbedder::load(&dir, options).expect("the model loads"));
        let fresh = || {
            let embedder = Arc::clone(&embedder);
            async move { (embedder, ()) }
        };
        tessera_knowledge::embedder_contract!(@in_sequence fresh);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_minilm_l6_v2_keeps_the_contract_on_every_kernel() {
    contract_holds(LocalEmbeddingModel::AllMiniLmL6V2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bge_small_en_v1_5_keeps_the_contract_on_every_kernel() {
    contract_holds(LocalEmbeddingModel::BgeSmallEnV15).await;
}
