//! What a file is cut with, and a dataset's files listed by status: sizes a client asked for
//! read back, are taken only while no other dataset depends on the file's chunks, queue a
//! ready file to be cut again and take a job from the worker cutting it; a dataset's files of
//! one status come in full keyset pages.

use super::{Fixture, KnowledgeStores, at, audited, chunk, page, stored_file};
use crate::{ChunkingSettings, FileId, FileReady, FileStatus, Rechunking, StoredFile};

const SMALL: ChunkingSettings = ChunkingSettings {
    max_tokens: 100,
    overlap_tokens: 20,
};
const LARGE: ChunkingSettings = ChunkingSettings {
    max_tokens: 240,
    overlap_tokens: 0,
};

/// Claims the oldest due job at `minute` as `worker` and completes it with two chunks.
async fn process(f: &Fixture<'_>, worker: &str, minute: i64) -> StoredFile {
    let job = f
        .files
        .claim_job(worker, at(minute), at(minute + 2))
        .await
        .unwrap()
        .expect("a job is due");
    let chunks = [chunk(0, "first"), chunk(1, "second")];
    assert!(
        f.files
            .complete_job(
                worker,
                &chunks,
                "test-model",
                0,
                &FileReady::of(&job.file, 2, at(minute + 1))
            )
            .await
            .unwrap()
    );
    job.file
}

/// A file's sizes read back; asked for one dataset, they are recorded for a file not cut yet
/// (the next claim cuts with them), queue a ready file again (its chunks kept until then),
/// and are refused where another dataset holds the file cut otherwise, nothing changed.
pub async fn a_files_chunking_changes_only_where_no_other_dataset_depends_on_it(
    stores: &impl KnowledgeStores,
) {
    let f = Fixture::new(stores);
    let (acme, other) = (f.organization("Acme").await, f.organization("Globex").await);
    let (first, second) = (
        f.dataset(&acme, "First").await,
        f.dataset(&acme, "Second").await,
    );
    let set = |file: &FileId, dataset, chunking, minute| {
        let (files, acme) = (f.files.clone(), acme.clone());
        let (file, dataset): (FileId, crate::DatasetId) = (file.clone(), dataset);
        async move {
            files
                .set_chunking(
                    &acme,
                    &file,
                    &dataset,
                    chunking,
                    at(minute),
                    &audited(&acme),
                )
                .await
                .unwrap()
        }
    };

    // Stored with sizes, read back with them.
    let sized = StoredFile {
        chunking: Some(SMALL),
        ..stored_file(&acme, "sized.md", 's')
    };
    f.queue(&sized).await;
    assert_eq!(f.stored(&sized).await.chunking, Some(SMALL));

    // Not cut yet: recorded, and the claim cuts with them; asked again, nothing changes.
    let queued = f.file(&acme, "queued.md", 'q').await;
    assert_eq!(f.stored(&queued).await.chunking, None);
    assert_eq!(
        set(&queued.id, first.id.clone(), LARGE, 1).await,
        Some(Rechunking::Recorded)
    );
    assert_eq!(
        set(&queued.id, first.id.clone(), LARGE, 1).await,
        Some(Rechunking::Unchanged)
    );
    assert_eq!(
        f.files
            .set_chunking(
                &other,
                &queued.id,
                &first.id,
                SMALL,
                at(1),
                &audited(&other)
            )
            .await
            .unwrap(),
        None,
        "another organization's file"
    );
    assert_eq!(
        (
            f.stored(&queued).await.chunking,
            f.stored(&queued).await.status
        ),
        (Some(LARGE), FileStatus::Processing)
    );
    let sized_done = process(&f, "w1", 2).await;
    assert_eq!(sized_done.chunking, Some(SMALL));
    let queued_done = process(&f, "w1", 4).await;
    assert_eq!(
        (queued_done.id.clone(), queued_done.chunking),
        (queued.id.clone(), Some(LARGE))
    );

    // Ready with chunks, in this dataset only: queued again, processing until cut.
    f.datasets
        .add_file(&acme, &first.id, &queued.id, at(6), &audited(&acme))
        .await
        .unwrap();
    assert_eq!(
        set(&queued.id, first.id.clone(), SMALL, 7).await,
        Some(Rechunking::Requeued)
    );
    let requeued = f.stored(&queued).await;
    assert_eq!(
        (
            requeued.status,
            requeued.progress,
            requeued.chunking,
            requeued.updated_at
        ),
        (FileStatus::Processing, 0, Some(SMALL), at(7))
    );
    assert_eq!(
        f.files.chunks(&acme, &queued.id).await.unwrap().len(),
        2,
        "its chunks stay until it is cut again"
    );
    let job = f
        .files
        .claim_job("w2", at(7), at(9))
        .await
        .unwrap()
        .expect("queued again");
    assert_eq!(
        (job.file.id.clone(), job.file.chunking, job.attempt),
        (queued.id.clone(), Some(SMALL), 1)
    );
    assert!(
        f.files
            .complete_job("w2", &[chunk(0, "one")], "test-model", 0, &{
                FileReady::of(&job.file, 1, at(8))
            })
            .await
            .unwrap()
    );
    assert_eq!(
        (
            f.stored(&queued).await.status,
            f.stored(&queued).await.chunk_count
        ),
        (FileStatus::Ready, 1)
    );

    // Held by another dataset, cut otherwise: refused, nothing changed.
    assert_eq!(
        set(&queued.id, second.id.clone(), LARGE, 9).await,
        Some(Rechunking::CutElsewhere)
    );
    let kept = f.stored(&queued).await;
    assert_eq!(
        (kept.status, kept.chunking, kept.updated_at),
        (FileStatus::Ready, Some(SMALL), at(8))
    );
    assert_eq!(
        f.files.claim_job("w2", at(20), at(22)).await.unwrap(),
        None,
        "nothing queued"
    );
    // The same sizes for the other dataset: nothing to change.
    assert_eq!(
        set(&queued.id, second.id.clone(), SMALL, 9).await,
        Some(Rechunking::Unchanged)
    );

    // Not processed yet and nobody asked before: the other dataset's file takes the sizes;
    // once asked, they are kept for it.
    let open = f.file(&acme, "open.md", 'o').await;
    f.datasets
        .add_file(&acme, &first.id, &open.id, at(10), &audited(&acme))
        .await
        .unwrap();
    assert_eq!(
        set(&open.id, second.id.clone(), LARGE, 10).await,
        Some(Rechunking::Recorded)
    );
    let third = f.dataset(&acme, "Third").await;
    assert_eq!(
        set(&open.id, third.id.clone(), SMALL, 10).await,
        Some(Rechunking::CutElsewhere)
    );
    assert_eq!(f.stored(&open).await.chunking, Some(LARGE));
}

/// A worker cutting a file whose sizes change loses its job, which runs again, with the new
/// sizes, once the worker's lease would have ended.
pub async fn new_sizes_take_the_job_from_the_worker_cutting_the_file(
    stores: &impl KnowledgeStores,
) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let dataset = f.dataset(&acme, "Handbook").await;
    let file = f.file(&acme, "a.md", 'a').await;
    let job = f
        .files
        .claim_job("w1", at(1), at(10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(job.file.chunking, None);
    assert_eq!(
        f.files
            .set_chunking(&acme, &file.id, &dataset.id, SMALL, at(2), &audited(&acme))
            .await
            .unwrap(),
        Some(Rechunking::Recorded)
    );
    assert!(
        !f.files
            .report_progress(&file.id, "w1", 50, at(3), at(12))
            .await
            .unwrap(),
        "the lease is gone"
    );
    assert!(
        !f.files
            .complete_job(
                "w1",
                &[chunk(0, "old")],
                "test-model",
                0,
                &FileReady::of(&file, 1, at(3))
            )
            .await
            .unwrap(),
        "what it cut is not stored"
    );
    assert_eq!(f.stored(&file).await.status, FileStatus::Processing);
    assert_eq!(
        f.files.claim_job("w2", at(5), at(7)).await.unwrap(),
        None,
        "not before the lease would have ended"
    );
    let again = f
        .files
        .claim_job("w2", at(10), at(12))
        .await
        .unwrap()
        .expect("due again");
    assert_eq!(
        (again.file.id, again.file.chunking, again.attempt),
        (file.id.clone(), Some(SMALL), 2)
    );
}

/// A dataset's files of one status, newest first in keyset pages of one over the limit:
/// filtered before the page is taken, so pages are full, and `after` may name a file of
/// another status.
pub async fn a_datasets_files_list_by_status_in_full_pages(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let dataset = f.dataset(&acme, "Handbook").await;
    let mut files = Vec::new();
    for (name, sha, status) in [
        ("r1.md", 'a', FileStatus::Ready),
        ("p1.md", 'b', FileStatus::Processing),
        ("r2.md", 'c', FileStatus::Ready),
        ("f1.md", 'd', FileStatus::Failed),
        ("p2.md", 'e', FileStatus::Processing),
        ("r3.md", 'f', FileStatus::Ready),
    ] {
        let file = StoredFile {
            status,
            ..stored_file(&acme, name, sha)
        };
        f.files
            .insert(
                &file,
                status == FileStatus::Processing,
                None,
                &audited(&acme),
            )
            .await
            .unwrap();
        f.datasets
            .add_file(&acme, &dataset.id, &file.id, at(1), &audited(&acme))
            .await
            .unwrap();
        files.push(file.id);
    }
    let [r1, p1, r2, f1, p2, r3] = <[FileId; 6]>::try_from(files).unwrap();
    let listed = |status, limit, after: Option<&FileId>| {
        let (datasets, acme, dataset) = (f.datasets.clone(), acme.clone(), dataset.id.clone());
        let after = after.cloned();
        async move {
            (datasets
                .files(&acme, &dataset, status, &page(limit, after))
                .await)
                .unwrap()
                .into_iter()
                .map(|entry| entry.file.id)
                .collect::<Vec<FileId>>()
        }
    };
    assert_eq!(
        listed(Some(FileStatus::Ready), 1, None).await,
        [r3.clone(), r2.clone()]
    );
    assert_eq!(
        listed(Some(FileStatus::Ready), 1, Some(&r2)).await,
        std::slice::from_ref(&r1)
    );
    assert_eq!(
        listed(Some(FileStatus::Ready), 5, Some(&p2)).await,
        [r2.clone(), r1.clone()],
        "after a file of another status"
    );
    assert_eq!(
        listed(Some(FileStatus::Processing), 5, None).await,
        [p2.clone(), p1.clone()]
    );
    assert_eq!(
        listed(Some(FileStatus::Failed), 5, None).await,
        std::slice::from_ref(&f1)
    );
    assert_eq!(
        listed(None, 10, None).await,
        [r3, p2, f1, r2, p1, r1],
        "every status"
    );
}
