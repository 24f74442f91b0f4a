//! The index's generations: one building at a time, files behind one marked as their
//! vectors reach it, put in use only when none is behind, and one worker's lease.

use super::{Fixture, KnowledgeStores, at, audited, chunk, is_conflict};
use crate::{
    FileDeletion, FileId, FileReady, GenerationProgress, GenerationState, IndexGeneration,
    StoredFile,
};

/// Completes the processing of `file` with `chunks` chunks, embedded by `model` into
/// generation `number`.
async fn processed(f: &Fixture<'_>, file: &StoredFile, chunks: u32, model: &str, number: u32) {
    let job = f.files.claim_job("w", at(1), at(3)).await.unwrap().unwrap();
    assert_eq!(job.file.id, file.id);
    let chunks: Vec<_> = (0..chunks).map(|n| chunk(n, "text")).collect();
    let ready = FileReady::of(file, u32::try_from(chunks.len()).unwrap(), at(2));
    assert!(
        f.files
            .complete_job("w", &chunks, model, number, &ready)
            .await
            .unwrap()
    );
}

fn states(generations: &[IndexGeneration]) -> Vec<(u32, &str, GenerationState)> {
    generations
        .iter()
        .map(|g| (g.number, g.embedding_model.as_str(), g.state))
        .collect()
}

/// The first generation begun records the index in use as generation 0; beginning the same
/// model again answers the same generation; another model, or the one in use, is refused.
pub async fn generations_begin_once_per_model_and_one_builds_at_a_time(
    stores: &impl KnowledgeStores,
) {
    let f = Fixture::new(stores);
    assert_eq!(f.generations.generations().await.unwrap(), Vec::new());
    let building = f.generations.begin("bge", "minilm", at(5)).await.unwrap();
    assert_eq!(
        (building.number, building.state, building.created_at),
        (1, GenerationState::Building, at(5))
    );
    assert_eq!(building.activated_at, None);
    let again = f.generations.begin("bge", "minilm", at(6)).await.unwrap();
    assert_eq!(again, building);
    assert!(is_conflict(
        &f.generations.begin("e5", "minilm", at(7)).await
    ));
    let generations = f.generations.generations().await.unwrap();
    assert_eq!(
        states(&generations),
        vec![
            (0, "minilm", GenerationState::Active),
            (1, "bge", GenerationState::Building)
        ]
    );
    assert_eq!(generations[0].activated_at, Some(at(5)));
    // Nothing is behind an empty index: it is put in use at once.
    assert!(f.generations.activate(1, at(8)).await.unwrap());
    assert!(is_conflict(&f.generations.begin("bge", "bge", at(9)).await));
    assert!(is_conflict(&f.generations.activate(1, at(9)).await));
    let next = f.generations.begin("minilm", "bge", at(9)).await.unwrap();
    assert_eq!(next.number, 2);
}

/// Ready files with chunks, of every organization, are behind a generation until marked;
/// files without chunks and deleted files are not; the generation is put in use only with
/// none behind, which retires the one before and records its model for every ready file.
pub async fn files_behind_a_generation_are_marked_until_it_can_be_activated(
    stores: &impl KnowledgeStores,
) {
    let f = Fixture::new(stores);
    let (acme, globex) = (f.organization("Acme").await, f.organization("Globex").await);
    let a = f.file(&acme, "a.md", 'a').await;
    processed(&f, &a, 2, "minilm", 0).await;
    let b = f.file(&globex, "b.md", 'b').await;
    processed(&f, &b, 1, "minilm", 0).await;
    let empty = f.file(&acme, "empty.md", 'c').await;
    processed(&f, &empty, 0, "minilm", 0).await;
    let queued = f.file(&acme, "queued.md", 'd').await;
    let generation = f.generations.begin("bge", "minilm", at(5)).await.unwrap();
    let number = generation.number;
    let ids = |files: Vec<StoredFile>| files.into_iter().map(|f| f.id).collect::<Vec<_>>();
    assert_eq!(
        ids(f.generations.files_behind(number, 10).await.unwrap()),
        vec![a.id.clone(), b.id.clone()],
        "lowest id first"
    );
    assert_eq!(
        ids(f.generations.files_behind(number, 1).await.unwrap()),
        vec![a.id.clone()]
    );
    assert_eq!(
        f.generations.progress(number).await.unwrap(),
        GenerationProgress { done: 0, total: 2 }
    );
    assert!(f.generations.mark_indexed(&a.id, number).await.unwrap());
    assert!(
        !f.generations
            .mark_indexed(&queued.id, number)
            .await
            .unwrap()
    );
    assert!(
        !f.generations
            .mark_indexed(&FileId::generate(), number)
            .await
            .unwrap()
    );
    assert!(
        !f.generations.activate(number, at(6)).await.unwrap(),
        "b is behind"
    );
    assert_eq!(
        f.generations.generations().await.unwrap()[1].state,
        GenerationState::Building
    );
    // A file processed into the old generation meanwhile is behind too.
    processed(&f, &queued, 1, "minilm", 0).await;
    assert_eq!(
        ids(f.generations.files_behind(number, 10).await.unwrap()),
        vec![b.id.clone(), queued.id.clone()]
    );
    assert!(matches!(
        f.files
            .delete(&globex, &b.id, &audited(&globex))
            .await
            .unwrap(),
        FileDeletion::Deleted { .. }
    ));
    assert!(!f.generations.mark_indexed(&b.id, number).await.unwrap());
    assert!(
        f.generations
            .mark_indexed(&queued.id, number)
            .await
            .unwrap()
    );
    assert_eq!(
        f.generations.progress(number).await.unwrap(),
        GenerationProgress { done: 2, total: 2 }
    );
    assert!(f.generations.activate(number, at(7)).await.unwrap());
    let generations = f.generations.generations().await.unwrap();
    assert_eq!(
        states(&generations),
        vec![
            (0, "minilm", GenerationState::Retired),
            (1, "bge", GenerationState::Active)
        ]
    );
    assert_eq!(generations[1].activated_at, Some(at(7)));
    assert_eq!(
        f.files.embedding_models().await.unwrap(),
        vec![(Some("bge".into()), 2)]
    );
    // Processed into the generation in use: not behind it.
    let late = f.file(&acme, "late.md", 'e').await;
    processed(&f, &late, 1, "bge", number).await;
    assert_eq!(
        f.generations.files_behind(number, 10).await.unwrap(),
        Vec::new()
    );
}

/// A worker holds a generation's lease until it expires; it renews its own; another takes
/// it over only after; an unknown generation cannot be leased.
pub async fn a_generations_lease_is_one_workers_until_it_expires(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let number = f
        .generations
        .begin("bge", "minilm", at(0))
        .await
        .unwrap()
        .number;
    assert!(
        f.generations
            .claim(number, "w1", at(1), at(3))
            .await
            .unwrap()
    );
    assert!(
        !f.generations
            .claim(number, "w2", at(2), at(4))
            .await
            .unwrap()
    );
    assert!(
        f.generations
            .claim(number, "w1", at(2), at(5))
            .await
            .unwrap()
    );
    assert!(
        !f.generations
            .claim(number, "w2", at(4), at(6))
            .await
            .unwrap()
    );
    assert!(
        f.generations
            .claim(number, "w2", at(5), at(7))
            .await
            .unwrap()
    );
    assert!(
        !f.generations
            .claim(number, "w1", at(6), at(8))
            .await
            .unwrap()
    );
    assert!(!f.generations.claim(99, "w1", at(6), at(8)).await.unwrap());
}
