//! Late interaction in the dataset service, against mocked ports: a dataset's setting decides
//! whether its searches ask the index to reorder candidates by MaxSim (a request may say
//! otherwise), with the query's token vectors from the model and enough candidates for the
//! cross-encoder after it; asking on a server without the model is a located validation
//! error, in searches and in the dataset's setting; a dataset still set after the server
//! stopped offering it searches without.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use chrono::Utc;
use tessera_kernel::{Caller, CursorCodec, DomainError, ManualClock, OrganizationId};
use tessera_knowledge::{
    Dataset, DatasetChanges, DatasetId, DatasetService, LateInteractionSearch, LateRerank,
    MockDatasetStore, MockEmbedder, MockFileStore, MockLateInteraction, MockReranker,
    MockVectorIndex, NewDataset, Reranking, SearchMode, SearchRequest, TokenVectors, VectorQuery,
};

fn caller() -> Caller {
    Caller::operator(OrganizationId::generate(), "user-1")
}

fn dataset(caller: &Caller, late_interaction: bool) -> Dataset {
    Dataset {
        id: DatasetId::generate(),
        organization: caller.organization().clone(),
        name: "Cities".into(),
        description: None,
        version: 1,
        file_count: 0,
        late_interaction,
        created_by: "user-1".into(),
        created_at: Utc::now(),
        updated_at: Utc::now(),
        metadata: Default::default(),
        expires_after_days: None,
        last_active_at: Utc::now(),
    }
}

/// The query's token vectors, as the mocked model encodes them.
fn query_tokens() -> TokenVectors {
    TokenVectors::new(2, vec![1.0, 0.0, 0.0, 1.0]).unwrap()
}

fn late_interaction(candidates: usize) -> LateInteractionSearch {
    let mut model = MockLateInteraction::new();
    model.expect_model().return_const("colbert".to_owned());
    model.expect_encode_query().returning(|query| {
        assert_eq!(query, "who lives here?");
        Ok(query_tokens())
    });
    LateInteractionSearch {
        model: Arc::new(model),
        candidates,
    }
}

/// A service over mocks whose dataset is `record`, whose index finds nothing and keeps the
/// queries it was asked, and which stores updates.
fn service(record: Dataset) -> (DatasetService, Arc<Mutex<Vec<VectorQuery>>>) {
    let mut datasets = MockDatasetStore::new();
    datasets
        .expect_get()
        .returning(move |_, _| Ok(Some(record.clone())));
    datasets.expect_insert().returning(|_, _| Ok(()));
    datasets.expect_update().returning(|_, _| Ok(true));
    let mut embedder = MockEmbedder::new();
    embedder
        .expect_embed_query()
        .returning(|_| Ok(vec![1.0, 0.0]));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let mut index = MockVectorIndex::new();
    index.expect_search().returning(move |query| {
        seen.lock().unwrap().push(query);
        Ok(Vec::new())
    });
    let service = DatasetService::new(
        Arc::new(datasets),
        Arc::new(MockFileStore::new()),
        Arc::new(embedder),
        Arc::new(index),
        Arc::new(ManualClock::new(Utc::now())),
        CursorCodec::new([7; 32]),
    );
    (service, asked)
}

fn request(limit: usize, late_interaction: Option<bool>) -> SearchRequest {
    SearchRequest {
        query: " who lives here? ".into(),
        limit,
        version: None,
        files: None,
        mode: SearchMode::Hybrid,
        rerank: Some(false),
        late_interaction,
    }
}

/// The late-interaction part of the one query the index was asked.
fn asked_late(asked: &Mutex<Vec<VectorQuery>>) -> Option<LateRerank> {
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1, "one query");
    asked[0].late.clone()
}

fn is_invalid_at(result: Result<impl std::fmt::Debug, DomainError>, field: &str) -> bool {
    match result {
        Err(DomainError::Validation(errors)) => errors
            .iter()
            .any(|error| error.loc == ["body".into(), field.into()]),
        _ => false,
    }
}

#[tokio::test]
async fn the_dataset_setting_decides_unless_the_request_says() {
    let caller = caller();
    for (setting, asked_for, expected) in [
        (true, None, true),
        (false, None, false),
        (false, Some(true), true),
        (true, Some(false), false),
    ] {
        let record = dataset(&caller, setting);
        let id = record.id.clone();
        let (service, asked) = service(record);
        let service = service.with_late_interaction(late_interaction(20));
        service
            .search(&caller, &id, request(5, asked_for))
            .await
            .unwrap();
        let late = asked_late(&asked);
        let case = format!("dataset {setting}, request {asked_for:?}");
        if expected {
            assert_eq!(
                late,
                Some(LateRerank {
                    query: query_tokens(),
                    candidates: 20,
                }),
                "{case}"
            );
        } else {
            assert_eq!(late, None, "{case}");
        }
    }
}

#[tokio::test]
async fn late_interaction_reorders_at_least_what_the_search_returns_and_the_cross_encoder_reads() {
    let caller = caller();
    let record = dataset(&caller, true);
    let id = record.id.clone();
    let (service, asked) = service(record.clone());
    let service = service.with_late_interaction(late_interaction(20));
    service
        .search(&caller, &id, request(30, None))
        .await
        .unwrap();
    assert_eq!(asked_late(&asked).map(|late| late.candidates), Some(30));

    let mut cross_encoder = MockReranker::new();
    cross_encoder
        .expect_model()
        .return_const("cross-encoder".to_owned());
    let (service, asked) = service_with_reranker(record, cross_encoder);
    let service = service.with_late_interaction(late_interaction(20));
    service
        .search(
            &caller,
            &id,
            SearchRequest {
                rerank: Some(true),
                ..request(5, None)
            },
        )
        .await
        .unwrap();
    let query = asked.lock().unwrap()[0].clone();
    // The cross-encoder reads 40: the index reorders 40 and returns them all.
    assert_eq!(query.limit, 40);
    assert_eq!(query.late.map(|late| late.candidates), Some(40));
}

fn service_with_reranker(
    record: Dataset,
    model: MockReranker,
) -> (DatasetService, Arc<Mutex<Vec<VectorQuery>>>) {
    let (service, asked) = service(record);
    let service = service.with_reranking(Reranking {
        reranker: Arc::new(model),
        candidates: 40,
        by_default: false,
    });
    (service, asked)
}

#[tokio::test]
async fn without_the_model_asking_is_refused_and_a_set_dataset_searches_without() {
    let caller = caller();
    let record = dataset(&caller, true);
    let id = record.id.clone();
    let (service, asked) = service(record);
    assert!(is_invalid_at(
        service.search(&caller, &id, request(5, Some(true))).await,
        "lateInteraction"
    ));
    assert!(asked.lock().unwrap().is_empty(), "nothing searched");
    assert!(is_invalid_at(
        service.create(&caller, docs(true)).await,
        "lateInteraction"
    ));
    assert!(is_invalid_at(
        service.update(&caller, &id, late(true)).await,
        "lateInteraction"
    ));
    // Turning it off, or creating without it, needs no model.
    let updated = service.update(&caller, &id, late(false)).await.unwrap();
    assert!(!updated.late_interaction);
    assert!(
        !service
            .create(&caller, docs(false))
            .await
            .unwrap()
            .late_interaction
    );
    // The dataset still says so (the server's setting changed since): it searches without.
    service
        .search(&caller, &id, request(5, None))
        .await
        .unwrap();
    assert_eq!(asked_late(&asked), None);
}

#[tokio::test]
async fn with_the_model_a_dataset_is_created_and_updated_with_it() {
    let caller = caller();
    let record = dataset(&caller, false);
    let id = record.id.clone();
    let (service, _) = service(record);
    let service = service.with_late_interaction(late_interaction(20));
    assert_eq!(service.late_interaction_model(), Some("colbert"));
    let created = service.create(&caller, docs(true)).await.unwrap();
    assert!(created.late_interaction);
    let updated = service.update(&caller, &id, late(true)).await.unwrap();
    assert!(updated.late_interaction);
    assert_eq!(updated.name, "Cities", "other fields stay");
}

/// A new dataset named Docs, with late interaction or without.
fn docs(late_interaction: bool) -> NewDataset {
    NewDataset {
        name: "Docs".into(),
        late_interaction,
        ..NewDataset::default()
    }
}

/// An update that turns late interaction on or off.
fn late(on: bool) -> DatasetChanges {
    DatasetChanges {
        late_interaction: Some(on),
        ..DatasetChanges::default()
    }
}
