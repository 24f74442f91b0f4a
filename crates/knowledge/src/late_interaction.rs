//! Late interaction (ColBERT-style): a text is encoded as one unit vector per token instead
//! of one vector in all, and a query's relevance to a passage is MaxSim: each query token's
//! best cosine with any of the passage's tokens, summed over the query's tokens. Passages
//! are encoded once, when they are indexed; a search encodes only its query, then compares
//! it with the candidates' stored token vectors.

use std::sync::Arc;

use async_trait::async_trait;

use crate::EmbedError;

/// Late interaction in search: the model that encodes queries (the one that encoded the
/// chunks at ingestion), and how many of a search's best candidates it reorders.
#[derive(Clone)]
pub struct LateInteractionSearch {
    pub model: Arc<dyn LateInteraction>,
    /// At least the search's limit is reordered.
    pub candidates: usize,
}

impl std::fmt::Debug for LateInteractionSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LateInteractionSearch")
            .field("model", &self.model.model())
            .field("candidates", &self.candidates)
            .finish()
    }
}

/// A text's token vectors: `len()` unit vectors of `dims()` values each, row-major.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TokenVectors {
    dims: usize,
    values: Vec<f32>,
}

impl TokenVectors {
    /// Token vectors from their values, token after token. `None` when `dims` is zero or
    /// the values are not a whole number of tokens.
    pub fn new(dims: usize, values: Vec<f32>) -> Option<Self> {
        (dims > 0 && values.len().is_multiple_of(dims)).then_some(Self { dims, values })
    }

    /// The length of each token's vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The number of tokens.
    pub fn len(&self) -> usize {
        self.values.len().checked_div(self.dims).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// One vector per token, in the text's order.
    pub fn tokens(&self) -> impl ExactSizeIterator<Item = &[f32]> {
        self.values.chunks_exact(self.dims.max(1))
    }

    /// Every value, token after token.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    pub fn into_values(self) -> Vec<f32> {
        self.values
    }

    /// Each token's first `dims` values, scaled back to unit length: the smaller vectors a
    /// model whose leading dimensions carry most of the signal can be stored with. `dims`
    /// at least the current width changes nothing; zero is taken as one.
    #[must_use]
    pub fn truncated(&self, dims: usize) -> Self {
        let dims = dims.max(1);
        if dims >= self.dims {
            return self.clone();
        }
        let mut values = Vec::with_capacity(self.len() * dims);
        for token in self.tokens() {
            let start = values.len();
            values.extend_from_slice(&token[..dims]);
            normalize(&mut values[start..]);
        }
        Self { dims, values }
    }
}

/// Scales `vector` to unit length (a zero vector stays zero).
fn normalize(vector: &mut [f32]) {
    let norm = dot(vector, vector).sqrt();
    if norm > 0.0 {
        for value in vector {
            *value /= norm;
        }
    }
}

/// The dot product, in eight independent sums the compiler keeps in vector registers
/// (one running sum would pin it to one lane: float addition is not reassociated).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = (a_chunks.remainder().iter())
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// MaxSim: for each of the query's tokens, the largest dot product with any of the
/// document's tokens (a cosine, the vectors being unit length), summed over the query's
/// tokens. A document without tokens, or whose vectors are of another length than the
/// query's (another model's or another cut: not comparable), scores 0.
pub fn max_sim(query: &TokenVectors, document: &TokenVectors) -> f32 {
    if document.is_empty() || query.dims != document.dims {
        return 0.0;
    }
    query
        .tokens()
        .map(|q| {
            document
                .tokens()
                .map(|d| dot(q, d))
                .fold(f32::NEG_INFINITY, f32::max)
        })
        .sum()
}

/// Encodes texts as token vectors for late interaction.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait LateInteraction: Send + Sync {
    /// The model's name, stored with the vectors so vectors of different models never mix.
    fn model(&self) -> &str;

    /// The length of every token vector.
    fn dims(&self) -> usize;

    /// Each passage's token vectors, in order. Long passages are cut to what the model
    /// reads.
    async fn encode_documents(&self, texts: Vec<String>) -> Result<Vec<TokenVectors>, EmbedError>;

    /// A search query's token vectors (models read queries and passages differently).
    async fn encode_query(&self, query: String) -> Result<TokenVectors, EmbedError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in [-1, 1) (a 64-bit linear congruential generator).
    struct Numbers(u64);

    impl Numbers {
        fn next(&mut self) -> f32 {
            self.0 = (self.0)
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        }
    }

    fn random_tokens(numbers: &mut Numbers, tokens: usize, dims: usize) -> TokenVectors {
        let mut values = Vec::with_capacity(tokens * dims);
        for _ in 0..tokens {
            let start = values.len();
            values.extend((0..dims).map(|_| numbers.next()));
            normalize(&mut values[start..]);
        }
        TokenVectors::new(dims, values).unwrap()
    }

    /// The definition, written out with indices and f64 sums.
    fn brute_force(query: &TokenVectors, document: &TokenVectors) -> f64 {
        let (q, d, dims) = (query.values(), document.values(), query.dims());
        let mut total = 0.0;
        for i in 0..query.len() {
            let mut best = f64::NEG_INFINITY;
            for j in 0..document.len() {
                let mut sum = 0.0;
                for k in 0..dims {
                    sum += f64::from(q[i * dims + k]) * f64::from(d[j * dims + k]);
                }
                best = best.max(sum);
            }
            total += best;
        }
        total
    }

    #[test]
    fn max_sim_is_the_brute_force_sum_of_best_dot_products() {
        let mut numbers = Numbers(7);
        // Widths with and without a remainder past the eight lanes.
        for (query_tokens, document_tokens, dims) in [
            (1, 1, 8),
            (3, 17, 128),
            (32, 300, 384),
            (5, 2, 13),
            (7, 40, 3),
        ] {
            let query = random_tokens(&mut numbers, query_tokens, dims);
            let document = random_tokens(&mut numbers, document_tokens, dims);
            let expected = brute_force(&query, &document);
            let actual = max_sim(&query, &document);
            assert!(
                (f64::from(actual) - expected).abs() < 1e-4 * query_tokens as f64,
                "{query_tokens}×{document_tokens}×{dims}: {actual} against {expected}"
            );
        }
    }

    #[test]
    fn a_document_holding_the_query_scores_one_per_query_token() {
        let mut numbers = Numbers(11);
        let query = random_tokens(&mut numbers, 4, 64);
        let other = random_tokens(&mut numbers, 20, 64);
        let mut values = other.values().to_vec();
        values.extend_from_slice(query.values());
        let document = TokenVectors::new(64, values).unwrap();
        assert!((max_sim(&query, &document) - 4.0).abs() < 1e-5);
        assert!(max_sim(&query, &other) < 4.0);
    }

    #[test]
    fn empty_or_incomparable_documents_score_zero() {
        let mut numbers = Numbers(3);
        let query = random_tokens(&mut numbers, 3, 16);
        assert_eq!(
            max_sim(&query, &TokenVectors::new(16, vec![]).unwrap()),
            0.0
        );
        let wider = random_tokens(&mut numbers, 3, 32);
        assert_eq!(max_sim(&query, &wider), 0.0);
    }

    #[test]
    fn token_vectors_are_whole_tokens() {
        assert!(TokenVectors::new(0, vec![]).is_none());
        assert!(TokenVectors::new(3, vec![1.0; 7]).is_none());
        let vectors = TokenVectors::new(3, vec![1.0; 6]).unwrap();
        assert_eq!((vectors.len(), vectors.dims()), (2, 3));
        assert_eq!(vectors.tokens().len(), 2);
        assert_eq!(TokenVectors::default().len(), 0);
    }

    #[test]
    fn truncation_keeps_the_leading_values_at_unit_length() {
        let mut numbers = Numbers(5);
        let vectors = random_tokens(&mut numbers, 6, 384);
        let cut = vectors.truncated(128);
        assert_eq!((cut.len(), cut.dims()), (6, 128));
        for (full, short) in vectors.tokens().zip(cut.tokens()) {
            assert!((dot(short, short) - 1.0).abs() < 1e-5);
            // The same direction as the leading values.
            let cosine = dot(&full[..128], short) / dot(&full[..128], &full[..128]).sqrt();
            assert!((cosine - 1.0).abs() < 1e-5, "{cosine}");
        }
        assert_eq!(vectors.truncated(384), vectors);
        assert_eq!(vectors.truncated(1000), vectors);
    }
}
