//! Wiring of files and datasets: blob storage, the vector index (embedded, or a Qdrant
//! server), the embedding model, the late-interaction and reranking models, OCR (scanned PDF
//! pages, and uploaded images of organizations that opted in), the services, and the
//! processing workers that run inside this process.

use std::{path::PathBuf, sync::Arc, time::Duration};

use tessera_blobs_local::LocalBlobStore;
use tessera_blobs_s3::{S3BlobStore, S3Location};
use tessera_documents::DocumentChunker;
use tessera_embed_local::{LocalEmbedder, LocalReranker, LocalRerankerOptions, find_reranker_dir};
use tessera_kernel::{Caller, Clock, CursorCodec, DomainError, OrganizationId};
use tessera_knowledge::{
    BlobStore, ChunkTokens, ChunkingSettings, DatasetService, DocumentProcessor, Embedder,
    FileFormat, FileService, FileStatus, FileStore, GenerationStore, GenerationTarget,
    ImageReadingPolicy, JobOutcome, LateInteraction, LateInteractionSearch, MirroredIndex,
    NoEmbedder, NoIndex, Pipeline, ProcessingSettings, Processor, Reranker, Reranking, StoredFile,
    Upload, UploadError, VectorIndex,
};
use tessera_llm_openai::{OpenAiConfig, OpenAiEmbedder};
use tessera_ocr_tesseract::{Tesseract, TesseractSettings};
use tessera_organizations::OrganizationService;
use tessera_setup::config::{Settings, Switch};
use tessera_store::{Database, SqlDatasetStore, SqlFileStore};
use tokio::sync::Notify;

use crate::{
    ServicesError,
    embedding_model::{
        Generations, IndexedModels, UNRECORDED_EMBEDDED_MODEL, check_index, embedded_model_to_load,
        load_embedded, load_local, precision,
    },
    index_locations::{index_location, vector_index},
    reindexing::Reindexing,
};

/// The knowledge services and what their workers need.
#[derive(Clone)]
pub struct Knowledge {
    pub files: FileService,
    pub datasets: DatasetService,
    /// Whether search reranks here (a reranking model is loaded).
    reranks: bool,
    /// The embedding model, when one is loaded (`/openai/v1/embeddings` serves it too).
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Wakes idle workers when an upload queues a job in this process.
    wake: Arc<Notify>,
    /// `None` without an embedding model: no worker can process files.
    pipeline: Option<Pipeline>,
    /// Re-embeds files into a generation being built (or begun later), or catches up the
    /// one in use.
    reindexing: Option<Arc<Reindexing>>,
    /// The image formats OCR reads here; empty without OCR (or without an embedding model).
    image_formats: Vec<FileFormat>,
    processing: ProcessingSettings,
    poll: Duration,
}

fn knowledge_error(message: String) -> ServicesError {
    ServicesError::Knowledge(message)
}

/// What processing needs beyond storage.
struct Engines {
    documents: Arc<dyn DocumentProcessor>,
    embedder: Arc<dyn Embedder>,
    /// The generation in use, mirrored into the one being built (now or later).
    index: Arc<MirroredIndex>,
    /// The number of the generation in use (0 before generations were recorded).
    generation: u32,
    /// The generation files are re-embedded into (or the one in use, to catch up).
    reindex: Option<GenerationTarget>,
    /// The image formats the document processor's OCR reads (none without OCR).
    image_formats: Vec<FileFormat>,
    /// What the embedding model reads of one text, in the tokens chunks are sized in, when
    /// its tokenizer is known here: the most a client may ask a chunk to hold.
    chunk_window: Option<usize>,
    /// The cross-encoder search reranks with, if `knowledge.rerank` found one.
    reranker: Option<Arc<dyn Reranker>>,
    /// The model of chunks' and queries' token vectors, if `knowledge.late_interaction`
    /// loaded one.
    late_interaction: Option<Arc<dyn LateInteraction>>,
}

/// The document processor, the embedding model (an OpenAI-compatible server when
/// `knowledge.embedding_base_url` is set, else the embedded model searched for under
/// `knowledge.embedding_model_dir`, else `models.local_dir`) and the vector index its vectors
/// go to (a Qdrant server when `knowledge.qdrant_url` is set, else the embedded shard in
/// `knowledge.vectors_dir`); `None` when no model is there (files are then stored and queued,
/// and processed once a process with a model runs).
///
/// The files store says which model made the vectors the index holds: an unnamed embedded
/// model is that one, and a model that differs from it is refused (decision 0047).
async fn engines(
    settings: &Settings,
    role: Role,
    files: &dyn FileStore,
    generation_store: &dyn GenerationStore,
) -> Result<Option<Engines>, ServicesError> {
    let indexed = files
        .embedding_models()
        .await
        .map_err(|e| knowledge_error(format!("reading the index's embedding models: {e}")))?;
    let generations = Generations::of(
        generation_store
            .generations()
            .await
            .map_err(|e| knowledge_error(format!("reading the index's generations: {e}")))?,
    );
    let (embedder, unrecorded): (Arc<dyn Embedder>, String) = match remote_embedder(settings)? {
        // A remote model names the files from before models were recorded.
        Some(remote) => {
            generations
                .serving_model(Some(remote.model()))
                .map_err(knowledge_error)?;
            let name = remote.model().to_owned();
            (Arc::new(remote), name)
        }
        None => match local_embedder(settings, &indexed, &generations).await? {
            Some(local) => (Arc::new(local), UNRECORDED_EMBEDDED_MODEL.name().to_owned()),
            None => return Ok(None),
        },
    };
    if let Some(in_use) = generations.in_use_model()
        && in_use != embedder.model()
    {
        return Err(knowledge_error(format!(
            "the index in use holds the vectors of {in_use}, and this server embeds with {}",
            embedder.model()
        )));
    }
    // Before generations, the files' own records say what the index holds.
    let unrecorded_files = if generations.in_use.is_none() {
        check_index(&indexed, embedder.model(), &unrecorded).map_err(knowledge_error)?
    } else {
        0
    };
    if unrecorded_files > 0 {
        let adopted = files
            .adopt_embedding_model(embedder.model())
            .await
            .map_err(|e| knowledge_error(format!("recording the index's embedding model: {e}")))?;
        tracing::info!(
            files = adopted,
            model = embedder.model(),
            "recorded the embedding model of files processed before models were recorded"
        );
    }
    let embedder: Arc<dyn Embedder> = if settings.metrics.address().is_some() {
        Arc::new(tessera_metrics_prometheus::MeteredEmbedder(embedder))
    } else {
        embedder
    };
    let generation = generations.in_use.as_ref().map_or(0, |g| g.number);
    let in_use = vector_index(settings, embedder.dimensions(), generation).await?;
    let reranker = match role {
        Role::Serving => reranker(settings).await?,
        Role::Processing => None,
    };
    let late_interaction = crate::late_interaction::late_interaction(settings).await?;
    for retired in &generations.retired {
        tracing::info!(
            generation = retired.number,
            model = %retired.embedding_model,
            index = %index_location(settings, retired.number),
            "a retired generation of the vector index: no longer read, its index can be deleted"
        );
    }
    let (index, reindex) = match (&generations.building, &generations.in_use) {
        (Some(building), _) => {
            let model = &building.embedding_model;
            let Some(target) = load_embedded(settings, model).await? else {
                return Err(knowledge_error(format!(
                    "generation {} of the vector index is being built with {model}, whose files \
                     are not under knowledge.embedding_model_dir or models.local_dir (`just \
                     models` fetches them)",
                    building.number
                )));
            };
            let target: Arc<dyn Embedder> = Arc::new(target);
            let building_index =
                vector_index(settings, target.dimensions(), building.number).await?;
            tracing::info!(
                generation = building.number,
                %model,
                serving = embedder.model(),
                "files are re-embedded into a new generation of the vector index; search \
                 answers from the one in use until it is complete"
            );
            let mirrored = Arc::new(MirroredIndex::new(in_use));
            mirrored.mirror_into(building_index.clone());
            let target = GenerationTarget {
                number: building.number,
                embedder: target,
                late_interaction: late_interaction.clone(),
                index: building_index,
                building: true,
            };
            (mirrored, Some(target))
        }
        // Files another process embedded into an older generation are caught up.
        (None, Some(current)) => {
            let target = GenerationTarget {
                number: current.number,
                embedder: embedder.clone(),
                late_interaction: late_interaction.clone(),
                index: in_use.clone(),
                building: false,
            };
            (Arc::new(MirroredIndex::new(in_use)), Some(target))
        }
        (None, None) => (Arc::new(MirroredIndex::new(in_use)), None),
    };
    let ocr = recognizer(settings)?;
    let mut documents = DocumentChunker::default();
    let mut chunk_window = None;
    if let Some(tokens) = chunk_tokens(settings, embedder.as_ref(), reindex.as_ref()) {
        chunk_window = Some(tokens.window());
        documents = documents.with_chunk_tokens(tokens);
    }
    let mut image_formats = Vec::new();
    if let Some(tesseract) = ocr {
        image_formats = tesseract.image_formats().to_vec();
        documents = documents.with_ocr(tesseract);
    }
    Ok(Some(Engines {
        documents: Arc::new(documents),
        embedder,
        index,
        generation,
        reindex,
        image_formats,
        chunk_window,
        reranker,
        late_interaction,
    }))
}

/// The tokens chunks are sized in: the embedding model's own (of the two models while a
/// generation is built, the one that reads less of a text, so no chunk is cut short by
/// either); `None` (`cl100k_base` tokens) when its tokenizer is not known here. A
/// `knowledge.chunk_tokens` beyond what the model reads is cut to it, with a warning.
fn chunk_tokens(
    settings: &Settings,
    embedder: &dyn Embedder,
    reindex: Option<&GenerationTarget>,
) -> Option<Arc<dyn ChunkTokens>> {
    let building = reindex
        .filter(|target| target.building)
        .and_then(|target| target.embedder.chunk_tokens());
    let tokens = match (embedder.chunk_tokens(), building) {
        (Some(serving), Some(building)) if building.window() < serving.window() => building,
        (Some(serving), _) => serving,
        (None, building) => building?,
    };
    let chunk_tokens = settings.knowledge.chunk_tokens;
    if chunk_tokens > tokens.window() {
        tracing::warn!(
            chunk_tokens,
            window = tokens.window(),
            model = embedder.model(),
            "knowledge.chunk_tokens is more than the embedding model reads of a text: chunks are \
             cut to its window"
        );
    }
    Some(tokens)
}

/// The embedded cross-encoder as `knowledge.rerank` says: `auto` when its files are found
/// under `knowledge.rerank_model_dir` (else `models.local_dir`), `on` or `off`.
async fn reranker(settings: &Settings) -> Result<Option<Arc<dyn Reranker>>, ServicesError> {
    let knowledge = &settings.knowledge;
    if knowledge.rerank == Switch::Off {
        return Ok(None);
    }
    let root = (knowledge.rerank_model_dir.clone()).or_else(|| settings.models.local_dir.clone());
    let options = LocalRerankerOptions {
        precision: precision(settings.knowledge.embedding_precision),
        ..LocalRerankerOptions::default()
    };
    let loaded = tokio::task::spawn_blocking(move || {
        let Some(dir) = root.as_deref().and_then(find_reranker_dir) else {
            return Ok(None);
        };
        LocalReranker::load(&dir, options).map(Some)
    })
    .await
    .map_err(|e| knowledge_error(format!("loading the reranking model: {e}")))?
    .map_err(|e| knowledge_error(format!("knowledge.rerank_model_dir: {e}")))?;
    match loaded {
        Some(reranker) => Ok(Some(Arc::new(reranker))),
        None if knowledge.rerank == Switch::Auto => {
            tracing::warn!(
                "search is not reranked: no reranking model under knowledge.rerank_model_dir or \
                 models.local_dir (`just models` fetches ms-marco-MiniLM-L-12-v2; or set \
                 knowledge.rerank = \"off\")"
            );
            Ok(None)
        }
        None => Err(knowledge_error(
            "knowledge.rerank = \"on\": no reranking model under knowledge.rerank_model_dir or \
             models.local_dir (`just models` fetches it)"
                .into(),
        )),
    }
}

/// OCR as `knowledge.ocr` says (for PDF pages without a text layer, and the uploaded images
/// of organizations that opted in): `auto` when Tesseract, its languages and `pdftoppm` are
/// installed, `on` or `off`.
fn recognizer(settings: &Settings) -> Result<Option<Arc<Tesseract>>, ServicesError> {
    let knowledge = &settings.knowledge;
    if knowledge.ocr == Switch::Off {
        return Ok(None);
    }
    let ocr = TesseractSettings {
        languages: knowledge.ocr_languages.clone(),
        page_timeout: Duration::from_secs(knowledge.ocr_page_timeout_secs),
        ..TesseractSettings::default()
    };
    match Tesseract::detect(ocr) {
        Ok(tesseract) => {
            let images: Vec<&str> = tesseract
                .image_formats()
                .iter()
                .map(|format| format.as_str())
                .collect();
            tracing::info!(
                engine = tesseract.version(),
                languages = %knowledge.ocr_languages,
                images = %images.join(" "),
                "PDF pages without a text layer, and the uploaded images of organizations that \
                 opted in, are read by OCR"
            );
            Ok(Some(Arc::new(tesseract)))
        }
        Err(error) if knowledge.ocr == Switch::Auto => {
            tracing::warn!(
                %error,
                "OCR is off: PDF pages without a text layer are skipped and images are not read \
                 (install tesseract-ocr, its language data and poppler-utils, or set \
                 knowledge.ocr = \"off\")"
            );
            Ok(None)
        }
        Err(error) => Err(knowledge_error(format!("knowledge.ocr = \"on\": {error}"))),
    }
}

/// The OpenAI-compatible embeddings server of `knowledge.embedding_base_url`, if set.
fn remote_embedder(settings: &Settings) -> Result<Option<OpenAiEmbedder>, ServicesError> {
    let knowledge = &settings.knowledge;
    let Some(base_url) = &knowledge.embedding_base_url else {
        return Ok(None);
    };
    let (Some(model), Some(dimensions)) =
        (&knowledge.embedding_model, knowledge.embedding_dimensions)
    else {
        return Err(knowledge_error(
            "knowledge.embedding_base_url needs knowledge.embedding_model and knowledge.embedding_dimensions".into(),
        ));
    };
    let mut endpoint = OpenAiConfig::new(base_url.clone());
    if let Some(variable) = &knowledge.embedding_api_key_env {
        match std::env::var(variable) {
            Ok(key) if !key.is_empty() => endpoint = endpoint.with_api_key(key),
            _ => {
                return Err(knowledge_error(format!(
                    "knowledge.embedding_api_key_env names `{variable}`, which is not set"
                )));
            }
        }
    }
    let embedder = OpenAiEmbedder::new(
        &endpoint,
        model.clone(),
        dimensions,
        knowledge.embedding_batch_size,
    )
    .map_err(|e| knowledge_error(format!("knowledge.embedding_base_url: {e}")))?;
    tracing::info!(%base_url, %model, dimensions, "embeddings from an OpenAI-compatible server");
    Ok(Some(embedder))
}

/// The embedded model that serves (the generation in use's, else the one
/// `knowledge.embedding_model` names, else the one the index's vectors were made by, else the
/// default), if its files are found.
async fn local_embedder(
    settings: &Settings,
    indexed: &IndexedModels,
    generations: &Generations,
) -> Result<Option<LocalEmbedder>, ServicesError> {
    let model = embedded_model_to_load(
        settings.knowledge.embedding_model.as_deref(),
        indexed,
        generations,
    )
    .map_err(knowledge_error)?;
    load_local(settings, model).await
}

/// What a process does with knowledge: an API replica serves search (and may process
/// files); a worker only processes them, so it loads no reranking model (issue 61: about
/// 130 MB it never used).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Serving,
    Processing,
}

impl Knowledge {
    /// Knowledge as an API replica serves it: search reranks as `knowledge.rerank` says.
    pub async fn build(
        settings: &Settings,
        database: &Database,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
    ) -> Result<Self, ServicesError> {
        Self::build_as(settings, database, clock, cursors, Role::Serving).await
    }

    /// Knowledge for a worker (`tessera-api worker`) that processes files and serves no
    /// search: no reranking model is loaded, whatever `knowledge.rerank` says.
    pub async fn build_for_processing(
        settings: &Settings,
        database: &Database,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
    ) -> Result<Self, ServicesError> {
        Self::build_as(settings, database, clock, cursors, Role::Processing).await
    }

    async fn build_as(
        settings: &Settings,
        database: &Database,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
        role: Role,
    ) -> Result<Self, ServicesError> {
        let knowledge = &settings.knowledge;
        if knowledge.chunk_tokens == 0 || knowledge.chunk_overlap_tokens >= knowledge.chunk_tokens {
            return Err(knowledge_error(
                "knowledge.chunk_overlap_tokens must be less than knowledge.chunk_tokens (> 0)"
                    .into(),
            ));
        }
        let in_data_dir = |dir: &Option<PathBuf>, name: &str| {
            dir.clone().unwrap_or_else(|| settings.data_dir.join(name))
        };
        let blobs: Arc<dyn BlobStore> = match &knowledge.s3_bucket {
            Some(bucket) => {
                let location = S3Location {
                    bucket: bucket.clone(),
                    prefix: knowledge.s3_prefix.clone(),
                    endpoint: knowledge.s3_endpoint.clone(),
                    region: knowledge.s3_region.clone(),
                    allow_http: knowledge.s3_allow_http,
                };
                let spool = settings.data_dir.join("spool");
                let store = match (&knowledge.s3_access_key_id, &knowledge.s3_secret_access_key) {
                    (Some(id), Some(secret)) => {
                        S3BlobStore::connect_with_keys(&location, id, secret.expose(), spool)
                    }
                    (None, None) => S3BlobStore::connect(&location, spool),
                    _ => {
                        return Err(knowledge_error(
                            "knowledge.s3_access_key_id and knowledge.s3_secret_access_key go together".into(),
                        ));
                    }
                }
                .map_err(|e| knowledge_error(format!("knowledge.s3_bucket: {e}")))?;
                tracing::info!(%bucket, endpoint = knowledge.s3_endpoint.as_deref().unwrap_or("AWS"), "uploaded content is kept in S3");
                Arc::new(store)
            }
            None => Arc::new(
                LocalBlobStore::open(in_data_dir(&knowledge.blobs_dir, "blobs"))
                    .await
                    .map_err(|e| knowledge_error(format!("knowledge.blobs_dir: {e}")))?,
            ),
        };
        let files_store = Arc::new(SqlFileStore::new(database.clone()));
        let engines = engines(settings, role, files_store.as_ref(), files_store.as_ref()).await?;
        let generation = engines.as_ref().map_or(0, |engines| engines.generation);
        let reindexing = engines.as_ref().map(|engines| {
            Arc::new(Reindexing {
                settings: settings.clone(),
                files: files_store.clone(),
                mirror: engines.index.clone(),
                late_interaction: engines.late_interaction.clone(),
                clock: clock.clone(),
                lease: Duration::from_secs(knowledge.lease_secs.max(1)),
                serving: engines.generation,
                initial: engines.reindex.clone(),
            })
        });
        let index: Arc<dyn VectorIndex> = match &engines {
            Some(engines) => engines.index.clone(),
            None => Arc::new(NoIndex),
        };
        let files = FileService::new(
            files_store.clone(),
            blobs.clone(),
            index.clone(),
            clock.clone(),
            cursors.clone(),
        );
        let datasets = DatasetService::new(
            Arc::new(SqlDatasetStore::new(database.clone())),
            files_store.clone(),
            engines.as_ref().map_or_else(
                || Arc::new(NoEmbedder) as Arc<dyn Embedder>,
                |e| e.embedder.clone(),
            ),
            index.clone(),
            clock.clone(),
            cursors,
        );
        let datasets = match engines.as_ref().and_then(|engines| engines.chunk_window) {
            Some(window) => datasets.with_chunk_window(window),
            None => datasets,
        };
        let reranker = engines
            .as_ref()
            .and_then(|engines| engines.reranker.clone());
        let reranks = reranker.is_some();
        let datasets = match reranker {
            Some(reranker) => datasets.with_reranking(Reranking {
                reranker,
                candidates: knowledge.rerank_candidates,
                by_default: knowledge.rerank_by_default,
            }),
            None => datasets,
        };
        let late_interaction = engines
            .as_ref()
            .and_then(|engines| engines.late_interaction.clone());
        let datasets = match late_interaction.clone() {
            Some(model) => datasets.with_late_interaction(LateInteractionSearch {
                model,
                candidates: knowledge.late_interaction_candidates,
            }),
            None => datasets,
        };
        let embedder = engines.as_ref().map(|engines| engines.embedder.clone());
        let image_formats = engines
            .as_ref()
            .map(|engines| engines.image_formats.clone())
            .unwrap_or_default();
        let pipeline = engines.map(|engines| Pipeline {
            files: files_store,
            blobs,
            documents: engines.documents,
            embedder: engines.embedder,
            late_interaction,
            index: engines.index,
            generation,
            clock,
        });
        Ok(Self {
            files,
            datasets,
            reranks,
            embedder,
            wake: Arc::new(Notify::new()),
            pipeline,
            reindexing,
            image_formats,
            processing: ProcessingSettings {
                chunking: ChunkingSettings {
                    max_tokens: knowledge.chunk_tokens,
                    overlap_tokens: knowledge.chunk_overlap_tokens,
                },
                lease: Duration::from_secs(knowledge.lease_secs.max(1)),
                max_attempts: knowledge.max_attempts.max(1),
                ..ProcessingSettings::default()
            },
            poll: Duration::from_secs(knowledge.poll_secs.max(1)),
        })
    }

    /// Reads the uploaded images of the organizations `policy` says opted in, when this
    /// process has OCR (and an embedding model to process them with); without, images stay
    /// `ready` at once.
    pub fn with_image_reading(mut self, policy: Arc<dyn ImageReadingPolicy>) -> Self {
        if !self.image_formats.is_empty() {
            self.files = self
                .files
                .with_image_reading(policy, self.image_formats.iter().copied());
        }
        self
    }

    /// Stores an upload ([`FileService::upload`]) and wakes an idle worker of this process
    /// when it queued a job, so processing starts without waiting for the next poll.
    pub async fn upload(
        &self,
        caller: &Caller,
        upload: Upload<'_>,
    ) -> Result<StoredFile, UploadError> {
        let file = self.files.upload(caller, upload).await?;
        if file.status == FileStatus::Processing {
            self.wake.notify_one();
        }
        Ok(file)
    }

    /// Whether files can be processed here (an embedding model is loaded).
    pub fn can_process(&self) -> bool {
        self.pipeline.is_some()
    }

    /// Whether search reranks here (a reranking model is loaded).
    pub fn reranks(&self) -> bool {
        self.reranks
    }

    /// Starts `count` workers on the current runtime; they run until it stops. A job a
    /// stopped worker held is taken over by another when its lease expires.
    pub fn start_workers(&self, count: usize) {
        let Some(pipeline) = &self.pipeline else {
            if count > 0 {
                tracing::warn!("file processing workers not started: no embedding model");
            }
            return;
        };
        let process = std::process::id();
        for number in 0..count {
            let worker = format!("{process}-{number}-{}", uuid::Uuid::now_v7().simple());
            let processor = Processor::new(pipeline.clone(), self.processing, worker);
            tokio::spawn(run_worker(processor, self.wake.clone(), self.poll));
        }
        if count > 0
            && let Some(reindexing) = &self.reindexing
        {
            tokio::spawn(reindexing.clone().run(self.poll));
        }
    }
}

/// Processes due jobs until none is left, then waits for a wake-up or the poll interval.
async fn run_worker(processor: Processor, wake: Arc<Notify>, poll: Duration) {
    use tessera_metrics_prometheus::{FileJobState, file_job};
    loop {
        let started = std::time::Instant::now();
        match processor.process_next().await {
            Ok(outcomes) if !outcomes.is_empty() => {
                // A round's files end together: each is timed from the round's start.
                let elapsed = started.elapsed();
                for (job, outcome) in outcomes {
                    match outcome {
                        JobOutcome::Ready { chunks } => {
                            file_job(FileJobState::Ready, elapsed);
                            tracing::info!(file = %job.file.id, chunks, attempt = job.attempt, "file ready");
                        }
                        JobOutcome::Failed { reason } => {
                            file_job(FileJobState::Failed, elapsed);
                            tracing::warn!(file = %job.file.id, %reason, "file processing failed");
                        }
                        JobOutcome::Retrying { at, reason } => {
                            file_job(FileJobState::Retrying, elapsed);
                            tracing::warn!(file = %job.file.id, %reason, %at, attempt = job.attempt, "file processing will be retried");
                        }
                        JobOutcome::LeaseLost => {
                            file_job(FileJobState::LeaseLost, elapsed);
                            tracing::warn!(file = %job.file.id, "file processing taken over by another worker");
                        }
                    }
                }
            }
            Ok(_) => {
                let _ = tokio::time::timeout(poll, wake.notified()).await;
            }
            Err(error) => {
                tracing::warn!(%error, "file processing queue unavailable");
                tokio::time::sleep(poll).await;
            }
        }
    }
}

/// The organization's own setting (`imageOcr`), read at each upload so that a change applies
/// to the next one: the knowledge domain's policy port over the organizations domain, joined
/// here so that neither domain depends on the other.
pub struct OrganizationImageReading(pub OrganizationService);

#[async_trait::async_trait]
impl ImageReadingPolicy for OrganizationImageReading {
    async fn reads_images(&self, organization: &OrganizationId) -> Result<bool, DomainError> {
        Ok(self.0.reads_images(organization).await?)
    }
}
