//! The processing queue: claims under leases, progress, completion, retries, failure, a
//! crashed worker's job taken over, and concurrent workers.

use std::collections::HashSet;

use super::{Fixture, KnowledgeStores, at, audited, chunk, stored_file};
use crate::{FileFailed, FileReady, FileStatus, StoredFile};

pub async fn jobs_are_claimed_once_processed_and_completed(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let file = f.file(&acme, "a.md", 'a').await;
    let job = f
        .files
        .claim_job("w1", at(1), at(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((job.file.id.clone(), job.attempt), (file.id.clone(), 1));
    assert_eq!(
        f.files.claim_job("w2", at(2), at(4)).await.unwrap(),
        None,
        "leased"
    );
    assert!(
        f.files
            .report_progress(&file.id, "w1", 40, at(2), at(5))
            .await
            .unwrap()
    );
    assert!(
        !f.files
            .report_progress(&file.id, "w2", 50, at(2), at(5))
            .await
            .unwrap()
    );
    assert_eq!(f.stored(&file).await.progress, 40);
    let chunks = vec![chunk(0, "first"), chunk(1, "second")];
    assert!(
        !f.files
            .complete_job(
                "w2",
                &chunks,
                "test-model",
                0,
                &FileReady::of(&file, u32::try_from(chunks.len()).unwrap(), at(3))
            )
            .await
            .unwrap()
    );
    assert!(
        f.files
            .complete_job(
                "w1",
                &chunks,
                "test-model",
                0,
                &FileReady::of(&file, u32::try_from(chunks.len()).unwrap(), at(3))
            )
            .await
            .unwrap()
    );
    let done = f.stored(&file).await;
    assert_eq!(
        (
            done.status,
            done.progress,
            done.chunk_count,
            done.updated_at
        ),
        (FileStatus::Ready, 100, 2, at(3))
    );
    assert_eq!(f.files.chunks(&acme, &file.id).await.unwrap(), chunks);
    let other = f.organization("Globex").await;
    assert!(f.files.chunks(&other, &file.id).await.unwrap().is_empty());
    assert_eq!(
        f.files.claim_job("w1", at(10), at(12)).await.unwrap(),
        None,
        "job gone"
    );
}

/// Due jobs are claimed oldest first (by when they may run, the file's creation for a new
/// job); a job not yet due, and a file stored without a job, are not claimed.
/// Each completed file records the embedding model of its vectors, counted across
/// organizations; files with no chunks hold no vectors and are not counted; files from
/// before models were recorded count as `None` until a model is adopted for them, which
/// leaves recorded ones alone; a deleted file no longer counts.
pub async fn embedding_models_are_recorded_counted_and_adopted(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    assert_eq!(f.files.embedding_models().await.unwrap(), Vec::new());
    assert_eq!(f.files.adopt_embedding_model("m").await.unwrap(), 0);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let mut completed = Vec::new();
    for (i, (organization, model, chunks)) in [
        (&acme, "bge", 2),
        (&globex, "bge", 1),
        (&acme, "minilm", 1),
        (&acme, "bge", 0),
    ]
    .into_iter()
    .enumerate()
    {
        let file = f.file(organization, &format!("{i}.md"), 'a').await;
        let job = f.files.claim_job("w", at(1), at(3)).await.unwrap().unwrap();
        assert_eq!(job.file.id, file.id);
        let chunks: Vec<_> = (0..chunks).map(|n| chunk(n, "text")).collect();
        let ready = FileReady::of(&file, u32::try_from(chunks.len()).unwrap(), at(2));
        assert!(
            f.files
                .complete_job("w", &chunks, model, 0, &ready)
                .await
                .unwrap()
        );
        completed.push(file);
    }
    assert_eq!(
        f.files.embedding_models().await.unwrap(),
        vec![(Some("bge".into()), 2), (Some("minilm".into()), 1)]
    );
    assert_eq!(f.files.adopt_embedding_model("other").await.unwrap(), 0);
    assert!(matches!(
        f.files
            .delete(&acme, &completed[2].id, &audited(&acme))
            .await
            .unwrap(),
        crate::FileDeletion::Deleted { .. }
    ));
    assert_eq!(
        f.files.embedding_models().await.unwrap(),
        vec![(Some("bge".into()), 2)]
    );
}

pub async fn the_oldest_due_job_is_claimed_first(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let created = |name: &str, sha: char, minutes: i64| StoredFile {
        created_at: at(minutes),
        updated_at: at(minutes),
        ..stored_file(&acme, name, sha)
    };
    // Made (so ordered by id) in the opposite order of their creation times.
    let later = created("later.md", 'l', 2);
    let earlier = created("earlier.md", 'e', 1);
    let future = created("future.md", 'f', 10);
    let unqueued = created("unqueued.md", 'u', 0);
    for file in [&later, &earlier, &future] {
        f.queue(file).await;
    }
    f.files
        .insert(&unqueued, false, None, &audited(&acme))
        .await
        .unwrap();

    let mut claimed = Vec::new();
    for worker in ["w1", "w2", "w3"] {
        let job = f.files.claim_job(worker, at(3), at(30)).await.unwrap();
        claimed.push(job.map(|job| (job.file.name, job.attempt)));
    }
    assert_eq!(
        claimed,
        [
            Some(("earlier.md".to_owned(), 1)),
            Some(("later.md".to_owned(), 1)),
            None
        ]
    );
    let job = f
        .files
        .claim_job("w3", at(10), at(30))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(job.file, future);
    assert_eq!(f.files.claim_job("w4", at(20), at(30)).await.unwrap(), None);
}

pub async fn a_crashed_workers_job_is_taken_over_when_its_lease_expires(
    stores: &impl KnowledgeStores,
) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let file = f.file(&acme, "a.md", 'a').await;
    f.files
        .claim_job("crashed", at(1), at(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(f.files.claim_job("w2", at(2), at(4)).await.unwrap(), None);
    let job = f
        .files
        .claim_job("w2", at(3), at(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((job.file.id.clone(), job.attempt), (file.id.clone(), 2));
    // The crashed worker comes back: its lease is gone, so nothing it writes lands.
    assert!(
        !f.files
            .complete_job(
                "crashed",
                &[chunk(0, "x")],
                "test-model",
                0,
                &FileReady::of(&file, 1, at(4))
            )
            .await
            .unwrap()
    );
    assert!(
        !f.files
            .fail_job("crashed", &FileFailed::of(&file, "late", at(4)))
            .await
            .unwrap()
    );
    assert!(
        f.files
            .complete_job(
                "w2",
                &[chunk(0, "y")],
                "test-model",
                0,
                &FileReady::of(&file, 1, at(4))
            )
            .await
            .unwrap()
    );
    assert_eq!(
        f.files.chunks(&acme, &file.id).await.unwrap(),
        vec![chunk(0, "y")]
    );
}

pub async fn retried_jobs_wait_and_failed_jobs_end_failed(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let file = f.file(&acme, "a.md", 'a').await;
    f.files
        .claim_job("w1", at(1), at(3))
        .await
        .unwrap()
        .unwrap();
    assert!(
        f.files
            .retry_job(&file.id, "w1", "embedder down", at(10))
            .await
            .unwrap()
    );
    assert_eq!(
        f.files.claim_job("w1", at(9), at(11)).await.unwrap(),
        None,
        "not yet due"
    );
    let job = f
        .files
        .claim_job("w1", at(10), at(12))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(job.attempt, 2);
    assert!(
        f.files
            .fail_job(
                "w1",
                &FileFailed::of(&file, "the document is encrypted", at(11))
            )
            .await
            .unwrap()
    );
    let failed = f.stored(&file).await;
    assert_eq!(failed.status, FileStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("the document is encrypted"));
    assert_eq!(f.files.claim_job("w1", at(20), at(22)).await.unwrap(), None);
}

pub async fn concurrent_workers_never_share_a_job(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let mut queued = HashSet::new();
    for index in 0..12 {
        let sha = char::from(b'a' + index);
        queued.insert(f.file(&acme, &format!("f{index}.txt"), sha).await.id);
    }
    let mut workers = Vec::new();
    for worker in 0..4 {
        let files = f.files.clone();
        workers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(job) = files
                .claim_job(&format!("w{worker}"), at(1), at(30))
                .await
                .unwrap()
            {
                mine.push(job.file.id);
            }
            mine
        }));
    }
    let mut claimed = Vec::new();
    for worker in workers {
        claimed.extend(worker.await.unwrap());
    }
    assert_eq!(
        claimed.len(),
        12,
        "every job claimed exactly once: {claimed:?}"
    );
    assert_eq!(claimed.into_iter().collect::<HashSet<_>>(), queued);
}
