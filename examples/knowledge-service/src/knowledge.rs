//! The knowledge domain's services over the adapters this service chose: every port of
//! `tessera-knowledge` gets a real implementation here, and this file is the one to edit to
//! swap one (another `FileStore`/`DatasetStore`, `BlobStore`, `VectorIndex`, `Embedder` or
//! `DocumentProcessor`).

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::Context;
use tessera_blobs_local::LocalBlobStore;
use tessera_documents::DocumentChunker;
use tessera_embed_local::{LocalEmbedder, LocalEmbedderOptions};
use tessera_kernel::{Clock, CursorCodec, OrganizationId, SystemClock};
use tessera_knowledge::{
    BlobStore, DatasetService, DocumentProcessor, Embedder, FileService, Pipeline,
    ProcessingSettings, Processor, VectorIndex,
};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_store::{
    Database, DatabaseUrl, Part, PoolOptions, SqlDatasetStore, SqlFileStore, SqlOrganizationStore,
};
use tessera_vectors_qdrant::EdgeVectorIndex;

/// Where the service keeps what it holds.
pub struct Places {
    /// Files, their chunks and processing jobs, datasets (and the tenant they belong to).
    pub database: DatabaseUrl,
    /// Uploaded content, one file per distinct content (`<data>/blobs`).
    pub blobs: PathBuf,
    /// The embedded vector index's shard (`<data>/vectors`).
    pub vectors: PathBuf,
    /// Where the embedding model's files are (`just models` fills `~/.cache/tessera-models`).
    pub models: PathBuf,
}

/// The services the example calls, and the worker that processes uploaded files.
pub struct Knowledge {
    pub files: FileService,
    pub datasets: DatasetService,
    pub processor: Processor,
}

impl Knowledge {
    /// Migrates the database (the knowledge part and what it needs alone), makes
    /// `organization` exist there, loads the embedding model and opens the blob store and
    /// the vector index.
    pub async fn open(places: &Places, organization: &OrganizationId) -> anyhow::Result<Self> {
        let database = knowledge_database(&places.database, organization).await?;
        let embedder = Arc::new(embedder(&places.models).await?);
        let blobs: Arc<dyn BlobStore> = Arc::new(LocalBlobStore::open(&places.blobs).await?);
        // The index is made for the model's width: another model needs another folder.
        let index: Arc<dyn VectorIndex> =
            Arc::new(EdgeVectorIndex::open(&places.vectors, embedder.dimensions()).await?);
        // Chunks are sized in the model's own word pieces, so none is longer than it reads.
        let mut chunker = DocumentChunker::default();
        if let Some(tokens) = embedder.chunk_tokens() {
            chunker = chunker.with_chunk_tokens(tokens);
        }
        let documents: Arc<dyn DocumentProcessor> = Arc::new(chunker);
        // Both stores over one database: whether a dataset still holds a file (which then
        // cannot be deleted) is decided in one state.
        let file_store = Arc::new(SqlFileStore::new(database.clone()));
        let dataset_store = Arc::new(SqlDatasetStore::new(database));
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        // Signs the page cursors of lists (unused here): a real service keeps its own secret.
        let cursors = CursorCodec::new(*b"an example's own cursor key.....");

        let files = FileService::new(
            file_store.clone(),
            blobs.clone(),
            index.clone(),
            clock.clone(),
            cursors.clone(),
        );
        let datasets = DatasetService::new(
            dataset_store,
            file_store.clone(),
            embedder.clone(),
            index.clone(),
            clock.clone(),
            cursors,
        );
        let pipeline = Pipeline {
            files: file_store,
            blobs,
            documents,
            embedder,
            late_interaction: None,
            index,
            // No other generation of the index is ever built here (no model change).
            generation: 0,
            clock,
        };
        let processor =
            Processor::new(pipeline, ProcessingSettings::default(), "knowledge-service");
        Ok(Self {
            files,
            datasets,
            processor,
        })
    }
}

/// all-MiniLM-L6-v2 on the CPU, found anywhere under `models`.
async fn embedder(models: &Path) -> anyhow::Result<LocalEmbedder> {
    let options = LocalEmbedderOptions::default();
    let dir = options.model.find(models).with_context(|| {
        format!(
            "{} is not under {} (`just models` fetches it)",
            options.model.name(),
            models.display()
        )
    })?;
    // Loading reads and prepares the weights: blocking work, off the runtime's threads.
    let embedder = tokio::task::spawn_blocking(move || LocalEmbedder::load(&dir, options))
        .await?
        .context("loading the embedding model")?;
    Ok(embedder)
}

/// The database at `url`, migrated with the knowledge part (and the tenants and webhooks
/// parts it needs: its stores write `file.*` and `dataset.*` events to the outbox) alone,
/// holding `organization`, which every file and dataset belongs to.
async fn knowledge_database(
    url: &DatabaseUrl,
    organization: &OrganizationId,
) -> anyhow::Result<Database> {
    let applied = Database::migrate_parts(url, &[Part::Knowledge]).await?;
    eprintln!("{url}: {} migrations applied", applied.len());
    let database = Database::connect(url, PoolOptions::default()).await?;
    let organizations = SqlOrganizationStore::new(database.clone());
    if organizations.get(organization).await?.is_none() {
        let now = chrono::Utc::now();
        let tenant = Organization {
            id: organization.clone(),
            name: "Example".to_owned(),
            plan: Plan::Free,
            image_ocr: false,
            created_at: now,
            updated_at: now,
        };
        organizations.insert(&tenant, &[]).await?;
    }
    Ok(database)
}
