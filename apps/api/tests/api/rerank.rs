//! Reranking through the real HTTP stack, with the real cross-encoder
//! (ms-marco-MiniLM-L-12-v2, fetched by `just models`): a search's fused candidates are
//! reordered by it and each hit carries its relevance, `rerank: false` skips it, a RAG chat's
//! sources are ranked by it; a server without the model refuses `rerank: true`.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_api::config::{Settings, Switch};
use tessera_api::startup::Application;
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, model_dir},
    processing::{knowledge_app_with, models_root, search},
    rag::{dataset_with, link, question},
    support::{TestApp, ok, problem},
};

const SCOPES: &str = "files:read files:write datasets:read datasets:write models:read \
models:write chats:invoke chats:read";

const QUESTION: &str = "How many people live in Berlin?";

/// The words of the question are in the museums passage; its answer is in the other.
fn passages() -> Vec<(&'static str, Vec<u8>)> {
    [
        (
            "museums.txt",
            "People who live in Berlin love museums. Many people visit Berlin for its \
             museums, and people live near the museum island.",
        ),
        (
            "population.txt",
            "The city counts 3.5 million registered inhabitants on 892 square kilometres.",
        ),
        (
            "new-york.txt",
            "New York City is famous for the Metropolitan Museum of Art.",
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

/// A server that reranks by default: the cross-encoder is found under the models folder.
async fn reranking_app(chat_model: bool) -> TestApp {
    let models = models_root();
    let chat = chat_model.then(model_dir);
    knowledge_app_with(Backend::Sqlite, |settings| {
        settings.knowledge.rerank_model_dir = Some(models);
        settings.knowledge.rerank = Switch::On;
        settings.knowledge.rerank_by_default = true;
        settings.models.local_dir = chat;
    })
    .await
}

fn names(hits: &[Value]) -> Vec<&str> {
    hits.iter()
        .map(|hit| hit["fileName"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reranked_search_puts_the_passage_that_answers_first() {
    let app = reranking_app(false).await;
    let token = app.caller_token(SCOPES).await;
    let dataset = dataset_with(&app, &token, "Cities", &passages()).await;

    // Fused ranks alone favour the passage that repeats the question's words.
    let fused = search(
        &app,
        &token,
        &dataset,
        json!({"query": QUESTION, "limit": 4, "rerank": false}),
    )
    .await;
    assert_eq!(names(&fused)[0], "museums.txt", "{fused:#?}");
    assert!(
        fused.iter().all(|hit| hit["relevance"].is_null()),
        "{fused:#?}"
    );

    // The cross-encoder reads question and passage together (on by default here).
    let reranked = search(
        &app,
        &token,
        &dataset,
        json!({"query": QUESTION, "limit": 2}),
    )
    .await;
    assert_eq!(names(&reranked)[0], "population.txt", "{reranked:#?}");
    assert_eq!(reranked.len(), 2);
    let relevance: Vec<f64> = reranked
        .iter()
        .map(|hit| hit["relevance"].as_f64().unwrap())
        .collect();
    assert!(relevance[0] > 0.5, "{reranked:#?}");
    assert!(relevance[0] >= relevance[1], "best first: {relevance:?}");
    assert!(relevance.iter().all(|r| (0.0..=1.0).contains(r)));
    // The fused score is still reported.
    assert!(reranked[0]["score"].as_f64().unwrap() > 0.0);

    // Words only, reranked: the candidates are BM25's, the order the cross-encoder's.
    let words = search(
        &app,
        &token,
        &dataset,
        json!({"query": "Berlin inhabitants", "mode": "sparse", "rerank": true}),
    )
    .await;
    assert!(
        words.iter().all(|hit| !hit["relevance"].is_null()),
        "{words:#?}"
    );

    let bad = problem(
        app.call_json(
            Method::POST,
            &format!("/v1/datasets/{dataset}/search"),
            &token,
            &json!({"query": QUESTION, "rerank": "yes"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(bad["detail"][0]["loc"], json!(["body", "rerank"]), "{bad}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rag_chat_cites_the_passages_the_cross_encoder_ranks_first() {
    let app = reranking_app(true).await;
    let token = app.caller_token(SCOPES).await;
    let dataset = dataset_with(&app, &token, "Cities", &passages()).await;
    let model = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &token,
            &json!({"parentModelId": LOCAL, "displayName": "Atlas"}),
        )
        .await,
        201,
    )
    .await;
    let model = model["id"].as_str().unwrap().to_owned();
    ok(
        link(
            &app,
            &token,
            &model,
            json!({"datasetId": dataset, "usageType": "rag"}),
        )
        .await,
        201,
    )
    .await;
    let answer = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &question(&model, QUESTION),
        )
        .await,
        201,
    )
    .await;
    let sources = answer["message"]["sources"].as_array().unwrap();
    assert_eq!(sources[0]["fileName"], "population.txt", "{sources:#?}");
    // A source's score is the cross-encoder's relevance, comparable across datasets.
    let scores: Vec<f64> = sources
        .iter()
        .map(|source| source["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores[0] > 0.5 && scores.iter().all(|s| *s <= scores[0]),
        "{scores:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_the_model_refuses_to_rerank_and_searches_without() {
    let app = knowledge_app_with(Backend::Sqlite, |settings| {
        settings.knowledge.rerank = Switch::Off;
    })
    .await;
    let token = app.caller_token(SCOPES).await;
    let dataset = dataset_with(&app, &token, "Cities", &passages()[..2]).await;
    let refused = problem(
        app.call_json(
            Method::POST,
            &format!("/v1/datasets/{dataset}/search"),
            &token,
            &json!({"query": QUESTION, "rerank": true}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        refused["detail"][0]["loc"],
        json!(["body", "rerank"]),
        "{refused}"
    );
    assert!(
        refused["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .contains("no reranking model"),
        "{refused}"
    );
    let hits = search(&app, &token, &dataset, json!({"query": QUESTION})).await;
    assert_eq!(hits.len(), 2);
    assert!(
        hits.iter().all(|hit| hit["relevance"].is_null()),
        "{hits:#?}"
    );
}

/// The default server (decision 0047): the cross-encoder is loaded but a search that does
/// not ask is not reranked; `rerank: true` is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_a_search_is_reranked_only_when_it_asks() {
    let models = models_root();
    let app = knowledge_app_with(Backend::Sqlite, |settings| {
        settings.knowledge.rerank_model_dir = Some(models);
        settings.knowledge.rerank = Switch::On;
    })
    .await;
    let token = app.caller_token(SCOPES).await;
    let dataset = dataset_with(&app, &token, "Cities", &passages()).await;
    let fused = search(
        &app,
        &token,
        &dataset,
        json!({"query": QUESTION, "limit": 4}),
    )
    .await;
    assert_eq!(names(&fused)[0], "museums.txt", "{fused:#?}");
    assert!(
        fused.iter().all(|hit| hit["relevance"].is_null()),
        "{fused:#?}"
    );
    let asked = search(
        &app,
        &token,
        &dataset,
        json!({"query": QUESTION, "limit": 2, "rerank": true}),
    )
    .await;
    assert_eq!(names(&asked)[0], "population.txt", "{asked:#?}");
    assert!(asked[0]["relevance"].as_f64().unwrap() > 0.5, "{asked:#?}");
}

/// `rerank = "on"` refuses to start without the model's files; `auto` starts without
/// reranking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerank_on_without_the_model_stops_start_up() {
    let data_dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let mut settings = Settings {
        data_dir: data_dir.path().to_path_buf(),
        listen: "127.0.0.1:0".parse().unwrap(),
        ..Settings::default()
    };
    settings.knowledge.embedding_model_dir = Some(models_root());
    settings.knowledge.rerank = Switch::On;
    settings.knowledge.rerank_model_dir = Some(empty.path().to_path_buf());
    let error = Application::build(settings.clone())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("knowledge.rerank = \"on\"") && error.contains("no reranking model"),
        "{error}"
    );
    settings.knowledge.rerank = Switch::Auto;
    assert!(Application::build(settings).await.is_ok());
}
