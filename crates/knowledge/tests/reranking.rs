//! Search's reranking stage against mocked ports: the cross-encoder reads more candidates
//! than are returned and its order wins; `rerank: false` skips it; `true` without one is a
//! located validation error; a failing or miscounting model never returns a half-ordered
//! list; a file deleted since it was indexed is skipped without shifting the scores.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::Utc;
use tessera_kernel::{Caller, CursorCodec, DomainError, ManualClock, OrganizationId};
use tessera_knowledge::{
    ChunkLocation, Dataset, DatasetId, DatasetService, FileFormat, FileId, FileStatus,
    MockDatasetStore, MockEmbedder, MockFileStore, MockReranker, MockVectorIndex, RerankError,
    Reranking, ScoredChunk, SearchMode, SearchRequest, StoredFile,
};

fn caller() -> Caller {
    Caller::operator(OrganizationId::generate(), "user-1")
}

fn dataset(caller: &Caller) -> Dataset {
    Dataset {
        id: DatasetId::generate(),
        organization: caller.organization().clone(),
        name: "Cities".into(),
        description: None,
        version: 1,
        file_count: 5,
        late_interaction: false,
        created_by: "user-1".into(),
        created_at: Utc::now(),
        updated_at: Utc::now(),
        metadata: Default::default(),
        expires_after_days: None,
        last_active_at: Utc::now(),
    }
}

fn file(id: &FileId, caller: &Caller) -> StoredFile {
    StoredFile {
        id: id.clone(),
        organization: caller.organization().clone(),
        created_by: "user-1".into(),
        name: format!("{id}.txt"),
        format: FileFormat::Txt,
        size: 10,
        sha256: "0".repeat(64),
        status: FileStatus::Ready,
        progress: 100,
        error: None,
        chunk_count: 1,
        created_at: Utc::now(),
        updated_at: Utc::now(),
        purpose: None,
        chunking: None,
    }
}

/// Five fused candidates, best first, one chunk per file.
fn candidates() -> Vec<ScoredChunk> {
    (0..5)
        .map(|i| ScoredChunk {
            file_id: FileId::generate(),
            ordinal: 0,
            score: 1.0 / (i as f32 + 1.0),
            text: format!("passage {i}"),
            location: ChunkLocation {
                page: None,
                section: None,
                char_start: 0,
                char_end: 9,
            },
        })
        .collect()
}

/// A service over mocks: the index answers `found` (and checks how many were asked for),
/// `deleted` files are gone from the store.
fn service(
    caller: &Caller,
    found: Vec<ScoredChunk>,
    expected_limit: usize,
    deleted: Vec<FileId>,
) -> DatasetService {
    let mut datasets = MockDatasetStore::new();
    let record = dataset(caller);
    datasets
        .expect_get()
        .returning(move |_, _| Ok(Some(record.clone())));
    let mut files = MockFileStore::new();
    let owner = caller.clone();
    files
        .expect_get()
        .returning(move |_, id| Ok((!deleted.contains(id)).then(|| file(id, &owner))));
    let mut embedder = MockEmbedder::new();
    embedder
        .expect_embed_query()
        .returning(|_| Ok(vec![1.0, 0.0]));
    let mut index = MockVectorIndex::new();
    index.expect_search().returning(move |query| {
        assert_eq!(query.limit, expected_limit, "candidates asked of the index");
        Ok(found.clone())
    });
    DatasetService::new(
        Arc::new(datasets),
        Arc::new(files),
        Arc::new(embedder),
        Arc::new(index),
        Arc::new(ManualClock::new(Utc::now())),
        CursorCodec::new([7; 32]),
    )
}

/// A model that scores passage `i` as `scores[i]`.
fn reranker(scores: Vec<f32>) -> Reranking {
    let mut model = MockReranker::new();
    model
        .expect_model()
        .return_const("cross-encoder".to_owned());
    model.expect_score().returning(move |query, passages| {
        assert_eq!(query, "who lives here?");
        Ok(passages
            .iter()
            .map(|p| scores[p.trim_start_matches("passage ").parse::<usize>().unwrap()])
            .collect())
    });
    Reranking {
        reranker: Arc::new(model),
        candidates: 4,
        by_default: true,
    }
}

fn request(limit: usize, rerank: Option<bool>) -> SearchRequest {
    SearchRequest {
        query: " who lives here? ".into(),
        limit,
        version: None,
        files: None,
        mode: SearchMode::Hybrid,
        rerank,
        late_interaction: None,
    }
}

fn texts(hits: &[tessera_knowledge::SearchHit]) -> Vec<&str> {
    hits.iter().map(|hit| hit.chunk.text.as_str()).collect()
}

#[tokio::test]
async fn the_cross_encoder_reads_more_candidates_and_its_order_wins() {
    let caller = caller();
    let found = candidates();
    let service = service(&caller, found[..4].to_vec(), 4, Vec::new())
        .with_reranking(reranker(vec![0.1, 0.2, 0.9, 0.2, 0.0]));
    assert_eq!(service.reranker(), Some("cross-encoder"));
    let dataset = DatasetId::generate();
    let hits = service
        .search(&caller, &dataset, request(2, None))
        .await
        .unwrap();
    // Passage 2 first; 1 and 3 tie at 0.2, and the fused order breaks the tie.
    assert_eq!(texts(&hits), ["passage 2", "passage 1"]);
    assert_eq!(
        hits.iter().map(|h| h.relevance).collect::<Vec<_>>(),
        [Some(0.9), Some(0.2)]
    );
    // The fused score is kept.
    assert_eq!(hits[0].chunk.score, found[2].score);
}

#[tokio::test]
async fn rerank_false_keeps_the_fused_order_and_asks_for_the_limit_only() {
    let caller = caller();
    let found = candidates();
    let service = service(&caller, found[..2].to_vec(), 2, Vec::new())
        .with_reranking(reranker(vec![0.0, 0.0, 1.0, 0.0, 0.0]));
    let hits = service
        .search(&caller, &DatasetId::generate(), request(2, Some(false)))
        .await
        .unwrap();
    assert_eq!(texts(&hits), ["passage 0", "passage 1"]);
    assert!(hits.iter().all(|hit| hit.relevance.is_none()));
}

/// A stage that does not rerank by default (the server's default, decision 0047): a search
/// that does not say keeps the fused order and asks for its limit only; `rerank: true`
/// reranks.
#[tokio::test]
async fn a_stage_off_by_default_reranks_only_when_asked() {
    let caller = caller();
    let found = candidates();
    let stage = Reranking {
        by_default: false,
        ..reranker(vec![0.1, 0.2, 0.9, 0.2, 0.0])
    };
    let unasked =
        service(&caller, found[..2].to_vec(), 2, Vec::new()).with_reranking(stage.clone());
    let hits = unasked
        .search(&caller, &DatasetId::generate(), request(2, None))
        .await
        .unwrap();
    assert_eq!(texts(&hits), ["passage 0", "passage 1"]);
    assert!(hits.iter().all(|hit| hit.relevance.is_none()));

    let asked = service(&caller, found[..4].to_vec(), 4, Vec::new()).with_reranking(stage);
    let hits = asked
        .search(&caller, &DatasetId::generate(), request(2, Some(true)))
        .await
        .unwrap();
    assert_eq!(texts(&hits), ["passage 2", "passage 1"]);
    assert_eq!(hits[0].relevance, Some(0.9));
}

#[tokio::test]
async fn rerank_true_without_a_model_is_a_located_validation_error() {
    let caller = caller();
    let service = service(&caller, candidates(), 10, Vec::new());
    assert_eq!(service.reranker(), None);
    let error = service
        .search(&caller, &DatasetId::generate(), request(10, Some(true)))
        .await
        .unwrap_err();
    let DomainError::Validation(errors) = error else {
        panic!("{error:?}");
    };
    assert_eq!(errors[0].loc, vec!["body".into(), "rerank".into()]);
    // Without a model, the default searches as before.
    let hits = service
        .search(&caller, &DatasetId::generate(), request(10, None))
        .await
        .unwrap();
    assert_eq!(hits.len(), 5);
}

#[tokio::test]
async fn a_deleted_file_is_skipped_without_shifting_the_scores() {
    let caller = caller();
    let found = candidates();
    let deleted = vec![found[2].file_id.clone()];
    let service = service(&caller, found[..4].to_vec(), 4, deleted)
        .with_reranking(reranker(vec![0.1, 0.5, 0.9, 0.3, 0.0]));
    let hits = service
        .search(&caller, &DatasetId::generate(), request(2, None))
        .await
        .unwrap();
    assert_eq!(texts(&hits), ["passage 1", "passage 3"]);
    assert_eq!(
        hits.iter().map(|h| h.relevance).collect::<Vec<_>>(),
        [Some(0.5), Some(0.3)]
    );
}

#[tokio::test]
async fn a_failing_or_miscounting_model_fails_the_search() {
    let caller = caller();
    let mut failing = MockReranker::new();
    failing
        .expect_score()
        .returning(|_, _| Err(RerankError::Unavailable("the thread stopped".into())));
    let failing = service(&caller, candidates(), 4, Vec::new()).with_reranking(Reranking {
        reranker: Arc::new(failing),
        candidates: 4,
        by_default: true,
    });
    let error = failing
        .search(&caller, &DatasetId::generate(), request(2, None))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, DomainError::Unavailable { message } if message.contains("the thread stopped")),
        "{error:?}"
    );

    let mut short = MockReranker::new();
    short.expect_score().returning(|_, _| Ok(vec![0.5]));
    let miscounting = service(&caller, candidates(), 4, Vec::new()).with_reranking(Reranking {
        reranker: Arc::new(short),
        candidates: 4,
        by_default: true,
    });
    let error = miscounting
        .search(&caller, &DatasetId::generate(), request(2, None))
        .await
        .unwrap_err();
    assert!(matches!(error, DomainError::Internal { .. }), "{error:?}");
}
