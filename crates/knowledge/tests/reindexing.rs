//! Re-embedding into a new generation of the index, over the in-memory reference store: the
//! vectors come from the stored chunks with the current datasets, each file is recorded once
//! written, the generation is put in use when none is behind, a file deleted or a dataset
//! changed meanwhile is not left stale, and a lease held elsewhere is respected.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use futures_util::FutureExt;
use tessera_kernel::ManualClock;
use tessera_knowledge::{
    DatasetStore, FileReady, FileStore, GenerationProgress, GenerationState, GenerationTarget,
    IndexedChunk, MockEmbedder, MockVectorIndex, ReindexRound, ReindexSettings, Reindexer,
    StoredFile,
    contract::{Fixture, at, audited, chunk},
    memory::InMemoryKnowledgeStore,
};

/// Stores `file` processed into generation 0 by all-MiniLM-L6-v2, with `chunks` chunks.
async fn processed(f: &Fixture<'_>, file: &StoredFile, chunks: u32) {
    let job = f.files.claim_job("w", at(1), at(3)).await.unwrap().unwrap();
    assert_eq!(job.file.id, file.id);
    let chunks: Vec<_> = (0..chunks)
        .map(|n| chunk(n, &format!("{} part {n}", file.name)))
        .collect();
    let ready = FileReady::of(file, u32::try_from(chunks.len()).unwrap(), at(2));
    assert!(
        f.files
            .complete_job("w", &chunks, "minilm", 0, &ready)
            .await
            .unwrap()
    );
}

/// An embedder of "bge" whose vectors say how long each text is.
fn embedder() -> MockEmbedder {
    let mut embedder = MockEmbedder::new();
    embedder.expect_model().return_const("bge".to_owned());
    embedder.expect_dimensions().return_const(2_usize);
    embedder.expect_embed().returning(|texts| {
        Ok(texts
            .iter()
            .map(|text| vec![text.len() as f32, 1.0])
            .collect())
    });
    embedder
}

/// An index that keeps what is written to it.
fn recording_index(upserts: &Arc<Mutex<Vec<IndexedChunk>>>) -> MockVectorIndex {
    let mut index = MockVectorIndex::new();
    let kept = upserts.clone();
    index.expect_upsert().returning(move |chunks| {
        kept.lock().unwrap().extend(chunks);
        Ok(())
    });
    index
}

fn reindexer(
    store: &Arc<InMemoryKnowledgeStore>,
    number: u32,
    embedder: MockEmbedder,
    index: MockVectorIndex,
    worker: &str,
) -> Reindexer {
    Reindexer::new(
        store.clone(),
        store.clone(),
        GenerationTarget {
            number,
            embedder: Arc::new(embedder),
            late_interaction: None,
            index: Arc::new(index),
            building: true,
        },
        Arc::new(ManualClock::new(at(10))),
        ReindexSettings {
            lease: Duration::from_secs(60),
            files_per_round: 2,
            embed_batch: 2,
        },
        worker,
    )
}

#[tokio::test]
async fn files_are_reembedded_from_their_chunks_and_the_generation_put_in_use() {
    let store = Arc::new(InMemoryKnowledgeStore::new());
    let f = Fixture::new(&store);
    let acme = f.organization("Acme").await;
    let dataset = f.dataset(&acme, "Handbooks").await;
    let mut files = Vec::new();
    for (name, chunks) in [("a.md", 3), ("b.md", 1), ("c.md", 2)] {
        let file = f.file(&acme, name, 'a').await;
        processed(&f, &file, chunks).await;
        files.push(file);
    }
    f.datasets
        .add_file(&acme, &dataset.id, &files[0].id, at(3), &audited(&acme))
        .await
        .unwrap();
    let number = f
        .generations
        .begin("bge", "minilm", at(4))
        .await
        .unwrap()
        .number;
    let upserts = Arc::new(Mutex::new(Vec::new()));
    let reindexer = reindexer(&store, number, embedder(), recording_index(&upserts), "w1");

    assert_eq!(reindexer.round().await.unwrap(), ReindexRound::Reindexed(2));
    assert_eq!(
        f.generations.progress(number).await.unwrap(),
        GenerationProgress { done: 2, total: 3 }
    );
    assert_eq!(reindexer.round().await.unwrap(), ReindexRound::Reindexed(1));
    assert_eq!(
        reindexer.round().await.unwrap(),
        ReindexRound::Done { activated: true }
    );
    assert_eq!(
        reindexer.round().await.unwrap(),
        ReindexRound::Done { activated: false },
        "in use, it is only caught up"
    );
    let written = upserts.lock().unwrap().clone();
    let keys: Vec<(String, u32)> = written
        .iter()
        .map(|c| (c.file_id.to_string(), c.ordinal))
        .collect();
    let mut expected = Vec::new();
    for (file, chunks) in files.iter().zip([3, 1, 2]) {
        expected.extend((0..chunks).map(|n| (file.id.to_string(), n)));
    }
    assert_eq!(keys, expected, "every stored chunk once, in order");
    for chunk in &written {
        assert_eq!(chunk.dense, vec![chunk.text.len() as f32, 1.0]);
        let stored = &store
            .chunks(&acme, &chunk.file_id)
            .now_or_never()
            .unwrap()
            .unwrap()[chunk.ordinal as usize];
        assert_eq!(
            (&chunk.text, &chunk.location),
            (&stored.text, &stored.location)
        );
        let in_dataset = chunk.file_id == files[0].id;
        assert_eq!(chunk.datasets.contains(&dataset.id), in_dataset);
    }
    let states: Vec<_> = f
        .generations
        .generations()
        .await
        .unwrap()
        .into_iter()
        .map(|g| (g.number, g.state))
        .collect();
    assert_eq!(
        states,
        vec![(0, GenerationState::Retired), (1, GenerationState::Active)]
    );
    assert_eq!(
        f.files.embedding_models().await.unwrap(),
        vec![(Some("bge".into()), 3)]
    );
}

#[tokio::test]
async fn a_file_deleted_while_it_is_reembedded_is_removed_from_the_new_generation() {
    let store = Arc::new(InMemoryKnowledgeStore::new());
    let f = Fixture::new(&store);
    let acme = f.organization("Acme").await;
    let file = f.file(&acme, "gone.md", 'a').await;
    processed(&f, &file, 1).await;
    let number = f
        .generations
        .begin("bge", "minilm", at(4))
        .await
        .unwrap()
        .number;
    let mut embedder = MockEmbedder::new();
    let (deleting, organization, id) = (store.clone(), acme.clone(), file.id.clone());
    embedder.expect_embed().returning(move |texts| {
        // The owner deletes the file while its vectors are computed.
        FileStore::delete(&*deleting, &organization, &id, &audited(&organization))
            .now_or_never()
            .unwrap()
            .unwrap();
        Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
    });
    let upserts = Arc::new(Mutex::new(Vec::new()));
    let mut index = recording_index(&upserts);
    let deleted = file.id.clone();
    index
        .expect_delete_file()
        .withf(move |_, id| *id == deleted)
        .times(1)
        .returning(|_, _| Ok(()));
    let reindexer = reindexer(&store, number, embedder, index, "w1");
    assert_eq!(reindexer.round().await.unwrap(), ReindexRound::Reindexed(1));
    assert_eq!(upserts.lock().unwrap().len(), 1);
    assert_eq!(
        reindexer.round().await.unwrap(),
        ReindexRound::Done { activated: true }
    );
}

#[tokio::test]
async fn a_dataset_change_made_while_a_file_is_reembedded_is_written_after_its_vectors() {
    let store = Arc::new(InMemoryKnowledgeStore::new());
    let f = Fixture::new(&store);
    let acme = f.organization("Acme").await;
    let dataset = f.dataset(&acme, "Handbooks").await;
    let file = f.file(&acme, "moved.md", 'a').await;
    processed(&f, &file, 1).await;
    let number = f
        .generations
        .begin("bge", "minilm", at(4))
        .await
        .unwrap()
        .number;
    let mut embedder = MockEmbedder::new();
    let (datasets, organization, id, added) = (
        store.clone(),
        acme.clone(),
        file.id.clone(),
        dataset.id.clone(),
    );
    embedder.expect_embed().returning(move |texts| {
        datasets
            .add_file(&organization, &added, &id, at(5), &audited(&organization))
            .now_or_never()
            .unwrap()
            .unwrap();
        Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
    });
    let upserts = Arc::new(Mutex::new(Vec::new()));
    let mut index = recording_index(&upserts);
    let now_in = vec![dataset.id.clone()];
    index
        .expect_set_datasets()
        .withf(move |_, _, datasets| *datasets == now_in)
        .times(1)
        .returning(|_, _, _| Ok(()));
    let reindexer = reindexer(&store, number, embedder, index, "w1");
    assert_eq!(reindexer.round().await.unwrap(), ReindexRound::Reindexed(1));
    assert!(upserts.lock().unwrap()[0].datasets.is_empty());
}

#[tokio::test]
async fn another_process_holding_the_lease_is_left_to_it() {
    let store = Arc::new(InMemoryKnowledgeStore::new());
    let f = Fixture::new(&store);
    let acme = f.organization("Acme").await;
    let file = f.file(&acme, "a.md", 'a').await;
    processed(&f, &file, 1).await;
    let number = f
        .generations
        .begin("bge", "minilm", at(4))
        .await
        .unwrap()
        .number;
    assert!(
        f.generations
            .claim(number, "elsewhere", at(9), at(20))
            .await
            .unwrap()
    );
    let mut embedder = MockEmbedder::new();
    embedder.expect_embed().never();
    let reindexer = reindexer(&store, number, embedder, MockVectorIndex::new(), "w1");
    assert_eq!(reindexer.round().await.unwrap(), ReindexRound::Elsewhere);
    assert_eq!(
        f.generations.progress(number).await.unwrap(),
        GenerationProgress { done: 0, total: 1 }
    );
}
