//! The in-memory `DatasetStore`: datasets, their files and snapshots.

use std::collections::{BTreeMap, btree_map::Entry};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use super::{
    InMemoryKnowledgeStore, KnowledgeEvent, State, StoredDataset, already_exists, newest_first,
};
use crate::{
    Attributes, Dataset, DatasetChange, DatasetFile, DatasetFileCounts, DatasetId, DatasetStore,
    DatasetUpdated, FileBatch, FileBatchId, FileId, FileStatus, Snapshot,
};

impl StoredDataset {
    /// Adds `file` to or removes it from the dataset when that changes its files: the
    /// version counts up and the change keeps its event (in `events`). Whether it changed.
    fn change_files(
        &mut self,
        change: DatasetChange,
        file: &FileId,
        at: DateTime<Utc>,
        events: &mut Vec<KnowledgeEvent>,
    ) -> bool {
        let changed = match change {
            DatasetChange::FileAdded => match self.files.entry(file.clone()) {
                Entry::Occupied(_) => false,
                Entry::Vacant(entry) => {
                    entry.insert(at);
                    true
                }
            },
            DatasetChange::FileRemoved => {
                self.attributes.remove(file);
                self.files.remove(file).is_some()
            }
        };
        if changed {
            self.dataset.version += 1;
            self.dataset.updated_at = at;
            events.push(KnowledgeEvent::DatasetUpdated(DatasetUpdated {
                organization: self.dataset.organization.clone(),
                dataset: self.dataset.id.clone(),
                version: self.dataset.version,
                change,
                file: file.clone(),
                at,
            }));
        }
        changed
    }
}

impl State {
    /// Adds `file` to or removes it from the organization's `dataset`, auditing a change that
    /// happened; the dataset and whether it changed, `None` when there is no such dataset.
    fn change_dataset(
        &mut self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        change: DatasetChange,
        file: &FileId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Option<(Dataset, bool)> {
        let stored = (self.datasets.get_mut(dataset)).filter(|d| d.of(organization))?;
        let changed = stored.change_files(change, file, at, &mut self.events);
        if changed {
            self.audit.push(audit.clone());
        }
        Some((stored.read(), changed))
    }
}

#[async_trait]
impl DatasetStore for InMemoryKnowledgeStore {
    async fn insert(&self, dataset: &Dataset, audit: &AuditRecord) -> Result<(), DomainError> {
        self.with(|state| {
            if state.datasets.contains_key(&dataset.id) {
                return Err(already_exists(format!(
                    "dataset {} already exists",
                    dataset.id
                )));
            }
            let stored = StoredDataset {
                dataset: dataset.clone(),
                files: BTreeMap::new(),
                attributes: BTreeMap::new(),
                snapshots: BTreeMap::new(),
            };
            state.datasets.insert(dataset.id.clone(), stored);
            state.audit.push(audit.clone());
            Ok(())
        })
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &DatasetId,
    ) -> Result<Option<Dataset>, DomainError> {
        Ok(self.with(|state| state.dataset(organization, id).map(StoredDataset::read)))
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<DatasetId>,
    ) -> Result<Vec<Dataset>, DomainError> {
        Ok(self.with(|state| {
            let of_organization = (state.datasets.iter()).filter(|(_, d)| d.of(organization));
            newest_first(of_organization, page)
                .map(|(_, dataset)| dataset.read())
                .collect()
        }))
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        Ok(self.with(|state| {
            (state.datasets.values())
                .filter(|dataset| dataset.of(organization))
                .count() as u64
        }))
    }

    async fn update(&self, dataset: &Dataset, audit: &AuditRecord) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let Some(stored) = (state.datasets.get_mut(&dataset.id))
                .filter(|stored| stored.of(&dataset.organization))
            else {
                return false;
            };
            stored.dataset.name = dataset.name.clone();
            stored.dataset.description = dataset.description.clone();
            stored.dataset.late_interaction = dataset.late_interaction;
            stored.dataset.metadata = dataset.metadata.clone();
            stored.dataset.expires_after_days = dataset.expires_after_days;
            stored.dataset.updated_at = dataset.updated_at;
            state.audit.push(audit.clone());
            true
        }))
    }

    async fn touch(
        &self,
        organization: &OrganizationId,
        id: &DatasetId,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            match (state.datasets.get_mut(id)).filter(|stored| stored.of(organization)) {
                Some(stored) if stored.dataset.last_active_at < at => {
                    stored.dataset.last_active_at = at;
                    true
                }
                _ => false,
            }
        }))
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &DatasetId,
        audit: &AuditRecord,
    ) -> Result<Option<Vec<FileId>>, DomainError> {
        Ok(self.with(|state| {
            state.dataset(organization, id)?;
            // Its files and snapshots go with it.
            let stored = state.datasets.remove(id)?;
            state.audit.push(audit.clone());
            Some(stored.files.into_keys().collect())
        }))
    }

    async fn add_file(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<(Dataset, bool), DomainError> {
        self.with(|state| {
            if state.file(organization, file).is_none() {
                return Err(DomainError::not_found("file", file));
            }
            state
                .change_dataset(
                    organization,
                    dataset,
                    DatasetChange::FileAdded,
                    file,
                    at,
                    audit,
                )
                .ok_or_else(|| DomainError::not_found("dataset", dataset))
        })
    }

    async fn remove_file(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<Option<(Dataset, bool)>, DomainError> {
        Ok(self.with(|state| {
            state.change_dataset(
                organization,
                dataset,
                DatasetChange::FileRemoved,
                file,
                at,
                audit,
            )
        }))
    }

    async fn set_attributes(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
        attributes: &Attributes,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let Some(stored) =
                (state.datasets.get_mut(dataset)).filter(|stored| stored.of(organization))
            else {
                return false;
            };
            if !stored.files.contains_key(file) {
                return false;
            }
            if attributes.is_empty() {
                stored.attributes.remove(file);
            } else {
                stored.attributes.insert(file.clone(), attributes.clone());
            }
            true
        }))
    }

    async fn attributes(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
    ) -> Result<Vec<(FileId, Attributes)>, DomainError> {
        Ok(self.with(|state| {
            let Some(stored) = state.dataset(organization, dataset) else {
                return Vec::new();
            };
            (stored.files.keys())
                .filter(|file| state.file(organization, file).is_some())
                .map(|file| {
                    let attributes = stored.attributes.get(file).cloned().unwrap_or_default();
                    (file.clone(), attributes)
                })
                .collect()
        }))
    }

    async fn file_counts(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        only: Option<Vec<FileId>>,
    ) -> Result<Option<DatasetFileCounts>, DomainError> {
        Ok(self.with(|state| {
            let stored = (state.datasets.get(dataset)).filter(|stored| stored.of(organization))?;
            let mut counts = DatasetFileCounts::default();
            let counted = (stored.files.keys())
                .filter(|file| only.as_ref().is_none_or(|only| only.contains(file)))
                .filter_map(|file| state.file(organization, file));
            for file in counted {
                match file.status {
                    FileStatus::Processing => counts.processing += 1,
                    FileStatus::Ready => counts.ready += 1,
                    FileStatus::Failed => counts.failed += 1,
                }
                counts.bytes += file.size;
            }
            Some(counts)
        }))
    }

    async fn insert_batch(&self, batch: &FileBatch) -> Result<(), DomainError> {
        self.with(|state| {
            if state.batches.contains_key(&batch.id) {
                return Err(already_exists(format!("batch {} already exists", batch.id)));
            }
            if state.dataset(&batch.organization, &batch.dataset).is_none() {
                return Err(DomainError::not_found("dataset", &batch.dataset));
            }
            state.batches.insert(batch.id.clone(), batch.clone());
            Ok(())
        })
    }

    async fn batch(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        id: &FileBatchId,
    ) -> Result<Option<FileBatch>, DomainError> {
        Ok(self.with(|state| {
            (state.batches.get(id))
                .filter(|batch| &batch.organization == organization && &batch.dataset == dataset)
                // A deleted dataset takes its batches with it.
                .filter(|batch| state.dataset(organization, &batch.dataset).is_some())
                .cloned()
        }))
    }

    async fn cancel_batch(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        id: &FileBatchId,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            if state.dataset(organization, dataset).is_none() {
                return false;
            }
            let Some(batch) = (state.batches.get_mut(id))
                .filter(|batch| &batch.organization == organization && &batch.dataset == dataset)
            else {
                return false;
            };
            batch.cancelled_at.get_or_insert(at);
            true
        }))
    }

    async fn dataset_file(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
    ) -> Result<Option<DatasetFile>, DomainError> {
        Ok(self.with(|state| {
            let stored = (state.datasets.get(dataset)).filter(|stored| stored.of(organization))?;
            let added_at = *stored.files.get(file)?;
            Some(DatasetFile {
                file: state.file(organization, file)?.clone(),
                added_at,
                attributes: stored.attributes.get(file).cloned().unwrap_or_default(),
            })
        }))
    }

    async fn files(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        status: Option<FileStatus>,
        page: &PageRequest<FileId>,
    ) -> Result<Vec<DatasetFile>, DomainError> {
        Ok(self.with(|state| {
            let Some(stored) = state.datasets.get(dataset) else {
                return Vec::new();
            };
            // Filtered before the page is taken, so a page is full and its cursor holds.
            let of_organization = (stored.files.iter()).filter(|(file, _)| {
                state
                    .file(organization, file)
                    .is_some_and(|file| status.is_none_or(|status| file.status == status))
            });
            newest_first(of_organization, page)
                .filter_map(|(file, added_at)| {
                    Some(DatasetFile {
                        file: state.files.get(file)?.clone(),
                        added_at: *added_at,
                        attributes: stored.attributes.get(file).cloned().unwrap_or_default(),
                    })
                })
                .collect()
        }))
    }

    async fn snapshot(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<Snapshot, DomainError> {
        self.with(|state| {
            let State {
                files,
                datasets,
                audit: audited,
                ..
            } = state;
            let Some(stored) = (datasets.get_mut(dataset)).filter(|d| d.of(organization)) else {
                return Err(DomainError::not_found("dataset", dataset));
            };
            let version = stored.dataset.version;
            if let Some(frozen) = stored.snapshots.get(&version) {
                return Ok(frozen.clone());
            }
            // Each file with its content now, by file id.
            let frozen = Snapshot {
                dataset_id: dataset.clone(),
                version,
                files: (stored.files.keys())
                    .filter_map(|id| Some((id.clone(), files.get(id)?.sha256.clone())))
                    .collect(),
                created_at: at,
            };
            stored.snapshots.insert(version, frozen.clone());
            audited.push(audit.clone());
            Ok(frozen)
        })
    }

    async fn snapshots(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
    ) -> Result<Vec<Snapshot>, DomainError> {
        Ok(self.with(|state| {
            (state.dataset(organization, dataset))
                .map(|stored| stored.snapshots.values().rev().cloned().collect())
                .unwrap_or_default()
        }))
    }
}
