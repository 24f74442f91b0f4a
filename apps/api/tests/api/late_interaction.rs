//! Late interaction through the real HTTP stack, with the real models (bge-small-en-v1.5
//! and answerai-colbert-small-v1, fetched by `just models`) and the embedded qdrant-edge
//! index: a server set to `knowledge.late_interaction` stores every chunk's token vectors,
//! a dataset set to `lateInteraction` has its searches reordered by MaxSim (a request may
//! say otherwise), on SQLite and PostgreSQL; a server without the model refuses the setting
//! and the request with a located 422.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_api::config::Switch;
use tessera_store::Backend;

use crate::{
    processing::{knowledge_app_with, search},
    rag::dataset_with,
    support::{TestApp, ok, problem},
};

const SCOPES: &str = "files:read files:write datasets:read datasets:write";

const QUESTION: &str = "How many people live in Berlin?";

fn passages() -> Vec<(&'static str, Vec<u8>)> {
    [
        (
            "museums.txt",
            "People who live in Berlin love museums. Many people visit Berlin for its \
             museums, and people live near the museum island.",
        ),
        (
            "population.txt",
            "Berlin counts 3.5 million registered inhabitants on 892 square kilometres.",
        ),
        (
            "trains.txt",
            "Trains leave the main station for Hamburg every hour.",
        ),
    ]
    .into_iter()
    .map(|(name, text)| (name, text.as_bytes().to_vec()))
    .collect()
}

async fn late_interaction_app(backend: Backend) -> TestApp {
    knowledge_app_with(backend, |settings| {
        settings.knowledge.late_interaction = Switch::On;
        settings.knowledge.rerank = Switch::Off;
    })
    .await
}

fn scores(hits: &[Value]) -> Vec<f64> {
    hits.iter()
        .map(|hit| hit["score"].as_f64().unwrap())
        .collect()
}

async fn set_late_interaction(app: &TestApp, token: &str, dataset: &str, on: bool) -> Value {
    ok(
        app.call_json(
            Method::PATCH,
            &format!("/v1/datasets/{dataset}"),
            token,
            &json!({"lateInteraction": on}),
        )
        .await,
        200,
    )
    .await
}

async fn searches_follow_the_dataset_setting(backend: Backend) {
    let app = late_interaction_app(backend).await;
    let token = app.caller_token(SCOPES).await;
    let dataset = dataset_with(&app, &token, "Cities", &passages()).await;
    let record = ok(
        app.call(Method::GET, &format!("/v1/datasets/{dataset}"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        record["lateInteraction"], false,
        "off unless asked: {record}"
    );

    // Fused scores are reciprocal ranks: below 1/30 each, summed over two rankings.
    let fused = search(
        &app,
        &token,
        &dataset,
        json!({"query": QUESTION, "limit": 3}),
    )
    .await;
    assert_eq!(fused.len(), 3, "{fused:#?}");
    assert!(scores(&fused).iter().all(|s| *s < 0.1), "{fused:#?}");

    let updated = set_late_interaction(&app, &token, &dataset, true).await;
    assert_eq!(updated["lateInteraction"], true, "{updated}");
    assert_eq!(updated["name"], "Cities");
    // MaxSim sums each query token's best cosine: well above any fused score, best first.
    let late = search(
        &app,
        &token,
        &dataset,
        json!({"query": QUESTION, "limit": 3}),
    )
    .await;
    assert_eq!(late.len(), 3, "every candidate is kept: {late:#?}");
    let late_scores = scores(&late);
    assert!(late_scores.iter().all(|s| *s > 1.0), "{late:#?}");
    assert!(
        late_scores.windows(2).all(|pair| pair[0] >= pair[1]),
        "best first: {late_scores:?}"
    );
    assert_eq!(late[0]["fileName"], "population.txt", "{late:#?}");

    // The request decides over the dataset.
    let unordered = search(
        &app,
        &token,
        &dataset,
        json!({"query": QUESTION, "limit": 3, "lateInteraction": false}),
    )
    .await;
    assert_eq!(scores(&unordered), scores(&fused), "{unordered:#?}");
    set_late_interaction(&app, &token, &dataset, false).await;
    let asked = search(
        &app,
        &token,
        &dataset,
        json!({"query": QUESTION, "limit": 2, "lateInteraction": true, "mode": "sparse"}),
    )
    .await;
    assert_eq!(asked.len(), 2);
    assert!(scores(&asked).iter().all(|s| *s > 1.0), "{asked:#?}");

    // A dataset created with it.
    let created = ok(
        app.call_json(
            Method::POST,
            "/v1/datasets",
            &token,
            &json!({"name": "Reordered", "lateInteraction": true}),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(created["lateInteraction"], true, "{created}");
    let bad = problem(
        app.call_json(
            Method::PATCH,
            &format!("/v1/datasets/{dataset}"),
            &token,
            &json!({"lateInteraction": "yes"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        bad["detail"][0]["loc"],
        json!(["body", "lateInteraction"]),
        "{bad}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_follow_the_dataset_setting_on_sqlite() {
    searches_follow_the_dataset_setting(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_follow_the_dataset_setting_on_postgres() {
    searches_follow_the_dataset_setting(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_the_model_refuses_late_interaction() {
    let app = knowledge_app_with(Backend::Sqlite, |settings| {
        settings.knowledge.rerank = Switch::Off;
    })
    .await;
    let token = app.caller_token(SCOPES).await;
    let refused = problem(
        app.call_json(
            Method::POST,
            "/v1/datasets",
            &token,
            &json!({"name": "Docs", "lateInteraction": true}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        refused["detail"][0]["loc"],
        json!(["body", "lateInteraction"]),
        "{refused}"
    );
    let dataset = ok(
        app.call_json(
            Method::POST,
            "/v1/datasets",
            &token,
            &json!({"name": "Docs"}),
        )
        .await,
        201,
    )
    .await;
    let id = dataset["id"].as_str().unwrap();
    for (method, path, body) in [
        (
            Method::PATCH,
            format!("/v1/datasets/{id}"),
            json!({"lateInteraction": true}),
        ),
        (
            Method::POST,
            format!("/v1/datasets/{id}/search"),
            json!({"query": QUESTION, "lateInteraction": true}),
        ),
    ] {
        let refused = problem(
            app.call_json(method, &path, &token, &body).await,
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(
            refused["detail"][0]["loc"],
            json!(["body", "lateInteraction"]),
            "{path}: {refused}"
        );
        assert!(
            refused["detail"][0]["msg"]
                .as_str()
                .unwrap()
                .contains("knowledge.late_interaction"),
            "{refused}"
        );
    }
}
