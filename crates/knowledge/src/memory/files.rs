//! The in-memory `FileStore`: files, their chunks and the processing queue.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use super::{InMemoryKnowledgeStore, Job, KnowledgeEvent, already_exists, newest_first};
use crate::{
    ChunkingSettings, ClaimedJob, DatasetId, FileDeletion, FileFailed, FileFilter, FileId,
    FilePurpose, FileReady, FileReference, FileStatus, FileStore, Rechunking, StoredChunk,
    StoredFile,
};

/// Whether `file` is in the filter.
/// A ready file with chunks: its vectors are in the index.
pub(super) fn holds_vectors(file: &StoredFile) -> bool {
    file.status == FileStatus::Ready && file.chunk_count > 0
}

fn shows(filter: &FileFilter, file: &StoredFile) -> bool {
    file.organization == filter.organization
        && filter.status.is_none_or(|status| file.status == status)
        && filter
            .purpose
            .is_none_or(|purpose| purpose.includes(file.purpose))
}

#[async_trait]
impl FileStore for InMemoryKnowledgeStore {
    async fn insert(
        &self,
        file: &StoredFile,
        queue_job: bool,
        ready: Option<FileReady>,
        audit: &AuditRecord,
    ) -> Result<(), DomainError> {
        if let Some(ready) = &ready {
            ready.must_name(file)?;
        }
        self.with(|state| {
            if state.files.contains_key(&file.id) {
                return Err(already_exists(format!("file {} already exists", file.id)));
            }
            state.files.insert(file.id.clone(), file.clone());
            if let Some(ready) = ready {
                state.events.push(KnowledgeEvent::FileReady(ready));
            }
            if queue_job {
                let job = Job {
                    attempts: 0,
                    run_after: file.created_at,
                    leased_by: None,
                    leased_until: None,
                    last_error: None,
                };
                state.jobs.insert(file.id.clone(), job);
            }
            state.audit.push(audit.clone());
            Ok(())
        })
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &FileId,
    ) -> Result<Option<StoredFile>, DomainError> {
        Ok(self.with(|state| state.file(organization, id).cloned()))
    }

    async fn list(
        &self,
        filter: &FileFilter,
        page: &PageRequest<FileId>,
    ) -> Result<Vec<StoredFile>, DomainError> {
        Ok(self.with(|state| {
            let shown = (state.files.iter()).filter(|(_, file)| shows(filter, file));
            newest_first(shown, page)
                .map(|(_, file)| file.clone())
                .collect()
        }))
    }

    async fn count(&self, filter: &FileFilter) -> Result<u64, DomainError> {
        Ok(self.with(|state| {
            (state.files.values())
                .filter(|file| shows(filter, file))
                .count() as u64
        }))
    }

    async fn set_purpose(
        &self,
        organization: &OrganizationId,
        id: &FileId,
        purpose: FilePurpose,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let Some(file) =
                (state.files.get_mut(id)).filter(|file| &file.organization == organization)
            else {
                return false;
            };
            file.purpose = Some(purpose);
            if !purpose.is_processed() {
                if file.status == FileStatus::Processing {
                    file.status = FileStatus::Ready;
                    file.progress = 100;
                }
                state.jobs.remove(id);
            }
            true
        }))
    }

    async fn set_chunking(
        &self,
        organization: &OrganizationId,
        id: &FileId,
        dataset: &DatasetId,
        chunking: ChunkingSettings,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<Option<Rechunking>, DomainError> {
        Ok(self.with(|state| {
            let file = state.file(organization, id)?;
            let held_elsewhere = (state.datasets.iter()).any(|(other, stored)| {
                other != dataset && stored.of(organization) && stored.files.contains_key(id)
            });
            let decided = Rechunking::decide(file, chunking, held_elsewhere);
            if !decided.changes() {
                return Some(decided);
            }
            let file = state.files.get_mut(id)?;
            file.chunking = Some(chunking);
            if decided == Rechunking::Requeued {
                file.status = FileStatus::Processing;
                file.progress = 0;
                file.updated_at = at;
                let job = Job {
                    attempts: 0,
                    run_after: at,
                    leased_by: None,
                    leased_until: None,
                    last_error: None,
                };
                state.jobs.insert(id.clone(), job);
            } else if let Some(job) = (state.jobs.get_mut(id)).filter(|job| job.leased_by.is_some())
            {
                // The worker cutting it now loses its lease; the job runs again once that
                // lease would have ended, when the worker has stopped writing.
                job.leased_by = None;
                if let Some(until) = job.leased_until.take() {
                    job.run_after = job.run_after.max(until);
                }
            }
            state.audit.push(audit.clone());
            Some(decided)
        }))
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &FileId,
        audit: &AuditRecord,
    ) -> Result<FileDeletion, DomainError> {
        Ok(self.with(|state| {
            let Some(sha256) = state.file(organization, id).map(|file| file.sha256.clone()) else {
                return FileDeletion::NotFound;
            };
            // The datasets holding it now, then the snapshots, each by dataset id (and
            // version).
            let current = (state.datasets.values())
                .filter(|dataset| dataset.files.contains_key(id))
                .map(|dataset| FileReference {
                    dataset_id: dataset.dataset.id.clone(),
                    dataset_name: dataset.dataset.name.clone(),
                    snapshot_version: None,
                });
            let frozen = state.datasets.values().flat_map(|dataset| {
                (dataset.snapshots.values())
                    .filter(|snapshot| snapshot.files.iter().any(|(file, _)| file == id))
                    .map(|snapshot| FileReference {
                        dataset_id: dataset.dataset.id.clone(),
                        dataset_name: dataset.dataset.name.clone(),
                        snapshot_version: Some(snapshot.version),
                    })
            });
            let references: Vec<FileReference> = current.chain(frozen).collect();
            if !references.is_empty() {
                return FileDeletion::InUse(references);
            }
            state.files.remove(id);
            state.chunks.remove(id);
            state.embedding_models.remove(id);
            state.file_generations.remove(id);
            state.jobs.remove(id);
            let shared = state.files.values().any(|file| file.sha256 == sha256);
            state.audit.push(audit.clone());
            FileDeletion::Deleted {
                orphaned_blob: (!shared).then_some(sha256),
            }
        }))
    }

    async fn datasets_of(
        &self,
        organization: &OrganizationId,
        id: &FileId,
    ) -> Result<Vec<DatasetId>, DomainError> {
        Ok(self.with(|state| {
            (state.datasets.values())
                .filter(|dataset| dataset.of(organization) && dataset.files.contains_key(id))
                .map(|dataset| dataset.dataset.id.clone())
                .collect()
        }))
    }

    async fn chunks(
        &self,
        organization: &OrganizationId,
        id: &FileId,
    ) -> Result<Vec<StoredChunk>, DomainError> {
        Ok(self.with(|state| match state.file(organization, id) {
            Some(_) => state.chunks.get(id).cloned().unwrap_or_default(),
            None => Vec::new(),
        }))
    }

    async fn claim_job(
        &self,
        worker: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClaimedJob>, DomainError> {
        self.with(|state| {
            let oldest = (state.jobs.iter_mut())
                .filter(|(_, job)| job.due(now))
                .min_by(|(a, job_a), (b, job_b)| (job_a.run_after, a).cmp(&(job_b.run_after, b)));
            let Some((id, job)) = oldest else {
                return Ok(None);
            };
            let file = (state.files.get(id).cloned()).ok_or_else(|| {
                DomainError::internal(format!("the job of file {id} has no file"))
            })?;
            job.attempts += 1;
            job.leased_by = Some(worker.to_owned());
            job.leased_until = Some(lease_until);
            Ok(Some(ClaimedJob {
                file,
                attempt: job.attempts,
            }))
        })
    }

    async fn report_progress(
        &self,
        id: &FileId,
        worker: &str,
        progress: u8,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let Some(job) = state.jobs.get_mut(id).filter(|job| job.held_by(worker)) else {
                return false;
            };
            job.leased_until = Some(lease_until);
            if let Some(file) = state.files.get_mut(id) {
                file.progress = progress.min(100);
                file.updated_at = now;
            }
            true
        }))
    }

    async fn complete_job(
        &self,
        worker: &str,
        chunks: &[StoredChunk],
        embedding_model: &str,
        generation: u32,
        ready: &FileReady,
    ) -> Result<bool, DomainError> {
        let id = &ready.file;
        let mut ordinals = HashSet::new();
        if let Some(taken) = chunks.iter().find(|chunk| !ordinals.insert(chunk.ordinal)) {
            return Err(already_exists(format!(
                "file {id} has two chunks of ordinal {}",
                taken.ordinal
            )));
        }
        Ok(self.with(|state| {
            if !state.jobs.get(id).is_some_and(|job| job.held_by(worker)) {
                return false;
            }
            state.jobs.remove(id);
            let mut chunks = chunks.to_vec();
            chunks.sort_by_key(|chunk| chunk.ordinal);
            let count = u32::try_from(chunks.len()).unwrap_or(u32::MAX);
            // A retried job may have stored nothing before, but never leaves stale chunks.
            state.chunks.insert(id.clone(), chunks);
            (state.embedding_models).insert(id.clone(), embedding_model.to_owned());
            state.file_generations.insert(id.clone(), generation);
            if let Some(file) = state.files.get_mut(id) {
                file.status = FileStatus::Ready;
                file.progress = 100;
                file.error = None;
                file.chunk_count = count;
                file.updated_at = ready.at;
            }
            state.events.push(KnowledgeEvent::FileReady(ready.clone()));
            true
        }))
    }

    async fn embedding_models(&self) -> Result<Vec<(Option<String>, u64)>, DomainError> {
        Ok(self.with(|state| {
            let mut counts: HashMap<Option<String>, u64> = HashMap::new();
            for file in state.files.values().filter(|file| holds_vectors(file)) {
                let model = state.embedding_models.get(&file.id).cloned();
                *counts.entry(model).or_default() += 1;
            }
            let mut counts: Vec<_> = counts.into_iter().collect();
            counts.sort();
            counts
        }))
    }

    async fn adopt_embedding_model(&self, model: &str) -> Result<u64, DomainError> {
        Ok(self.with(|state| {
            let unrecorded: Vec<FileId> = (state.files.values())
                .filter(|file| {
                    holds_vectors(file) && !state.embedding_models.contains_key(&file.id)
                })
                .map(|file| file.id.clone())
                .collect();
            for id in &unrecorded {
                state.embedding_models.insert(id.clone(), model.to_owned());
            }
            unrecorded.len() as u64
        }))
    }

    async fn retry_job(
        &self,
        id: &FileId,
        worker: &str,
        error: &str,
        run_after: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let Some(job) = state.jobs.get_mut(id).filter(|job| job.held_by(worker)) else {
                return false;
            };
            job.run_after = run_after;
            job.leased_by = None;
            job.leased_until = None;
            job.last_error = Some(error.to_owned());
            true
        }))
    }

    async fn fail_job(&self, worker: &str, failed: &FileFailed) -> Result<bool, DomainError> {
        let id = &failed.file;
        Ok(self.with(|state| {
            if !state.jobs.get(id).is_some_and(|job| job.held_by(worker)) {
                return false;
            }
            state.jobs.remove(id);
            state.chunks.remove(id);
            state.embedding_models.remove(id);
            state.file_generations.remove(id);
            if let Some(file) = state.files.get_mut(id) {
                file.status = FileStatus::Failed;
                file.progress = 100;
                file.error = Some(failed.error.clone());
                file.chunk_count = 0;
                file.updated_at = failed.at;
            }
            state
                .events
                .push(KnowledgeEvent::FileFailed(failed.clone()));
            true
        }))
    }
}
