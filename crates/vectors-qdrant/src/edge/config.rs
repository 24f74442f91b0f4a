//! The shard's layout: vector parameters and payload indexes.

use qdrant_edge::{
    CreateIndex, Distance, EdgeConfig, EdgeConfigBuilder, EdgeShard, EdgeSparseVectorParams,
    EdgeVectorParams, FieldIndexOperations, JsonPath, Modifier, PayloadFieldSchema,
    PayloadSchemaType, UpdateOperation,
};
use tessera_knowledge::IndexError;

use super::error::index_error;
use crate::fields::{DENSE_VECTOR, KEYWORD_INDEXED, SPARSE_VECTOR};

/// A new shard's configuration: cosine dense vectors of `dimensions`, and BM25 sparse
/// vectors with the IDF modifier (the engine weighs terms by their rarity at query time).
pub(crate) fn shard_config(dimensions: usize) -> EdgeConfig {
    let dense = EdgeVectorParams {
        size: dimensions,
        distance: Distance::Cosine,
        on_disk: None,
        multivector_config: None,
        datatype: None,
        quantization_config: None,
        hnsw_config: None,
    };
    let sparse = EdgeSparseVectorParams {
        full_scan_threshold: None,
        on_disk: None,
        modifier: Some(Modifier::Idf),
        datatype: None,
    };
    EdgeConfigBuilder::new()
        .vector(DENSE_VECTOR, dense)
        .sparse_vector(SPARSE_VECTOR, sparse)
        .on_disk_payload(true)
        .build()
}

/// Checks that a reopened shard has the layout this adapter writes.
pub(crate) fn check_config(config: &EdgeConfig, dimensions: usize) -> Result<(), IndexError> {
    let size = config.vectors.get(DENSE_VECTOR).map(|params| params.size);
    if size != Some(dimensions) {
        return Err(IndexError::Invalid(format!(
            "the vector index holds {DENSE_VECTOR} vectors of {size:?} dimensions, not \
             {dimensions}: re-index with the new embedding model into an empty directory"
        )));
    }
    let modifier = config
        .sparse_vectors
        .get(SPARSE_VECTOR)
        .and_then(|params| params.modifier);
    if modifier != Some(Modifier::Idf) {
        return Err(IndexError::Invalid(format!(
            "the vector index has no {SPARSE_VECTOR} sparse vectors with the IDF modifier"
        )));
    }
    Ok(())
}

/// Creates the keyword indexes the filters use (a no-op for those that exist).
pub(crate) fn ensure_payload_indexes(shard: &EdgeShard) -> Result<(), IndexError> {
    for field in KEYWORD_INDEXED {
        let field_name = json_path(field)?;
        let operation =
            UpdateOperation::FieldIndexOperation(FieldIndexOperations::CreateIndex(CreateIndex {
                field_name,
                field_schema: Some(PayloadFieldSchema::FieldType(PayloadSchemaType::Keyword)),
            }));
        shard.update(operation).map_err(index_error)?;
    }
    Ok(())
}

/// A payload field's path (qdrant-edge builds them only by parsing).
pub(crate) fn json_path(field: &str) -> Result<JsonPath, IndexError> {
    field
        .parse()
        .map_err(|()| IndexError::Invalid(format!("{field:?} is not a payload path")))
}
