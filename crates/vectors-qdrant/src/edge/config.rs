//! The shard's layout: vector parameters and payload indexes.

use std::path::Path;

use qdrant_edge::{
    CreateIndex, Distance, EdgeConfig, EdgeConfigBuilder, EdgeShard, EdgeSparseVectorParams,
    EdgeVectorParams, FieldIndexOperations, HnswIndexConfig, JsonPath, Modifier,
    MultiVectorComparator, MultiVectorConfig, PayloadFieldSchema, PayloadSchemaType,
    UpdateOperation, VectorStorageDatatype,
};
use tessera_knowledge::IndexError;

use super::error::index_error;
use crate::fields::{DENSE_VECTOR, KEYWORD_INDEXED, LATE_DIMENSIONS, LATE_VECTOR, SPARSE_VECTOR};
use crate::vectors::LateLayout;

/// A new shard's configuration: cosine dense vectors of `dimensions`, BM25 sparse vectors
/// with the IDF modifier (the engine weighs terms by their rarity at query time), and the
/// late-interaction multivectors ([`late_params`]), whether or not chunks will carry them.
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
        .vector(LATE_VECTOR, late_params())
        .sparse_vector(SPARSE_VECTOR, sparse)
        .on_disk_payload(true)
        .build()
}

/// The token vectors: [`LATE_DIMENSIONS`] cosine values per token compared by MaxSim,
/// stored in float16 (half of f32's bytes, for an order of MaxSim scores that changes only
/// between near ties) and on disk (about 20 times a chunk's dense vector, read for a
/// search's few dozen candidates only). No HNSW graph (`m` 0, no payload graphs either):
/// the vector only rescores candidates, and a graph over every token would make the
/// optimiser slow; such a vector is always scanned plainly.
pub(crate) fn late_params() -> EdgeVectorParams {
    EdgeVectorParams {
        size: LATE_DIMENSIONS,
        distance: Distance::Cosine,
        on_disk: Some(true),
        multivector_config: Some(MultiVectorConfig {
            comparator: MultiVectorComparator::MaxSim,
        }),
        datatype: Some(VectorStorageDatatype::Float16),
        quantization_config: None,
        hnsw_config: Some(HnswIndexConfig {
            m: 0,
            payload_m: Some(0),
            ..HnswIndexConfig::default()
        }),
    }
}

/// Checks that a reopened shard has the layout this adapter writes, and says whether it
/// has the late-interaction multivectors (a shard made before them has not: it serves
/// everything else).
pub(crate) fn check_config(
    config: &EdgeConfig,
    dimensions: usize,
    dir: &Path,
) -> Result<LateLayout, IndexError> {
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
    let late = config.vectors.get(LATE_VECTOR);
    let comparable = late.is_some_and(|params| {
        params.size == LATE_DIMENSIONS
            && params.distance == Distance::Cosine
            && params.multivector_config.map(|config| config.comparator)
                == Some(MultiVectorComparator::MaxSim)
    });
    Ok(if comparable {
        LateLayout::Stored
    } else {
        let has = match late {
            None => format!(
                "has no `{LATE_VECTOR}` token vectors (it was made before late interaction)"
            ),
            Some(params) => format!(
                "has `{LATE_VECTOR}` vectors of another kind ({} values, {:?}, {:?}), not token \
                 vectors of {LATE_DIMENSIONS} values compared by MaxSim",
                params.size, params.distance, params.multivector_config
            ),
        };
        LateLayout::Missing(format!(
            "the vector index in {} {has}: re-index into an empty directory to use late \
             interaction",
            dir.display()
        ))
    })
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
