//! The `FileStore` and `DatasetStore` contract, for anyone implementing the ports: each
//! check states promises of the traits against a fresh, empty state (a
//! [`KnowledgeStores`]), and [`knowledge_store_contract!`](crate::knowledge_store_contract)
//! turns them into tests. Files and their records stay within their organization, lists
//! are newest first in keyset pages, the processing queue hands each due job to one worker
//! under a lease (retries wait, a crashed worker's job is taken over when its lease
//! expires, a worker that lost its lease writes nothing), datasets count versions and
//! files (listed by status in full pages), snapshots freeze a version, a file a dataset or
//! snapshot holds is not deleted, and a file's chunk sizes change only where no other
//! dataset depends on its chunks. Tessera runs it against the in-memory reference (`crate::memory`, so the suite
//! is checked against the behaviour it stands for) and the SQL stores. The record builders
//! and the [`Fixture`] are public, for an adapter's own checks beyond the contract. The
//! adapter ports' suites are beside it: [`vector_index`], [`blob_store`] and [`embedder`].
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod blob_store;
mod checks_as_tests;
mod chunking;
mod datasets;
pub mod embedder;
mod files;
mod generations;
mod jobs;
pub mod vector_index;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use tessera_kernel::{ActorKind, AuditRecord, DomainError, Limit, OrganizationId, PageRequest};

pub use self::{chunking::*, datasets::*, files::*, generations::*, jobs::*};
use crate::{
    ChunkLocation, Dataset, DatasetId, DatasetStore, FileFormat, FileId, FileStatus, FileStore,
    GenerationStore, StoredChunk, StoredFile, memory::InMemoryKnowledgeStore,
};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own state made by `$factory`: an expression that, called with no argument, gives a future
/// of `(stores, guard)`, `stores` a [`KnowledgeStores`](crate::contract::KnowledgeStores)
/// (the guard, e.g. a throwaway database, lives until the test ends).
#[macro_export]
macro_rules! knowledge_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            files_read_back_and_list_newest_first_within_the_organization,
            files_keep_their_purpose_and_lists_filter_by_it,
            a_file_marked_for_batches_leaves_the_processing_queue,
            a_ready_event_must_name_the_file_it_is_stored_with,
            duplicate_file_and_dataset_ids_are_refused,
            deleting_a_file_drops_its_chunks_and_its_job,
            another_organization_cannot_touch_files_or_datasets,
            jobs_are_claimed_once_processed_and_completed,
            embedding_models_are_recorded_counted_and_adopted,
            the_oldest_due_job_is_claimed_first,
            a_crashed_workers_job_is_taken_over_when_its_lease_expires,
            retried_jobs_wait_and_failed_jobs_end_failed,
            concurrent_workers_never_share_a_job,
            datasets_count_versions_and_files,
            dataset_lists_are_newest_first_in_keyset_pages,
            dataset_updates_save_name_and_description_only,
            datasets_keep_their_expiry_and_activity_moves_forward,
            datasets_keep_metadata_and_count_their_files_by_status,
            files_in_a_dataset_keep_their_attributes,
            file_batches_read_back_cancel_once_and_go_with_their_dataset,
            files_held_by_a_dataset_or_snapshot_are_not_deleted,
            a_files_chunking_changes_only_where_no_other_dataset_depends_on_it,
            new_sizes_take_the_job_from_the_worker_cutting_the_file,
            a_datasets_files_list_by_status_in_full_pages,
            generations_begin_once_per_model_and_one_builds_at_a_time,
            files_behind_a_generation_are_marked_until_it_can_be_activated,
            a_generations_lease_is_one_workers_until_it_expires,
        );
    };
}

/// What the checks run on: the file and dataset stores over one empty state (one database
/// implements both, so a check spanning them, such as a file in a dataset not being
/// deleted, sees one state), and a way to make an organization exist.
#[async_trait]
pub trait KnowledgeStores: Send + Sync {
    fn files(&self) -> Arc<dyn FileStore>;

    /// The dataset store over the same state as [`files`](Self::files).
    fn datasets(&self) -> Arc<dyn DatasetStore>;

    /// The index generations, over the same state as [`files`](Self::files).
    fn generations(&self) -> Arc<dyn GenerationStore>;

    /// Makes the organization `id` (named `name`) exist, e.g. stores it where files and
    /// datasets refer to it; nothing for stores that keep no organizations. Panics if it
    /// cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);
}

/// The in-memory reference, which keeps no organizations.
#[async_trait]
impl KnowledgeStores for Arc<InMemoryKnowledgeStore> {
    fn files(&self) -> Arc<dyn FileStore> {
        self.clone()
    }

    fn datasets(&self) -> Arc<dyn DatasetStore> {
        self.clone()
    }

    fn generations(&self) -> Arc<dyn GenerationStore> {
        self.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}
}

/// The stores of one check, and the steps the checks share.
pub struct Fixture<'a> {
    stores: &'a dyn KnowledgeStores,
    pub files: Arc<dyn FileStore>,
    pub datasets: Arc<dyn DatasetStore>,
    pub generations: Arc<dyn GenerationStore>,
}

impl<'a> Fixture<'a> {
    pub fn new(stores: &'a impl KnowledgeStores) -> Self {
        Self {
            stores,
            files: stores.files(),
            datasets: stores.datasets(),
            generations: stores.generations(),
        }
    }

    /// A fresh organization (made to exist first where files and datasets refer to it).
    pub async fn organization(&self, name: &str) -> OrganizationId {
        let id = OrganizationId::generate();
        self.stores.organization_exists(&id, name).await;
        id
    }

    /// Stores `file` with its processing job.
    pub async fn queue(&self, file: &StoredFile) {
        self.files
            .insert(file, true, None, &audited(&file.organization))
            .await
            .unwrap();
    }

    /// Stores a document of `organization` named `name` (its content all `sha`), queued for
    /// processing.
    pub async fn file(&self, organization: &OrganizationId, name: &str, sha: char) -> StoredFile {
        let file = stored_file(organization, name, sha);
        self.queue(&file).await;
        file
    }

    /// Stores a dataset of `organization` named `name`, at version 1 without files.
    pub async fn dataset(&self, organization: &OrganizationId, name: &str) -> Dataset {
        let dataset = dataset(organization, name);
        self.datasets
            .insert(&dataset, &audited(&dataset.organization))
            .await
            .unwrap();
        dataset
    }

    /// The file as stored now; panics when it is not.
    pub async fn stored(&self, file: &StoredFile) -> StoredFile {
        self.files
            .get(&file.organization, &file.id)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("file {} is not stored", file.id))
    }
}

/// An audit record of a change in `organization` (what the knowledge services pass).
pub fn audited(organization: &OrganizationId) -> AuditRecord {
    AuditRecord::by_operator(
        organization,
        ActorKind::Operator,
        "ops",
        "dataset.update",
        "dataset",
        "ds_x",
        Utc::now(),
    )
}

/// `minutes` after the start of the checks' day.
pub fn at(minutes: i64) -> DateTime<Utc> {
    "2026-11-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::minutes(minutes)
}

/// A page of `limit`, after `after` when set.
pub fn page<K>(limit: i64, after: Option<K>) -> PageRequest<K> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after,
    }
}

/// A document of alice's in `organization` named `name` (its format from the name), 42
/// bytes whose SHA-256 is `sha` 64 times, processing, created at `at(0)`.
pub fn stored_file(organization: &OrganizationId, name: &str, sha: char) -> StoredFile {
    StoredFile {
        id: FileId::generate(),
        organization: organization.clone(),
        created_by: "alice".into(),
        name: name.into(),
        format: FileFormat::from_file_name(name).unwrap(),
        size: 42,
        sha256: sha.to_string().repeat(64),
        status: FileStatus::Processing,
        progress: 0,
        error: None,
        chunk_count: 0,
        created_at: at(0),
        updated_at: at(0),
        purpose: None,
        chunking: None,
    }
}

/// A dataset of alice's in `organization` named `name`, at version 1 without files.
pub fn dataset(organization: &OrganizationId, name: &str) -> Dataset {
    Dataset {
        id: DatasetId::generate(),
        organization: organization.clone(),
        name: name.into(),
        description: Some("handbooks".into()),
        version: 1,
        file_count: 0,
        late_interaction: false,
        created_by: "alice".into(),
        created_at: at(0),
        updated_at: at(0),
        metadata: Default::default(),
        expires_after_days: None,
        last_active_at: at(0),
    }
}

/// The chunk `ordinal` of a file, saying `text`.
pub fn chunk(ordinal: u32, text: &str) -> StoredChunk {
    StoredChunk {
        ordinal,
        text: text.into(),
        token_count: 3,
        location: ChunkLocation {
            page: Some(ordinal + 1),
            section: Some("Intro".into()),
            char_start: u64::from(ordinal) * 10,
            char_end: u64::from(ordinal) * 10 + 9,
        },
    }
}

pub fn is_conflict<T: std::fmt::Debug>(result: &Result<T, DomainError>) -> bool {
    matches!(result, Err(DomainError::Conflict { .. }))
}

pub fn is_internal<T: std::fmt::Debug>(result: &Result<T, DomainError>) -> bool {
    matches!(result, Err(DomainError::Internal { .. }))
}

/// Whether `result` is a `NotFound` of `resource`.
pub fn is_not_found<T: std::fmt::Debug>(result: &Result<T, DomainError>, resource: &str) -> bool {
    matches!(result, Err(DomainError::NotFound { resource: found, .. }) if *found == resource)
}
