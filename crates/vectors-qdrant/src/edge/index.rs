//! [`EdgeVectorIndex`]: the port, running every engine call on tokio's blocking pool.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use tessera_kernel::OrganizationId;
use tessera_knowledge::{
    DatasetId, FileId, IndexError, IndexedChunk, ScoredChunk, VectorIndex, VectorQuery,
};

use super::engine::Engine;

/// The vector index on an embedded qdrant-edge shard in one directory. Cheap to clone; all
/// clones share the shard. Open a directory from one index (one process) at a time.
#[derive(Debug, Clone)]
pub struct EdgeVectorIndex {
    engine: Arc<Engine>,
}

impl EdgeVectorIndex {
    /// Creates the shard under `dir` (e.g. `<data_dir>/vectors`) for dense vectors of
    /// `dimensions` (and token vectors of [`crate::LATE_DIMENSIONS`]), or reloads the one
    /// there. A shard made for other dimensions is `Invalid` (the embedding model changed:
    /// index again into a new directory); one made before late interaction opens, and
    /// refuses only token vectors.
    pub async fn open(dir: impl AsRef<Path>, dimensions: usize) -> Result<Self, IndexError> {
        let dir = dir.as_ref().to_owned();
        let engine = blocking(move || Engine::open(&dir, dimensions)).await?;
        Ok(Self {
            engine: Arc::new(engine),
        })
    }

    /// [`Self::open`] for callers outside an async runtime.
    pub fn open_blocking(dir: impl AsRef<Path>, dimensions: usize) -> Result<Self, IndexError> {
        Ok(Self {
            engine: Arc::new(Engine::open(dir.as_ref(), dimensions)?),
        })
    }

    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Engine) -> Result<T, IndexError> + Send + 'static,
    ) -> Result<T, IndexError> {
        let engine = Arc::clone(&self.engine);
        blocking(move || work(&engine)).await
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, IndexError> + Send + 'static,
) -> Result<T, IndexError> {
    tokio::task::spawn_blocking(work).await.map_err(|error| {
        IndexError::Unavailable(format!("the vector index task failed: {error}"))
    })?
}

#[async_trait]
impl VectorIndex for EdgeVectorIndex {
    async fn upsert(&self, chunks: Vec<IndexedChunk>) -> Result<(), IndexError> {
        if chunks.is_empty() {
            return Ok(());
        }
        self.run(move |engine| engine.upsert(&chunks)).await
    }

    async fn set_datasets(
        &self,
        organization: &OrganizationId,
        file_id: &FileId,
        datasets: Vec<DatasetId>,
    ) -> Result<(), IndexError> {
        let (organization, file_id) = (organization.clone(), file_id.clone());
        self.run(move |engine| engine.set_datasets(&organization, &file_id, &datasets))
            .await
    }

    async fn delete_file(
        &self,
        organization: &OrganizationId,
        file_id: &FileId,
    ) -> Result<(), IndexError> {
        let (organization, file_id) = (organization.clone(), file_id.clone());
        self.run(move |engine| engine.delete_file(&organization, &file_id))
            .await
    }

    async fn search(&self, query: VectorQuery) -> Result<Vec<ScoredChunk>, IndexError> {
        self.run(move |engine| engine.search(query)).await
    }
}
