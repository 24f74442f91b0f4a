//! The blocking side: one qdrant-edge shard behind a lock, and the BM25 embedder.
//!
//! qdrant-edge is synchronous and its `flush` insists on exclusive access (it panics when
//! the WAL or segments are busy), so searches share a read lock, changes take the write lock
//! and flush before releasing it, and optimisation (HNSW building, merging, vacuum) runs
//! under a read lock so searches continue while it works.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

use qdrant_edge::bm25_embed::EdgeBm25;
use qdrant_edge::{
    EdgeShard, Payload, PayloadOps, PointInsertOperations, PointOperations, SetPayloadOp,
    UpdateOperation,
};
use tessera_kernel::OrganizationId;
use tessera_knowledge::{DatasetId, FileId, IndexError, IndexedChunk, ScoredChunk, VectorQuery};

use super::config::{check_config, ensure_payload_indexes, shard_config};
use super::error::index_error;
use super::filter::file_filter;
use super::points::point;
use super::query::search_request;
use crate::payload::{ChunkPayload, datasets_map};
use crate::search::{SearchPlan, plan, with_unscored};
use crate::vectors::{LateLayout, bm25};

/// The file qdrant-edge writes its configuration to; its presence means the shard exists.
const CONFIG_FILE: &str = "edge_config.json";

/// Points per update operation (one WAL record each).
const UPSERT_BATCH: usize = 256;

pub(crate) struct Engine {
    /// `None` only while dropping (see [`Engine::drop`]).
    shard: RwLock<Option<EdgeShard>>,
    bm25: EdgeBm25,
    dimensions: usize,
    /// Whether the shard has the token vectors' multivector (one made before it has not).
    late: LateLayout,
    optimizing: Mutex<()>,
    path: PathBuf,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("path", &self.path)
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Creates the shard under `dir`, or loads the one there.
    pub fn open(dir: &Path, dimensions: usize) -> Result<Self, IndexError> {
        if dimensions == 0 {
            return Err(IndexError::Invalid("dense vectors need dimensions".into()));
        }
        fs::create_dir_all(dir).map_err(|error| {
            IndexError::Unavailable(format!("cannot create {}: {error}", dir.display()))
        })?;
        let (shard, late) = if dir.join(CONFIG_FILE).exists() {
            let shard = EdgeShard::load(dir, None).map_err(index_error)?;
            let late = check_config(&shard.config(), dimensions, dir)?;
            if let LateLayout::Missing(reason) = &late {
                tracing::info!(path = %dir.display(), "no late interaction: {reason}");
            }
            (shard, late)
        } else {
            let shard = EdgeShard::new(dir, shard_config(dimensions)).map_err(index_error)?;
            (shard, LateLayout::Stored)
        };
        ensure_payload_indexes(&shard)?;
        shard.flush();
        tracing::debug!(path = %dir.display(), dimensions, "vector index opened");
        Ok(Self {
            shard: RwLock::new(Some(shard)),
            bm25: bm25()?,
            dimensions,
            late,
            optimizing: Mutex::new(()),
            path: dir.to_owned(),
        })
    }

    pub fn upsert(&self, chunks: &[IndexedChunk]) -> Result<(), IndexError> {
        if chunks.is_empty() {
            return Ok(());
        }
        // Build every point first, so a bad chunk refuses the whole batch.
        let points = chunks
            .iter()
            .map(|chunk| point(&self.bm25, chunk, self.dimensions, &self.late))
            .collect::<Result<Vec<_>, _>>()?;
        let operations = points.chunks(UPSERT_BATCH).map(|batch| {
            UpdateOperation::PointOperation(PointOperations::UpsertPoints(
                PointInsertOperations::PointsList(batch.to_vec()),
            ))
        });
        self.change(operations)?;
        self.optimize();
        Ok(())
    }

    pub fn set_datasets(
        &self,
        organization: &OrganizationId,
        file_id: &FileId,
        datasets: &[DatasetId],
    ) -> Result<(), IndexError> {
        let operation = UpdateOperation::PayloadOperation(PayloadOps::SetPayload(SetPayloadOp {
            payload: Payload(datasets_map(datasets)),
            points: None,
            filter: Some(file_filter(organization, file_id)?),
            key: None,
        }));
        self.change([operation])
    }

    pub fn delete_file(
        &self,
        organization: &OrganizationId,
        file_id: &FileId,
    ) -> Result<(), IndexError> {
        let operation = UpdateOperation::PointOperation(PointOperations::DeletePointsByFilter(
            file_filter(organization, file_id)?,
        ));
        self.change([operation])?;
        self.optimize();
        Ok(())
    }

    /// A search; with late interaction, the candidates without token vectors (which the
    /// engine's MaxSim skips) follow the scored ones, from a second, plain query under the
    /// same read lock (so both see the same points).
    pub fn search(&self, query: VectorQuery) -> Result<Vec<ScoredChunk>, IndexError> {
        let Some(plan) = plan(&self.bm25, query, self.dimensions, &self.late)? else {
            return Ok(Vec::new());
        };
        let guard = self.read();
        let shard = shard(&guard)?;
        let hits = run(shard, plan.clone())?;
        match plan.fallback(hits.len()) {
            Some(fused) => Ok(with_unscored(hits, run(shard, fused)?, plan.limit)),
            None => Ok(hits),
        }
    }

    /// Applies the operations in order under the write lock, then flushes them to disk
    /// (qdrant-edge 0.7 does not replay its WAL on load, so unflushed changes are lost).
    fn change(
        &self,
        operations: impl IntoIterator<Item = UpdateOperation>,
    ) -> Result<(), IndexError> {
        let guard = self.write();
        let shard = shard(&guard)?;
        let mut result = Ok(());
        for operation in operations {
            result = shard.update(operation).map_err(index_error);
            if result.is_err() {
                break;
            }
        }
        // Flush what was applied even when a later operation failed.
        shard.flush();
        result
    }

    /// Runs the optimisers when there is work for them (a segment past the indexing
    /// threshold gets its HNSW index; deleted points are vacuumed), unless another call is
    /// already doing it. Small segments stay plain: searched exactly, which is fast there.
    fn optimize(&self) {
        let _running = match self.optimizing.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        let optimized = shard(&self.read()).and_then(|shard| shard.optimize().map_err(index_error));
        match optimized {
            Ok(true) => {
                if let Some(shard) = self.write().as_ref() {
                    shard.flush();
                }
                tracing::debug!(path = %self.path.display(), "vector index optimised");
            }
            Ok(false) => {}
            Err(error) => {
                tracing::warn!(path = %self.path.display(), %error, "vector index optimisation failed");
            }
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Option<EdgeShard>> {
        self.shard.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Option<EdgeShard>> {
        self.shard.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One query, its points as hits in the engine's order.
fn run(shard: &EdgeShard, plan: SearchPlan) -> Result<Vec<ScoredChunk>, IndexError> {
    let points = shard.query(search_request(plan)?).map_err(index_error)?;
    points
        .into_iter()
        .map(|point| {
            let payload = point.payload.unwrap_or_default();
            Ok(ChunkPayload::from_map(payload.0)?.into_hit(point.score))
        })
        .collect()
}

fn shard(guard: &Option<EdgeShard>) -> Result<&EdgeShard, IndexError> {
    guard
        .as_ref()
        .ok_or_else(|| IndexError::Unavailable("the vector index is closing".into()))
}

impl Drop for Engine {
    /// qdrant-edge flushes when its shard is dropped and panics if that fails (say, the
    /// directory is gone). Every change was flushed already, so such a failure loses
    /// nothing: it is logged rather than allowed to unwind out of a destructor.
    fn drop(&mut self) {
        let shard = self
            .shard
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if catch_unwind(AssertUnwindSafe(move || drop(shard))).is_err() {
            tracing::warn!(path = %self.path.display(), "the vector index failed its final flush");
        }
    }
}
