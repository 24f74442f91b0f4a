//! What the Qdrant indexes' contract tests share beyond the exported `VectorIndex` suite:
//! how the suite sees them (token vectors of [`LATE_DIMENSIONS`] values, stored in float16),
//! and the checks of what the port leaves to the engine (the English stopwords its BM25
//! drops).

// Each test binary that includes it uses a part.
#![allow(dead_code)]

use std::sync::Arc;

use tessera_kernel::OrganizationId;
use tessera_knowledge::{
    DatasetId, TokenVectors, VectorIndex,
    contract::vector_index::{IndexUnderTest, basis, filler_file, query, token_vectors, unit},
    max_sim,
};
use tessera_vectors_qdrant::LATE_DIMENSIONS;

/// `index` as the suite runs it.
pub fn under_test(index: Arc<dyn VectorIndex>) -> IndexUnderTest {
    IndexUnderTest::new(index, LATE_DIMENSIONS).storing_tokens_as(float16_tokens)
}

/// Token vectors as Qdrant stores and compares them: scaled to unit length (cosine), each
/// value rounded to float16.
pub fn float16_tokens(tokens: &TokenVectors) -> TokenVectors {
    let rows: Vec<Vec<f32>> = tokens
        .tokens()
        .map(|row| {
            unit(row.to_vec())
                .into_iter()
                .map(|x| half::f16::from_f32(x).to_f32())
                .collect()
        })
        .collect();
    token_vectors(tokens.dims(), &rows)
}

/// MaxSim as Qdrant computes it: on the token vectors as it stores them.
pub fn stored_max_sim(query: &TokenVectors, document: &TokenVectors) -> f32 {
    max_sim(&float16_tokens(query), &float16_tokens(document))
}

/// A query of English stopwords alone has no BM25 term (qdrant-edge's BM25 drops them), so
/// the dense ranking alone decides, as for a query without words.
pub async fn stopwords_alone_search_densely(index: &dyn VectorIndex) {
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    filler_file(index, &org, std::slice::from_ref(&ds)).await;
    let hits = index
        .search(query(&org, Some(&ds), "the of and", basis(6)))
        .await
        .expect("search");
    assert_eq!(hits.first().map(|hit| hit.ordinal), Some(6));
}
