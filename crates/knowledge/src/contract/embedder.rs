//! The `Embedder` contract, for anyone implementing the port: each check states promises of
//! the trait against an embedder, and [`embedder_contract!`](crate::embedder_contract)
//! turns them into tests. The model is named; every vector has `dimensions()` values and
//! unit length; one vector per text, in order, each the vector the text gets alone (within
//! [`SAME_VECTOR_COSINE`]), the same every time and for concurrent callers; no texts, no
//! vectors; a query's vector is closest to the passage that answers it; texts longer than
//! the model reads are truncated, not refused; token counts, where the embedder knows its
//! tokenizer, grow with the text and stop at the model's window. A few short texts each, so
//! the suite costs little on a real model. Tessera runs it against each embedded model of
//! `tessera-embed-local`, on each kernel the CPU has.

use std::sync::Arc;

use crate::Embedder;

/// Runs every check of the `Embedder` contract as a `#[tokio::test]` of the calling crate,
/// each on the embedder made by `$factory`: an expression that, called with no argument,
/// gives a future of `(embedder, guard)`, `embedder` an `Arc<dyn Embedder>` (the guard is
/// dropped after the embedder).
///
/// `embedder_contract!(@in_sequence $factory)` instead runs every check in turn inside the
/// test that calls it: for a model loaded once for all of them.
#[macro_export]
macro_rules! embedder_contract {
    (@in_sequence $factory:expr) => {
        $crate::embedder_contract! { @checks in_sequence $factory }
    };
    // The one list of the contract's checks, run in the named way.
    (@checks $mode:ident $factory:expr) => {
        $crate::__adapter_contract_checks! { $mode $factory, embedder;
            the_model_is_named_and_vectors_have_its_dimensions_and_unit_length,
            no_texts_give_no_vectors,
            the_same_text_gives_the_same_vector,
            a_batch_keeps_its_order_and_matches_each_text_embedded_alone,
            distinct_texts_get_distinct_vectors,
            a_query_is_closest_to_the_passage_that_answers_it,
            texts_longer_than_the_model_reads_are_truncated_not_refused,
            token_counts_grow_with_the_text_up_to_the_window,
            concurrent_calls_each_get_their_own_vectors,
        }
    };
    ($factory:expr) => {
        $crate::embedder_contract! { @checks tests $factory }
    };
}

/// The least cosine between two vectors of one text (alone or in a batch, now or later):
/// batching may move the last digits (padding, 8-bit activations), not the meaning.
pub const SAME_VECTOR_COSINE: f32 = 0.9999;

/// Passages of different lengths and subjects; [`QUESTION`] asks what the third answers.
pub const PASSAGES: [&str; 6] = [
    "Invoices are payable within 30 days of receipt by bank transfer.",
    "Penguins",
    "To reset your password, open Settings, choose Security and click Reset password.",
    "ünïcödé and emoji 🚀 survive tokenization",
    "The office is closed on public holidays and the last Friday of each month, when the \
     building is cleaned and the heating is serviced by the landlord's contractors.",
    "Our API rate limit is 600 requests per minute per organization.",
];

/// What [`PASSAGES`]`[2]` answers.
pub const QUESTION: &str = "How do I change my password?";

pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The vectors of `texts`, one call.
pub async fn embed(embedder: &dyn Embedder, texts: &[&str]) -> Vec<Vec<f32>> {
    let texts = texts.iter().map(|text| (*text).to_owned()).collect();
    embedder.embed(texts).await.expect("the texts are embedded")
}

/// Panics unless `vector` has the embedder's dimensions, finite values and unit length.
pub fn assert_unit_vector(embedder: &dyn Embedder, vector: &[f32], what: &str) {
    assert_eq!(vector.len(), embedder.dimensions(), "{what}: dimensions");
    assert!(vector.iter().all(|x| x.is_finite()), "{what}: not finite");
    let norm = dot(vector, vector).sqrt();
    assert!((norm - 1.0).abs() < 1e-3, "{what}: length {norm}");
}

/// Panics unless `a` and `b` are one text's vector (at least [`SAME_VECTOR_COSINE`]).
pub fn assert_same_vector(a: &[f32], b: &[f32], what: &str) {
    let cosine = dot(a, b);
    assert!(cosine >= SAME_VECTOR_COSINE, "{what}: cosine {cosine}");
}

/// The model has a name (stored with the index) and a width, and every vector of a batch
/// has that width and unit length (its dot products are cosines).
pub async fn the_model_is_named_and_vectors_have_its_dimensions_and_unit_length(
    embedder: &Arc<dyn Embedder>,
) {
    let model = embedder.model();
    assert!(
        !model.trim().is_empty() && model.trim() == model,
        "model {model:?}"
    );
    assert!(embedder.dimensions() > 0);
    let vectors = embed(&**embedder, &PASSAGES).await;
    assert_eq!(vectors.len(), PASSAGES.len());
    for (text, vector) in PASSAGES.iter().zip(&vectors) {
        assert_unit_vector(&**embedder, vector, text);
    }
}

/// An empty batch is answered with no vectors, not an error.
pub async fn no_texts_give_no_vectors(embedder: &Arc<dyn Embedder>) {
    assert_eq!(embedder.embed(Vec::new()).await, Ok(Vec::new()));
}

/// A text embedded twice, in two calls or twice in one batch, gets the same vector.
pub async fn the_same_text_gives_the_same_vector(embedder: &Arc<dyn Embedder>) {
    let text = PASSAGES[0];
    let first = embed(&**embedder, &[text]).await.remove(0);
    let again = embed(&**embedder, &[text]).await.remove(0);
    assert_same_vector(&first, &again, "two calls");
    let twice = embed(&**embedder, &[text, text]).await;
    assert_same_vector(&twice[0], &twice[1], "twice in a batch");
    assert_same_vector(&first, &twice[0], "alone and in a batch");
}

/// A batch of texts of mixed lengths answers in the texts' order, each vector the one its
/// text gets alone (and nearer to it than to any other text's).
pub async fn a_batch_keeps_its_order_and_matches_each_text_embedded_alone(
    embedder: &Arc<dyn Embedder>,
) {
    let batch = embed(&**embedder, &PASSAGES).await;
    for (i, text) in PASSAGES.iter().enumerate() {
        let alone = embed(&**embedder, &[text]).await.remove(0);
        assert_same_vector(&batch[i], &alone, text);
        let nearest = (0..batch.len())
            .max_by(|&a, &b| dot(&alone, &batch[a]).total_cmp(&dot(&alone, &batch[b])))
            .expect("vectors");
        assert_eq!(nearest, i, "{text}: the batch's vector {nearest} is nearer");
    }
}

/// Different texts get different vectors (an embedder answering one vector for everything
/// would pass the width and length checks).
pub async fn distinct_texts_get_distinct_vectors(embedder: &Arc<dyn Embedder>) {
    let vectors = embed(&**embedder, &PASSAGES).await;
    for (i, a) in vectors.iter().enumerate() {
        for (j, b) in vectors.iter().enumerate().skip(i + 1) {
            let cosine = dot(a, b);
            assert!(cosine < 0.95, "passages {i} and {j}: cosine {cosine}");
        }
    }
}

/// A query's vector (with whatever instruction the model reads queries with) has the same
/// width and unit length, is the same every time, and is closest to the passage that
/// answers it: queries and passages are comparable.
pub async fn a_query_is_closest_to_the_passage_that_answers_it(embedder: &Arc<dyn Embedder>) {
    let query = embedder.embed_query(QUESTION.into()).await.unwrap();
    assert_unit_vector(&**embedder, &query, QUESTION);
    let again = embedder.embed_query(QUESTION.into()).await.unwrap();
    assert_same_vector(&query, &again, "the query twice");
    let passages = embed(&**embedder, &PASSAGES).await;
    let best = (0..passages.len())
        .max_by(|&a, &b| dot(&query, &passages[a]).total_cmp(&dot(&query, &passages[b])))
        .expect("passages");
    assert_eq!(best, 2, "{QUESTION} is nearest to {:?}", PASSAGES[best]);
}

/// A text longer than the model reads is embedded, not refused: when the embedder says how
/// much it reads (`chunk_tokens`), two texts alike up to there and wholly different after
/// get the same vector; otherwise a text of 20,000 words gets a unit vector.
pub async fn texts_longer_than_the_model_reads_are_truncated_not_refused(
    embedder: &Arc<dyn Embedder>,
) {
    let Some(tokens) = embedder.chunk_tokens() else {
        let long = "tokens ".repeat(20_000);
        let vectors = embed(&**embedder, &[&long]).await;
        assert_unit_vector(&**embedder, &vectors[0], "20,000 words");
        return;
    };
    let window = tokens.window();
    // Just past the window: a model reading further would see the endings.
    let read = "tokens ".repeat(window / tokens.count("tokens").max(1) + 1);
    assert!(
        tokens.count(&read) > window,
        "the text must be longer than the model reads"
    );
    // Endings as long as the window: a model reading past it could not hide them (a short
    // one would barely move a mean over the whole text).
    let endings = [
        format!("{read} {}", "penguins ".repeat(window)),
        format!("{read} {}", "invoices ".repeat(window)),
    ];
    let vectors = embed(&**embedder, &[&endings[0], &endings[1]]).await;
    for vector in &vectors {
        assert_unit_vector(&**embedder, vector, "a long text");
    }
    assert_same_vector(&vectors[0], &vectors[1], "texts alike up to the window");
}

/// Where the embedder knows its tokenizer: a longer text counts more tokens, and the model
/// reads all of a short text and no more than its window of a long one.
pub async fn token_counts_grow_with_the_text_up_to_the_window(embedder: &Arc<dyn Embedder>) {
    let short = PASSAGES[0];
    let doubled = format!("{short} {short}");
    if let (Some(once), Some(twice)) = (
        embedder.count_tokens(short),
        embedder.count_tokens(&doubled),
    ) {
        assert!(0 < once && once < twice, "{once} then {twice} tokens");
    }
    let Some(tokens) = embedder.chunk_tokens() else {
        return;
    };
    let window = tokens.window();
    assert!(window > 0);
    assert!(0 < tokens.count(short) && tokens.count(short) < tokens.count(&doubled));
    let specials = embedder.count_tokens("").map_or(0, |count| count as usize);
    if let Some(read) = embedder.count_tokens(short) {
        assert!(read as usize >= tokens.count(short), "all of a short text");
    }
    let long = "tokens ".repeat(window + 16);
    if let Some(read) = embedder.count_tokens(&long) {
        assert!(
            read as usize <= window + specials,
            "{read} tokens read of a text longer than the window of {window}"
        );
    }
}

/// Callers embedding at the same time each get their own texts' vectors, in order.
pub async fn concurrent_calls_each_get_their_own_vectors(embedder: &Arc<dyn Embedder>) {
    let alone = embed(&**embedder, &PASSAGES).await;
    let calls: Vec<_> = (0..PASSAGES.len())
        .map(|i| {
            let embedder = Arc::clone(embedder);
            // Each call: its passage, then the next one.
            let texts = vec![
                PASSAGES[i].to_owned(),
                PASSAGES[(i + 1) % PASSAGES.len()].to_owned(),
            ];
            tokio::spawn(async move { embedder.embed(texts).await })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let vectors = call.await.expect("the call's task").expect("embedded");
        assert_eq!(vectors.len(), 2);
        assert_same_vector(&vectors[0], &alone[i], PASSAGES[i]);
        let next = (i + 1) % PASSAGES.len();
        assert_same_vector(&vectors[1], &alone[next], PASSAGES[next]);
    }
}
