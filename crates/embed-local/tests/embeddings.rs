//! The encoder against the real all-MiniLM-L6-v2 (fetched by `just models`).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::{
    path::PathBuf,
    sync::{Arc, OnceLock},
};

use tessera_embed_local::{LocalEmbedder, LocalEmbedderOptions, Precision, find_model_dir};
use tessera_knowledge::Embedder;

mod support;

use support::models_dir;

fn model_dir() -> PathBuf {
    let root = models_dir();
    find_model_dir(&root).unwrap_or_else(|| {
        panic!(
            "all-MiniLM-L6-v2 is not under {}: run `just models`",
            root.display()
        )
    })
}

/// One encoder per precision for the whole test binary (loading takes a while).
fn embedder_with(precision: Precision) -> Arc<LocalEmbedder> {
    static EMBEDDERS: [OnceLock<Arc<LocalEmbedder>>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    let slot = match precision {
        Precision::Auto => 0,
        Precision::F32 => 1,
        Precision::Int8 => 2,
        Precision::Int8Avx2 => 3,
    };
    EMBEDDERS[slot]
        .get_or_init(|| {
            let options = LocalEmbedderOptions {
                precision,
                ..LocalEmbedderOptions::default()
            };
            Arc::new(LocalEmbedder::load(&model_dir(), options).expect("the model loads"))
        })
        .clone()
}

/// The encoder as deployed: [`Precision::Auto`].
fn embedder() -> Arc<LocalEmbedder> {
    embedder_with(Precision::Auto)
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

async fn embed(texts: &[&str]) -> Vec<Vec<f32>> {
    embed_with(Precision::Auto, texts).await
}

async fn embed_with(precision: Precision, texts: &[&str]) -> Vec<Vec<f32>> {
    embedder_with(precision)
        .embed(texts.iter().map(|t| t.to_string()).collect())
        .await
        .expect("texts embed")
}

#[tokio::test]
async fn vectors_have_the_model_width_and_unit_length() {
    let vectors = embed(&[
        "a short text",
        "",
        "ünïcödé and emoji 🚀 survive tokenization",
    ])
    .await;
    assert_eq!(embedder().dimensions(), 384);
    assert_eq!(vectors.len(), 3);
    for vector in &vectors {
        assert_eq!(vector.len(), 384);
        assert!((dot(vector, vector) - 1.0).abs() < 1e-4);
        assert!(vector.iter().all(|x| x.is_finite()));
    }
}

#[tokio::test]
async fn no_texts_give_no_vectors() {
    assert!(embed(&[]).await.is_empty());
}

#[tokio::test]
async fn a_paraphrase_is_closer_than_unrelated_sentences() {
    let vectors = embed(&[
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The girl is carrying a baby.",
        "A cheetah is running behind its prey.",
    ])
    .await;
    let paraphrase = dot(&vectors[0], &vectors[1]);
    let unrelated = dot(&vectors[0], &vectors[2]).max(dot(&vectors[0], &vectors[3]));
    assert!(paraphrase > 0.5, "paraphrase similarity {paraphrase}");
    assert!(unrelated < 0.3, "unrelated similarity {unrelated}");
}

#[tokio::test]
async fn a_question_ranks_the_passage_that_answers_it_first() {
    let passages = [
        "Invoices are payable within 30 days of receipt by bank transfer.",
        "To reset your password, open Settings, choose Security and click Reset password.",
        "The office is closed on public holidays and the last Friday of each month.",
        "Our API rate limit is 600 requests per minute per organization.",
    ];
    let query = embed(&["How do I change my password?"]).await.remove(0);
    let vectors = embed(&passages).await;
    let best = (0..passages.len())
        .max_by(|&a, &b| dot(&query, &vectors[a]).total_cmp(&dot(&query, &vectors[b])))
        .expect("passages");
    assert_eq!(best, 1);
}

#[tokio::test]
async fn a_text_gets_the_same_vector_alone_and_in_a_padded_batch() {
    let short = "Rust is a systems programming language.";
    let long = "The quick brown fox jumps over the lazy dog while the rest of the pack \
                sleeps under the old oak tree at the edge of the village green.";
    let alone = embed(&[short]).await.remove(0);
    // Batched behind a longer text, `short` is padded; the mask keeps padding out of its mean.
    let batched = embed(&[long, short]).await;
    let difference = alone
        .iter()
        .zip(&batched[1])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(difference < 1e-4, "max difference {difference}");
    assert!(dot(&batched[0], &batched[1]) < 0.99);
}

#[tokio::test]
async fn order_is_kept_across_batches_of_mixed_lengths() {
    let texts: Vec<String> = (0..70)
        .map(|i| format!("sentence number {i} {}", "word ".repeat(i % 7 * 5)))
        .collect();
    let together = embedder().embed(texts.clone()).await.expect("texts embed");
    assert_eq!(together.len(), texts.len());
    for i in [0, 13, 34, 69] {
        let alone = embedder()
            .embed(vec![texts[i].clone()])
            .await
            .expect("text embeds")
            .remove(0);
        assert!(dot(&alone, &together[i]) > 0.9999, "text {i} moved");
    }
}

#[tokio::test]
async fn texts_longer_than_the_model_reads_are_truncated_not_refused() {
    let long = "tokens ".repeat(5000);
    let vectors = embed(&[&long, "short"]).await;
    assert_eq!(vectors[0].len(), 384);
}

#[tokio::test]
async fn concurrent_callers_are_all_answered() {
    let calls = (0..8).map(|i| {
        let embedder = embedder();
        tokio::spawn(async move { embedder.embed(vec![format!("caller {i}"); 5]).await })
    });
    for call in calls {
        let vectors = call.await.expect("task").expect("texts embed");
        assert_eq!(vectors.len(), 5);
    }
}

#[test]
fn a_folder_without_a_model_is_refused_clearly() {
    let dir = std::env::temp_dir().join(format!("tessera-no-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    assert!(find_model_dir(&dir).is_none());
    let error =
        LocalEmbedder::load(&dir, LocalEmbedderOptions::default()).expect_err("no model there");
    assert!(error.to_string().contains("config.json"), "{error}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The first eight dimensions sentence-transformers 6.2.0 (PyTorch, CPU) gives the same model
/// for these texts (`normalize_embeddings=True`, `max_seq_length` 256), recorded once: the
/// pooling, normalisation and truncation here must match the reference implementation (in
/// f32: 8-bit vectors are held to the f32 ones below).
const REFERENCE: [(&str, [f32; 8]); 2] = [
    (
        "A man is eating food.",
        [
            0.033242, 0.004406, -0.006277, 0.048379, -0.138702, -0.033617, 0.101128, -0.054385,
        ],
    ),
    (
        "The girl is carrying a baby.",
        [
            -0.036309, -0.035653, -0.027223, 0.03832, 0.070778, -0.01658, 0.061681, 0.054438,
        ],
    ),
];
const TRUNCATED_REFERENCE: [f32; 8] = [
    -0.003054, -0.097847, -0.008892, -0.057319, -0.052963, 0.028956, 0.088757, 0.00924,
];

fn assert_close(got: &[f32], expected: &[f32], what: &str) {
    for (index, (got, expected)) in got.iter().zip(expected).enumerate() {
        assert!(
            (got - expected).abs() < 2e-4,
            "{what}: dimension {index} is {got}, sentence-transformers gives {expected}"
        );
    }
}

#[tokio::test]
async fn vectors_match_sentence_transformers() {
    let long = "tokens ".repeat(400);
    let mut texts: Vec<&str> = REFERENCE.iter().map(|(text, _)| *text).collect();
    texts.push(&long);
    let vectors = embed_with(Precision::F32, &texts).await;
    for ((text, expected), vector) in REFERENCE.iter().zip(&vectors) {
        assert_close(&vector[..8], expected, text);
    }
    assert_close(
        &vectors[2][..8],
        &TRUNCATED_REFERENCE,
        "a text cut at 256 tokens",
    );
}

/// 8-bit dense layers move each vector by quantization noise only: a cosine of at least
/// 0.99 with the f32 vector, for short, long, truncated and non-English texts. Both 8-bit
/// schemes are held to it: the best kernel this CPU has (VNNI with every level, or AVX2, or
/// the portable kernel) and the AVX2 kernel's own scheme (activations in 182 levels, weights
/// in 181), run on AVX2 even where the CPU has VNNI.
#[tokio::test]
async fn int8_vectors_stay_close_to_the_f32_vectors() {
    let long = "tokens ".repeat(400);
    let texts = [
        "A man is eating food.",
        "To reset your password, open Settings, choose Security and click Reset password.",
        "ünïcödé and emoji 🚀 survive tokenization",
        "Invoices are payable within 30 days of receipt by bank transfer; late payments \
         accrue interest at the statutory rate and may lead to the suspension of the account.",
        &long,
    ];
    let reference = embed_with(Precision::F32, &texts).await;
    let best = embed_with(Precision::Int8, &texts).await;
    let avx2 = embed_with(Precision::Int8Avx2, &texts).await;
    for quantized in [&best, &avx2] {
        for ((text, f32), int8) in texts.iter().zip(&reference).zip(quantized) {
            let cosine = dot(f32, int8);
            assert!(cosine > 0.99, "{text:.40}: cosine {cosine}");
            assert_ne!(f32, int8, "{text:.40}: the 8-bit path was not taken");
        }
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        assert_eq!(Precision::Int8Avx2.kernel_name(), "int8 (AVX2)");
        if std::arch::is_x86_feature_detected!("avx512vnni") {
            // Two kernels with two schemes: different vectors, each close to f32.
            assert_eq!(Precision::Int8.kernel_name(), "int8 (AVX-512 VNNI)");
            assert_ne!(best, avx2, "the AVX2 kernel was not taken");
        }
    }
}
