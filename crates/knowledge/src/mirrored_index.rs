//! The index in use with the generation being built beside it: while files are re-embedded
//! into a new generation, every change made to files and datasets must reach both, or the
//! new generation would come into use with deleted files or stale dataset lists.

use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use tessera_kernel::OrganizationId;

use crate::{DatasetId, FileId, IndexError, IndexedChunk, ScoredChunk, VectorIndex, VectorQuery};

/// Searches and stores vectors in the generation in use; removals and dataset changes go to
/// the one being built too, once there is one. New vectors go to the one in use only: they
/// are the model in use's, and the re-embedding writes the building generation's own.
pub struct MirroredIndex {
    in_use: Arc<dyn VectorIndex>,
    building: RwLock<Option<Arc<dyn VectorIndex>>>,
}

impl MirroredIndex {
    /// The generation in use, with none being built yet.
    pub fn new(in_use: Arc<dyn VectorIndex>) -> Self {
        Self {
            in_use,
            building: RwLock::new(None),
        }
    }

    /// From now on, removals and dataset changes reach `building` too. Set before any
    /// file's vectors are written there, so that none misses a change.
    pub fn mirror_into(&self, building: Arc<dyn VectorIndex>) {
        *self
            .building
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(building);
    }

    fn building(&self) -> Option<Arc<dyn VectorIndex>> {
        (self.building.read().unwrap_or_else(PoisonError::into_inner)).clone()
    }
}

#[async_trait]
impl VectorIndex for MirroredIndex {
    async fn upsert(&self, chunks: Vec<IndexedChunk>) -> Result<(), IndexError> {
        self.in_use.upsert(chunks).await
    }

    async fn set_datasets(
        &self,
        organization: &OrganizationId,
        file_id: &FileId,
        datasets: Vec<DatasetId>,
    ) -> Result<(), IndexError> {
        self.in_use
            .set_datasets(organization, file_id, datasets.clone())
            .await?;
        match self.building() {
            Some(building) => building.set_datasets(organization, file_id, datasets).await,
            None => Ok(()),
        }
    }

    async fn delete_file(
        &self,
        organization: &OrganizationId,
        file_id: &FileId,
    ) -> Result<(), IndexError> {
        self.in_use.delete_file(organization, file_id).await?;
        match self.building() {
            Some(building) => building.delete_file(organization, file_id).await,
            None => Ok(()),
        }
    }

    async fn search(&self, query: VectorQuery) -> Result<Vec<ScoredChunk>, IndexError> {
        self.in_use.search(query).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChunkLocation, MockVectorIndex};

    fn chunk() -> IndexedChunk {
        IndexedChunk {
            organization: OrganizationId::generate(),
            file_id: FileId::generate(),
            ordinal: 0,
            datasets: Vec::new(),
            text: "text".into(),
            location: ChunkLocation::default(),
            dense: vec![1.0],
            late: None,
        }
    }

    #[tokio::test]
    async fn changes_reach_both_once_mirrored_and_vectors_and_searches_only_the_one_in_use() {
        let mut in_use = MockVectorIndex::new();
        in_use.expect_upsert().times(1).returning(|_| Ok(()));
        in_use
            .expect_set_datasets()
            .times(2)
            .returning(|_, _, _| Ok(()));
        in_use
            .expect_delete_file()
            .times(1)
            .returning(|_, _| Ok(()));
        in_use
            .expect_search()
            .times(1)
            .returning(|_| Ok(Vec::new()));
        let mut building = MockVectorIndex::new();
        building
            .expect_set_datasets()
            .times(1)
            .returning(|_, _, _| Ok(()));
        building
            .expect_delete_file()
            .times(1)
            .returning(|_, _| Ok(()));
        let index = MirroredIndex::new(Arc::new(in_use));
        let chunk = chunk();
        let (organization, file) = (chunk.organization.clone(), chunk.file_id.clone());
        // Before a generation is built, the index in use alone.
        index
            .set_datasets(&organization, &file, Vec::new())
            .await
            .unwrap();
        index.mirror_into(Arc::new(building));
        index.upsert(vec![chunk]).await.unwrap();
        index
            .set_datasets(&organization, &file, vec![DatasetId::generate()])
            .await
            .unwrap();
        index.delete_file(&organization, &file).await.unwrap();
        let query = VectorQuery {
            organization,
            dataset: None,
            files: None,
            text: "q".into(),
            dense: vec![1.0],
            limit: 1,
            mode: crate::SearchMode::Hybrid,
            late: None,
        };
        assert!(index.search(query).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_building_generation_that_fails_fails_the_change() {
        let mut in_use = MockVectorIndex::new();
        in_use.expect_delete_file().returning(|_, _| Ok(()));
        let mut building = MockVectorIndex::new();
        building
            .expect_delete_file()
            .returning(|_, _| Err(IndexError::Unavailable("down".into())));
        let index = MirroredIndex::new(Arc::new(in_use));
        index.mirror_into(Arc::new(building));
        let refused = index
            .delete_file(&OrganizationId::generate(), &FileId::generate())
            .await;
        assert_eq!(refused, Err(IndexError::Unavailable("down".into())));
    }
}
