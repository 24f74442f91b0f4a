//! The processing pipeline against mocked ports: what a worker stores, indexes, retries and
//! fails, and that it stops writing once its lease is lost.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use chrono::{DateTime, Utc};
use mockall::predicate::eq;
use tessera_kernel::{ManualClock, OrganizationId};
use tessera_knowledge::{
    BlobError, BlobStore, BlobWriter, ChunkDraft, ChunkLocation, ClaimedJob, DatasetId,
    DocumentError, EmbedError, ExtractionProgress, FileFormat, FileId, FileStatus, JobOutcome,
    MockDocumentProcessor, MockEmbedder, MockFileStore, MockLateInteraction, MockVectorIndex,
    Pipeline, ProcessingSettings, Processor, StoredFile, TokenVectors,
};

/// A blob store holding one document.
struct OneBlob(Vec<u8>);

#[async_trait::async_trait]
impl BlobStore for OneBlob {
    async fn writer(&self) -> Result<Box<dyn BlobWriter>, BlobError> {
        Err(BlobError::Io("read-only".into()))
    }
    async fn read(&self, _: &str) -> Result<Vec<u8>, BlobError> {
        Ok(self.0.clone())
    }
    async fn stream(
        &self,
        _: &str,
    ) -> Result<futures_util::stream::BoxStream<'static, Result<Vec<u8>, BlobError>>, BlobError>
    {
        Err(BlobError::Io("not used".into()))
    }
    async fn delete(&self, _: &str) -> Result<(), BlobError> {
        Ok(())
    }
}

fn now() -> DateTime<Utc> {
    "2026-11-22T10:00:00Z".parse().unwrap()
}

fn job(attempt: u32) -> ClaimedJob {
    ClaimedJob {
        file: StoredFile {
            id: FileId::generate(),
            organization: OrganizationId::generate(),
            created_by: "alice".into(),
            name: "notes.md".into(),
            format: FileFormat::Md,
            size: 10,
            sha256: "a".repeat(64),
            status: FileStatus::Processing,
            progress: 0,
            error: None,
            chunk_count: 0,
            created_at: now(),
            updated_at: now(),
        },
        attempt,
    }
}

fn drafts(count: usize) -> Vec<ChunkDraft> {
    (0..count)
        .map(|i| ChunkDraft {
            text: format!("chunk {i}"),
            token_count: 2,
            location: ChunkLocation {
                char_start: i as u64 * 8,
                char_end: i as u64 * 8 + 7,
                ..ChunkLocation::default()
            },
        })
        .collect()
}

struct Ports {
    files: MockFileStore,
    documents: MockDocumentProcessor,
    embedder: MockEmbedder,
    late_interaction: Option<MockLateInteraction>,
    index: MockVectorIndex,
}

impl Ports {
    fn new(job: &ClaimedJob) -> Self {
        let mut files = MockFileStore::new();
        let claimed = job.clone();
        files
            .expect_claim_job()
            .times(1)
            .returning(move |_, _, _| Ok(Some(claimed.clone())));
        let mut embedder = MockEmbedder::new();
        embedder
            .expect_model()
            .return_const("test-model".to_owned());
        Self {
            files,
            documents: MockDocumentProcessor::new(),
            embedder,
            late_interaction: None,
            index: MockVectorIndex::new(),
        }
    }

    fn processor(self) -> Processor {
        let pipeline = Pipeline {
            files: Arc::new(self.files),
            blobs: Arc::new(OneBlob(b"# Notes".to_vec())),
            documents: Arc::new(self.documents),
            embedder: Arc::new(self.embedder),
            late_interaction: self
                .late_interaction
                .map(|model| Arc::new(model) as Arc<dyn tessera_knowledge::LateInteraction>),
            index: Arc::new(self.index),
            generation: 3,
            clock: Arc::new(ManualClock::new(now())),
        };
        let settings = ProcessingSettings {
            embed_batch: 2,
            retry_delay: Duration::from_secs(5),
            max_attempts: 3,
            ..ProcessingSettings::default()
        };
        Processor::new(pipeline, settings, "w1")
    }
}

#[tokio::test]
async fn a_document_is_embedded_in_batches_indexed_and_completed() {
    let job = job(1);
    let dataset = DatasetId::generate();
    let mut ports = Ports::new(&job);
    ports
        .files
        .expect_report_progress()
        .returning(|_, _, _, _, _| Ok(true));
    let datasets = vec![dataset.clone()];
    ports
        .files
        .expect_datasets_of()
        .times(2)
        .returning(move |_, _| Ok(datasets.clone()));
    ports
        .documents
        .expect_chunks()
        .withf(|format, content, _, _| *format == FileFormat::Md && content == b"# Notes")
        .returning(|_, _, _, _| Ok(drafts(5)));
    let batches = Arc::new(Mutex::new(Vec::new()));
    let seen = batches.clone();
    ports
        .embedder
        .expect_embed()
        .times(3)
        .returning(move |texts| {
            seen.lock().unwrap().push(texts.len());
            Ok(texts.iter().map(|_| vec![0.6, 0.8]).collect())
        });
    let indexed = Arc::new(Mutex::new(Vec::new()));
    let upserts = indexed.clone();
    ports
        .index
        .expect_upsert()
        .times(3)
        .returning(move |chunks| {
            upserts.lock().unwrap().extend(chunks);
            Ok(())
        });
    let file_id = job.file.id.clone();
    ports
        .files
        .expect_complete_job()
        .withf(move |worker, chunks, model, generation, ready| {
            // The processing decides the event: this file, ready in five chunks, embedded by
            // the pipeline's model into its generation.
            ready.file == file_id
                && ready.chunk_count == 5
                && worker == "w1"
                && model == "test-model"
                && *generation == 3
                && chunks.iter().map(|c| c.ordinal).collect::<Vec<_>>() == vec![0, 1, 2, 3, 4]
        })
        .times(1)
        .returning(|_, _, _, _, _| Ok(true));
    let (_, outcome) = ports.processor().process_next().await.unwrap().unwrap();
    assert_eq!(outcome, JobOutcome::Ready { chunks: 5 });
    assert_eq!(*batches.lock().unwrap(), vec![2, 2, 1]);
    let indexed = indexed.lock().unwrap();
    assert_eq!(indexed.len(), 5);
    assert!(indexed.iter().all(|c| c.datasets == vec![dataset.clone()]));
    assert!(
        indexed.iter().all(|c| c.late.is_none()),
        "no model, no token vectors"
    );
    assert_eq!(indexed[4].ordinal, 4);
}

/// One token vector per character of the text: `[1, 0]` for a digit, `[0, 1]` otherwise.
fn token_vectors(text: &str) -> TokenVectors {
    let values = text
        .chars()
        .flat_map(|c| {
            if c.is_ascii_digit() {
                [1.0, 0.0]
            } else {
                [0.0, 1.0]
            }
        })
        .collect();
    TokenVectors::new(2, values).unwrap()
}

/// Ports for a job of three chunks, whose index keeps what it is given.
fn ports_of_three(job: &ClaimedJob) -> (Ports, Arc<Mutex<Vec<tessera_knowledge::IndexedChunk>>>) {
    let mut ports = Ports::new(job);
    ports
        .files
        .expect_report_progress()
        .returning(|_, _, _, _, _| Ok(true));
    ports
        .files
        .expect_datasets_of()
        .returning(|_, _| Ok(Vec::new()));
    ports
        .documents
        .expect_chunks()
        .returning(|_, _, _, _| Ok(drafts(3)));
    ports
        .embedder
        .expect_embed()
        .returning(|texts| Ok(texts.iter().map(|_| vec![0.6, 0.8]).collect()));
    let indexed = Arc::new(Mutex::new(Vec::new()));
    let upserts = indexed.clone();
    ports.index.expect_upsert().returning(move |chunks| {
        upserts.lock().unwrap().extend(chunks);
        Ok(())
    });
    (ports, indexed)
}

#[tokio::test]
async fn with_late_interaction_every_chunk_is_indexed_with_its_own_token_vectors() {
    let job = job(1);
    let (mut ports, indexed) = ports_of_three(&job);
    let mut model = MockLateInteraction::new();
    model
        .expect_encode_documents()
        .times(2)
        .returning(|texts| Ok(texts.iter().map(|text| token_vectors(text)).collect()));
    ports.late_interaction = Some(model);
    ports
        .files
        .expect_complete_job()
        .times(1)
        .returning(|_, _, _, _, _| Ok(true));
    let (_, outcome) = ports.processor().process_next().await.unwrap().unwrap();
    assert_eq!(outcome, JobOutcome::Ready { chunks: 3 });
    let indexed = indexed.lock().unwrap();
    assert_eq!(indexed.len(), 3);
    for chunk in indexed.iter() {
        assert_eq!(
            chunk.late,
            Some(token_vectors(&chunk.text)),
            "{}",
            chunk.text
        );
    }
}

#[tokio::test]
async fn a_late_interaction_model_that_miscounts_or_fails_is_retried() {
    for answer in [
        Ok(vec![token_vectors("chunk 0")]),
        Err(EmbedError::Unavailable("model thread gone".into())),
    ] {
        let job = job(1);
        let (mut ports, indexed) = ports_of_three(&job);
        let mut model = MockLateInteraction::new();
        model
            .expect_encode_documents()
            .times(1)
            .returning(move |_| answer.clone());
        ports.late_interaction = Some(model);
        ports
            .files
            .expect_retry_job()
            .times(1)
            .returning(|_, _, _, _| Ok(true));
        let (_, outcome) = ports.processor().process_next().await.unwrap().unwrap();
        assert!(
            matches!(outcome, JobOutcome::Retrying { .. }),
            "{outcome:?}"
        );
        assert!(indexed.lock().unwrap().is_empty(), "nothing indexed");
    }
}

#[tokio::test]
async fn pages_read_by_ocr_move_the_progress_and_a_lost_lease_stops_the_job() {
    let job = job(1);
    let mut ports = Ports::new(&job);
    let reported = Arc::new(Mutex::new(Vec::new()));
    let seen = reported.clone();
    // The job is lost when the second page is reported.
    ports
        .files
        .expect_report_progress()
        .returning(move |_, _, percent, _, _| {
            let mut seen = seen.lock().unwrap();
            seen.push(percent);
            Ok(seen.len() < 3)
        });
    ports
        .documents
        .expect_chunks()
        .returning(|_, _, _, progress| {
            for done in 1..=4 {
                progress(ExtractionProgress { done, total: 4 });
            }
            Ok(drafts(1))
        });
    ports.embedder.expect_embed().never();
    ports.files.expect_complete_job().never();
    let (_, outcome) = ports.processor().process_next().await.unwrap().unwrap();
    assert_eq!(outcome, JobOutcome::LeaseLost);
    // 10 % once read, 15 % after the first page; nothing is reported after the loss.
    assert_eq!(*reported.lock().unwrap(), vec![10, 15, 20]);
}

#[tokio::test]
async fn a_broken_document_fails_at_once_and_leaves_nothing_indexed() {
    let job = job(1);
    let mut ports = Ports::new(&job);
    ports
        .files
        .expect_report_progress()
        .returning(|_, _, _, _, _| Ok(true));
    ports
        .documents
        .expect_chunks()
        .returning(|_, _, _, _| Err(DocumentError::Encrypted));
    ports
        .files
        .expect_fail_job()
        .withf(|_, failed| failed.error.contains("encrypted"))
        .times(1)
        .returning(|_, _| Ok(true));
    let organization = job.file.organization.clone();
    let file = job.file.id.clone();
    ports
        .index
        .expect_delete_file()
        .with(eq(organization), eq(file))
        .times(1)
        .returning(|_, _| Ok(()));
    let (_, outcome) = ports.processor().process_next().await.unwrap().unwrap();
    assert!(matches!(outcome, JobOutcome::Failed { reason } if reason.contains("encrypted")));
}

#[tokio::test]
async fn an_unavailable_embedder_is_retried_with_growing_delays_then_fails() {
    for (attempt, expected) in [(1, Some(5)), (2, Some(10)), (3, None)] {
        let job = job(attempt);
        let mut ports = Ports::new(&job);
        ports
            .files
            .expect_report_progress()
            .returning(|_, _, _, _, _| Ok(true));
        ports
            .files
            .expect_datasets_of()
            .returning(|_, _| Ok(Vec::new()));
        ports
            .documents
            .expect_chunks()
            .returning(|_, _, _, _| Ok(drafts(1)));
        ports
            .embedder
            .expect_embed()
            .returning(|_| Err(EmbedError::Unavailable("busy".into())));
        match expected {
            Some(seconds) => {
                let due = now() + chrono::Duration::seconds(seconds);
                ports
                    .files
                    .expect_retry_job()
                    .withf(move |_, _, error, at| error.contains("busy") && *at == due)
                    .times(1)
                    .returning(|_, _, _, _| Ok(true));
            }
            None => {
                ports
                    .files
                    .expect_fail_job()
                    .withf(|_, failed| {
                        failed.error.contains("3 times") && failed.error.contains("busy")
                    })
                    .times(1)
                    .returning(|_, _| Ok(true));
                ports.index.expect_delete_file().returning(|_, _| Ok(()));
            }
        }
        let (_, outcome) = ports.processor().process_next().await.unwrap().unwrap();
        match expected {
            Some(_) => assert!(
                matches!(outcome, JobOutcome::Retrying { .. }),
                "{outcome:?}"
            ),
            None => assert!(matches!(outcome, JobOutcome::Failed { .. }), "{outcome:?}"),
        }
    }
}

#[tokio::test]
async fn a_worker_that_lost_its_lease_stops_writing() {
    let job = job(1);
    let mut ports = Ports::new(&job);
    // The first progress report finds the job taken over by another worker.
    ports
        .files
        .expect_report_progress()
        .times(1)
        .returning(|_, _, _, _, _| Ok(false));
    ports.files.expect_complete_job().never();
    ports.files.expect_fail_job().never();
    ports.documents.expect_chunks().never();
    let (_, outcome) = ports.processor().process_next().await.unwrap().unwrap();
    assert_eq!(outcome, JobOutcome::LeaseLost);
}

#[tokio::test]
async fn an_association_made_during_processing_reaches_the_index() {
    let job = job(1);
    let dataset = DatasetId::generate();
    let mut ports = Ports::new(&job);
    ports
        .files
        .expect_report_progress()
        .returning(|_, _, _, _, _| Ok(true));
    let calls = Arc::new(Mutex::new(0));
    let later = dataset.clone();
    ports.files.expect_datasets_of().returning(move |_, _| {
        let mut calls = calls.lock().unwrap();
        *calls += 1;
        Ok(if *calls == 1 {
            Vec::new()
        } else {
            vec![later.clone()]
        })
    });
    ports
        .documents
        .expect_chunks()
        .returning(|_, _, _, _| Ok(drafts(1)));
    ports
        .embedder
        .expect_embed()
        .returning(|texts| Ok(texts.iter().map(|_| vec![1.0]).collect()));
    ports.index.expect_upsert().returning(|_| Ok(()));
    ports
        .index
        .expect_set_datasets()
        .withf(move |_, _, datasets| *datasets == vec![dataset.clone()])
        .times(1)
        .returning(|_, _, _| Ok(()));
    ports
        .files
        .expect_complete_job()
        .returning(|_, _, _, _, _| Ok(true));
    let (_, outcome) = ports.processor().process_next().await.unwrap().unwrap();
    assert_eq!(outcome, JobOutcome::Ready { chunks: 1 });
}

#[tokio::test]
async fn an_empty_queue_is_not_an_error() {
    let mut files = MockFileStore::new();
    files.expect_claim_job().returning(|_, _, _| Ok(None));
    let pipeline = Pipeline {
        files: Arc::new(files),
        blobs: Arc::new(OneBlob(Vec::new())),
        documents: Arc::new(MockDocumentProcessor::new()),
        embedder: Arc::new(MockEmbedder::new()),
        late_interaction: None,
        index: Arc::new(MockVectorIndex::new()),
        generation: 0,
        clock: Arc::new(ManualClock::new(now())),
    };
    let processor = Processor::new(pipeline, ProcessingSettings::default(), "w1");
    assert!(processor.process_next().await.unwrap().is_none());
}
