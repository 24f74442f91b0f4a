//! The payload stored with every point, and its decoding into search hits.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tessera_kernel::OrganizationId;
use tessera_knowledge::{ChunkLocation, DatasetId, FileId, IndexError, IndexedChunk, ScoredChunk};

/// A point's payload, field for field (see [`crate::fields`] for the indexed ones).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChunkPayload {
    pub organization_id: OrganizationId,
    pub file_id: FileId,
    pub ordinal: u32,
    pub dataset_ids: Vec<DatasetId>,
    pub text: String,
    pub page: Option<u32>,
    pub section: Option<String>,
    pub char_start: u64,
    pub char_end: u64,
}

impl ChunkPayload {
    pub fn of(chunk: &IndexedChunk) -> Self {
        Self {
            organization_id: chunk.organization.clone(),
            file_id: chunk.file_id.clone(),
            ordinal: chunk.ordinal,
            dataset_ids: chunk.datasets.clone(),
            text: chunk.text.clone(),
            page: chunk.location.page,
            section: chunk.location.section.clone(),
            char_start: chunk.location.char_start,
            char_end: chunk.location.char_end,
        }
    }

    pub fn into_map(self) -> Result<Map<String, Value>, IndexError> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(IndexError::Invalid("a payload is not a JSON object".into())),
            Err(error) => Err(IndexError::Invalid(format!("unencodable payload: {error}"))),
        }
    }

    pub fn from_map(map: Map<String, Value>) -> Result<Self, IndexError> {
        serde_json::from_value(Value::Object(map)).map_err(|error| {
            IndexError::Unavailable(format!("a stored chunk's payload is unreadable: {error}"))
        })
    }

    pub fn into_hit(self, score: f32) -> ScoredChunk {
        ScoredChunk {
            file_id: self.file_id,
            ordinal: self.ordinal,
            score,
            text: self.text,
            location: ChunkLocation {
                page: self.page,
                section: self.section,
                char_start: self.char_start,
                char_end: self.char_end,
            },
        }
    }
}

/// A payload holding only the dataset list (for a partial update).
pub(crate) fn datasets_map(datasets: &[DatasetId]) -> Map<String, Value> {
    let ids = datasets
        .iter()
        .map(|id| Value::String(id.as_str().to_owned()))
        .collect();
    let mut map = Map::new();
    map.insert(crate::fields::DATASET_IDS.to_owned(), Value::Array(ids));
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_the_indexed_field_names() -> Result<(), Box<dyn std::error::Error>> {
        let payload = ChunkPayload {
            organization_id: "org_a".parse()?,
            file_id: FileId::generate(),
            ordinal: 7,
            dataset_ids: vec![DatasetId::generate()],
            text: "hello".into(),
            page: Some(2),
            section: None,
            char_start: 10,
            char_end: 15,
        };
        let map = payload.clone().into_map()?;
        for field in crate::fields::KEYWORD_INDEXED {
            assert!(map.contains_key(field), "{field} missing");
        }
        assert_eq!(ChunkPayload::from_map(map)?, payload);
        Ok(())
    }
}
