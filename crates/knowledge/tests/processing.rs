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
    BlobError, BlobStore, BlobWriter, ChunkDraft, ChunkLocation, ChunkingSettings, ClaimedJob,
    DatasetId, DocumentError, EmbedError, ExtractionProgress, FileFormat, FileId, FileStatus,
    JobOutcome, MockDocumentProcessor, MockEmbedder, MockFileStore, MockLateInteraction,
    MockVectorIndex, Pipeline, ProcessingSettings, Processor, StoredFile, TokenVectors,
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
            purpose: None,
            chunking: None,
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

/// The outcome of a round that held one job.
fn only(mut outcomes: Vec<(ClaimedJob, JobOutcome)>) -> JobOutcome {
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    outcomes.remove(0).1
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
        // The job, then an empty queue (a round of small files asks for more).
        let mut queue = vec![job.clone()];
        files
            .expect_claim_job()
            .times(1..=2)
            .returning(move |_, _, _| Ok(queue.pop()));
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
    let outcome = only(ports.processor().process_next().await.unwrap());
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

/// A file with sizes of its own is cut with them; one cut before (it had chunks) has its
/// index entries deleted before any new one is written.
#[tokio::test]
async fn a_file_is_cut_with_its_own_sizes_after_its_old_entries_go() {
    let sizes = ChunkingSettings {
        max_tokens: 100,
        overlap_tokens: 10,
    };
    let mut job = job(1);
    job.file.chunking = Some(sizes);
    job.file.chunk_count = 7;
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
        .withf(move |_, _, settings, _| *settings == sizes)
        .times(1)
        .returning(|_, _, _, _| Ok(drafts(1)));
    ports
        .embedder
        .expect_embed()
        .returning(|texts| Ok(texts.iter().map(|_| vec![0.6, 0.8]).collect()));
    let steps = Arc::new(Mutex::new(Vec::new()));
    let (deleted, upserted) = (steps.clone(), steps.clone());
    ports
        .index
        .expect_delete_file()
        .times(1)
        .returning(move |_, _| {
            deleted.lock().unwrap().push("delete");
            Ok(())
        });
    ports.index.expect_upsert().returning(move |_| {
        upserted.lock().unwrap().push("upsert");
        Ok(())
    });
    ports
        .files
        .expect_complete_job()
        .times(1)
        .returning(|_, _, _, _, _| Ok(true));
    let outcome = only(ports.processor().process_next().await.unwrap());
    assert_eq!(outcome, JobOutcome::Ready { chunks: 1 });
    assert_eq!(*steps.lock().unwrap(), ["delete", "upsert"]);
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
    let outcome = only(ports.processor().process_next().await.unwrap());
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
        let outcome = only(ports.processor().process_next().await.unwrap());
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
    let outcome = only(ports.processor().process_next().await.unwrap());
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
    let outcome = only(ports.processor().process_next().await.unwrap());
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
        // A later attempt first clears what an earlier one indexed; a failed file's entries
        // go too.
        ports.index.expect_delete_file().returning(|_, _| Ok(()));
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
            }
        }
        let outcome = only(ports.processor().process_next().await.unwrap());
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
    let outcome = only(ports.processor().process_next().await.unwrap());
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
    let outcome = only(ports.processor().process_next().await.unwrap());
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
    assert!(processor.process_next().await.unwrap().is_empty());
}

/// `count` chunks whose texts name `file`.
fn drafts_of(file: &str, count: usize) -> Vec<ChunkDraft> {
    let mut drafts = drafts(count);
    for draft in &mut drafts {
        draft.text = format!("{file} {}", draft.text);
    }
    drafts
}

/// Ports for a queue of `jobs`, each cut into the matching `cuts`, with an index that keeps
/// what it is given (each write as one entry).
fn ports_of_queue(
    jobs: &[ClaimedJob],
    cuts: Vec<Vec<ChunkDraft>>,
) -> (Ports, Arc<Mutex<Vec<Vec<tessera_knowledge::IndexedChunk>>>>) {
    let mut files = MockFileStore::new();
    let mut queue: Vec<ClaimedJob> = jobs.iter().rev().cloned().collect();
    files
        .expect_claim_job()
        .returning(move |_, _, _| Ok(queue.pop()));
    files
        .expect_report_progress()
        .returning(|_, _, _, _, _| Ok(true));
    files.expect_datasets_of().returning(|_, _| Ok(Vec::new()));
    let mut documents = MockDocumentProcessor::new();
    let mut cuts: Vec<Vec<ChunkDraft>> = cuts.into_iter().rev().collect();
    documents
        .expect_chunks()
        .returning(move |_, _, _, _| Ok(cuts.pop().unwrap()));
    let mut embedder = MockEmbedder::new();
    embedder
        .expect_model()
        .return_const("test-model".to_owned());
    let writes = Arc::new(Mutex::new(Vec::new()));
    let kept = writes.clone();
    let mut index = MockVectorIndex::new();
    index.expect_upsert().returning(move |chunks| {
        kept.lock().unwrap().push(chunks);
        Ok(())
    });
    let ports = Ports {
        files,
        documents,
        embedder,
        late_interaction: None,
        index,
    };
    (ports, writes)
}

impl Ports {
    /// The embedder answers `calls` calls (a vector for every text) and `completions` jobs
    /// complete.
    fn expect_embedded_and_completed(&mut self, calls: usize, completions: usize) {
        self.embedder
            .expect_embed()
            .times(calls)
            .returning(|texts| Ok(texts.iter().map(|_| vec![0.6, 0.8]).collect()));
        self.files
            .expect_complete_job()
            .times(completions)
            .returning(|_, _, _, _, _| Ok(true));
    }
}

fn job_of(format: FileFormat) -> ClaimedJob {
    let mut job = job(1);
    job.file.format = format;
    job
}

/// Each outcome's file id and outcome, in the order the round settled them.
fn settled(outcomes: Vec<(ClaimedJob, JobOutcome)>) -> Vec<(FileId, JobOutcome)> {
    outcomes
        .into_iter()
        .map(|(job, outcome)| (job.file.id, outcome))
        .collect()
}

#[tokio::test]
async fn small_files_share_one_embedding_call_and_one_index_write() {
    let jobs = [job(1), job(1), job(1)];
    let (mut ports, writes) = ports_of_queue(
        &jobs,
        vec![drafts_of("a", 1), drafts_of("b", 1), drafts_of("c", 1)],
    );
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = calls.clone();
    ports.embedder.expect_embed().returning(move |texts| {
        seen.lock().unwrap().push(texts.clone());
        Ok(texts.iter().map(|_| vec![0.6, 0.8]).collect())
    });
    let completed = Arc::new(Mutex::new(Vec::new()));
    let done = completed.clone();
    ports
        .files
        .expect_complete_job()
        .returning(move |_, chunks, _, _, ready| {
            done.lock()
                .unwrap()
                .push((ready.file.clone(), chunks.len()));
            Ok(true)
        });
    let processor = ports.processor();
    // The batch holds two chunks: the first round takes two files, the next the third.
    let first = settled(processor.process_next().await.unwrap());
    assert_eq!(
        first,
        vec![
            (jobs[0].file.id.clone(), JobOutcome::Ready { chunks: 1 }),
            (jobs[1].file.id.clone(), JobOutcome::Ready { chunks: 1 }),
        ]
    );
    assert_eq!(
        *calls.lock().unwrap(),
        vec![vec!["a chunk 0".to_owned(), "b chunk 0".to_owned()]]
    );
    {
        let writes = writes.lock().unwrap();
        assert_eq!(writes.len(), 1, "one index write for both files");
        let files: Vec<(&FileId, u32)> =
            writes[0].iter().map(|c| (&c.file_id, c.ordinal)).collect();
        assert_eq!(files, vec![(&jobs[0].file.id, 0), (&jobs[1].file.id, 0)]);
    }
    let second = settled(processor.process_next().await.unwrap());
    assert_eq!(
        second,
        vec![(jobs[2].file.id.clone(), JobOutcome::Ready { chunks: 1 })]
    );
    assert!(processor.process_next().await.unwrap().is_empty());
    assert_eq!(completed.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_file_split_over_batches_continues_after_the_one_it_shared_a_batch_with() {
    let jobs = [job(1), job(1)];
    // One chunk of "a", then "b"'s three: batches [a0, b0], [b1, b2].
    let (mut ports, writes) = ports_of_queue(&jobs, vec![drafts_of("a", 1), drafts_of("b", 3)]);
    ports.expect_embedded_and_completed(2, 2);
    let outcomes = settled(ports.processor().process_next().await.unwrap());
    assert_eq!(
        outcomes,
        vec![
            (jobs[0].file.id.clone(), JobOutcome::Ready { chunks: 1 }),
            (jobs[1].file.id.clone(), JobOutcome::Ready { chunks: 3 }),
        ]
    );
    let writes = writes.lock().unwrap();
    let ordinals: Vec<Vec<u32>> = writes
        .iter()
        .map(|write| write.iter().map(|c| c.ordinal).collect())
        .collect();
    assert_eq!(ordinals, vec![vec![0, 0], vec![1, 2]]);
}

#[tokio::test]
async fn a_text_the_model_refuses_in_a_shared_batch_fails_only_its_file() {
    let jobs = [job(1), job(1)];
    let (mut ports, writes) =
        ports_of_queue(&jobs, vec![drafts_of("good", 1), drafts_of("bad", 1)]);
    ports.embedder.expect_embed().times(3).returning(|texts| {
        if texts.iter().any(|text| text.starts_with("bad")) {
            Err(EmbedError::Invalid("a text the model cannot read".into()))
        } else {
            Ok(texts.iter().map(|_| vec![0.6, 0.8]).collect())
        }
    });
    let good = jobs[0].file.id.clone();
    ports
        .files
        .expect_complete_job()
        .withf(move |_, _, _, _, ready| ready.file == good)
        .times(1)
        .returning(|_, _, _, _, _| Ok(true));
    let bad = jobs[1].file.id.clone();
    ports
        .files
        .expect_fail_job()
        .withf(move |_, failed| failed.file == bad && failed.error.contains("cannot read"))
        .times(1)
        .returning(|_, _| Ok(true));
    ports
        .index
        .expect_delete_file()
        .times(1)
        .returning(|_, _| Ok(()));
    let outcomes = settled(ports.processor().process_next().await.unwrap());
    assert_eq!(
        outcomes[0],
        (jobs[0].file.id.clone(), JobOutcome::Ready { chunks: 1 })
    );
    assert_eq!(outcomes[1].0, jobs[1].file.id);
    assert!(
        matches!(outcomes[1].1, JobOutcome::Failed { .. }),
        "{outcomes:?}"
    );
    let writes = writes.lock().unwrap();
    assert_eq!(writes.len(), 1, "only the good file was written");
    assert!(
        writes[0]
            .iter()
            .all(|chunk| chunk.file_id == jobs[0].file.id)
    );
}

#[tokio::test]
async fn a_service_failure_in_a_shared_batch_retries_each_of_its_files() {
    let jobs = [job(1), job(1)];
    let (mut ports, writes) = ports_of_queue(&jobs, vec![drafts_of("a", 1), drafts_of("b", 1)]);
    ports
        .embedder
        .expect_embed()
        .times(1)
        .returning(|_| Err(EmbedError::Unavailable("busy".into())));
    ports
        .files
        .expect_retry_job()
        .times(2)
        .returning(|_, _, _, _| Ok(true));
    ports.files.expect_complete_job().never();
    let outcomes = settled(ports.processor().process_next().await.unwrap());
    assert_eq!(outcomes.len(), 2);
    assert!(
        outcomes
            .iter()
            .all(|(_, outcome)| matches!(outcome, JobOutcome::Retrying { .. })),
        "{outcomes:?}"
    );
    assert!(writes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_file_of_another_kind_claimed_after_a_small_one_runs_alone_after_the_round() {
    let jobs = [
        job_of(FileFormat::Txt),
        job_of(FileFormat::Pdf),
        job_of(FileFormat::Txt),
    ];
    let (mut ports, writes) = ports_of_queue(
        &jobs,
        vec![
            drafts_of("text", 1),
            drafts_of("pdf", 1),
            drafts_of("later", 1),
        ],
    );
    ports.expect_embedded_and_completed(2, 2);
    let outcomes = settled(ports.processor().process_next().await.unwrap());
    assert_eq!(
        outcomes,
        vec![
            (jobs[0].file.id.clone(), JobOutcome::Ready { chunks: 1 }),
            (jobs[1].file.id.clone(), JobOutcome::Ready { chunks: 1 }),
        ],
        "the PDF ends the round's claims; the third file waits for the next round"
    );
    let writes = writes.lock().unwrap();
    let files: Vec<Vec<&FileId>> = writes
        .iter()
        .map(|write| write.iter().map(|c| &c.file_id).collect())
        .collect();
    assert_eq!(files, vec![vec![&jobs[0].file.id], vec![&jobs[1].file.id]]);
}
