//! The Responses API's `file_search` tool through the real HTTP stack with the embedded
//! models, on SQLite and PostgreSQL (the official `openai` package's run is in
//! `openai_clients`): a vector store searched before the model answers, the
//! `file_search_call` item with its results (and their attributes) when asked,
//! `file_citation` annotations, a filter on attributes picking the files searched, the same
//! in the event stream and in the stored response; `tool_choice: none` searching nothing;
//! and the refusals: another organization's store, a key without
//! `datasets:read`, options not supported, in OpenAI's error shape.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, model_dir},
    openai::openai_error,
    processing::{MARKDOWN, knowledge_app_with},
    rag::dataset_with,
    support::{TestApp, ok},
};

const SCOPES: &str = "files:read files:write datasets:read datasets:write chats:invoke chats:read";
const QUESTION: &str = "How do I reset my password?";

async fn app_with_models(backend: Backend) -> TestApp {
    let chat_model = model_dir();
    knowledge_app_with(backend, |settings| {
        settings.models.local_dir = Some(chat_model);
    })
    .await
}

/// A vector store (dataset) holding the help page, processed: its id.
async fn help_store(app: &TestApp, token: &str) -> String {
    let files = [("help.md", MARKDOWN.as_bytes().to_vec())];
    dataset_with(app, token, "Help", &files).await
}

fn searching(store: &str, extra: Value) -> Value {
    let mut request = json!({
        "model": LOCAL,
        "input": QUESTION,
        "tools": [{"type": "file_search", "vector_store_ids": [store], "max_num_results": 2}],
        "max_output_tokens": 8,
        "temperature": 0,
    });
    for (key, value) in extra.as_object().unwrap() {
        request[key] = value.clone();
    }
    request
}

async fn respond(app: &TestApp, token: &str, request: &Value) -> reqwest::Response {
    app.call_json(Method::POST, "/openai/v1/responses", token, request)
        .await
}

/// The `file_search_call` item and the message's annotations, checked against the store's
/// one file.
fn check_grounded(response: &Value, results: bool) -> String {
    let output = response["output"].as_array().unwrap();
    let search = &output[0];
    assert_eq!(search["type"], "file_search_call", "{response}");
    assert_eq!(search["status"], "completed");
    assert_eq!(search["queries"], json!([QUESTION]));
    assert!(search["id"].as_str().unwrap().starts_with("fs_"));
    let file_id = if results {
        let found = search["results"].as_array().unwrap();
        assert!(!found.is_empty() && found.len() <= 2, "{search}");
        assert_eq!(found[0]["filename"], "help.md", "{search}");
        assert!(found[0]["score"].is_number());
        assert!(
            found
                .iter()
                .any(|hit| hit["text"].as_str().unwrap().contains("Reset password")),
            "{search}"
        );
        found[0]["file_id"].as_str().unwrap().to_owned()
    } else {
        assert!(search["results"].is_null(), "{search}");
        String::new()
    };
    let message = output
        .iter()
        .find(|item| item["type"] == "message")
        .unwrap();
    let text = &message["content"][0];
    let annotations = text["annotations"].as_array().unwrap();
    assert!(!annotations.is_empty(), "{message}");
    let length = text["text"].as_str().unwrap().chars().count() as u64;
    for annotation in annotations {
        assert_eq!(annotation["type"], "file_citation", "{annotation}");
        assert_eq!(annotation["filename"], "help.md");
        assert!(annotation["index"].as_u64().unwrap() <= length);
        if results {
            assert_eq!(annotation["file_id"], json!(file_id));
        }
    }
    annotations[0]["file_id"].as_str().unwrap().to_owned()
}

/// The `(event, data)` pairs of a Responses stream.
fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter_map(|frame| {
            let kind = frame.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = frame.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((kind.to_owned(), serde_json::from_str(data).unwrap()))
        })
        .collect()
}

async fn file_search_grounds_the_answer_and_cites_its_files(backend: Backend) {
    let app = app_with_models(backend).await;
    let token = app.caller_token(SCOPES).await;
    let store = help_store(&app, &token).await;
    let files_path = format!("/openai/v1/vector_stores/{store}/files");
    let listed = ok(app.call(Method::GET, &files_path, &token).await, 200).await;
    let file = listed["data"][0]["id"].as_str().unwrap().to_owned();
    let topic = json!({"attributes": {"topic": "account"}});
    let file_path = format!("{files_path}/{file}");
    ok(
        app.call_json(Method::POST, &file_path, &token, &topic)
            .await,
        200,
    )
    .await;

    let include = json!({"include": ["file_search_call.results"]});
    let answered = ok(
        respond(&app, &token, &searching(&store, include)).await,
        200,
    )
    .await;
    // Eight tokens may cut the answer short: `incomplete`, as OpenAI says it.
    let status = answered["status"].as_str().unwrap();
    assert!(["completed", "incomplete"].contains(&status), "{answered}");
    let cited = check_grounded(&answered, true);
    assert_eq!(cited, file);
    let results = &answered["output"][0]["results"];
    assert_eq!(results[0]["attributes"], json!({"topic": "account"}));

    // A filter on the files' attributes picks what is searched; one that picks nothing still
    // shows the search, with nothing found and nothing cited.
    let filtered = |value: &str| {
        let mut request = searching(&store, json!({"include": ["file_search_call.results"]}));
        request["tools"][0]["filters"] = json!({"type": "eq", "key": "topic", "value": value});
        request
    };
    let kept = ok(respond(&app, &token, &filtered("account")).await, 200).await;
    assert_eq!(check_grounded(&kept, true), file);
    let nothing = ok(respond(&app, &token, &filtered("billing")).await, 200).await;
    let output = nothing["output"].as_array().unwrap();
    assert_eq!(output[0]["type"], "file_search_call", "{nothing}");
    assert_eq!(output[0]["results"], json!([]));
    assert_eq!(output[1]["content"][0]["annotations"], json!([]));
    // The tool is echoed as given.
    assert_eq!(answered["tools"][0]["vector_store_ids"], json!([store]));

    // Without `include`, the results stay out; the stored response shows the search too.
    let quiet = ok(
        respond(&app, &token, &searching(&store, json!({}))).await,
        200,
    )
    .await;
    assert_eq!(check_grounded(&quiet, false), cited);
    let id = quiet["id"].as_str().unwrap();
    let stored = ok(
        app.call(Method::GET, &format!("/openai/v1/responses/{id}"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(check_grounded(&stored, false), cited);
    assert_eq!(stored["output"], quiet["output"]);

    // Streamed: the search's item and steps first, then the text and its citations.
    let streamed = searching(
        &store,
        json!({"stream": true, "include": ["file_search_call.results"]}),
    );
    let body = respond(&app, &token, &streamed).await.text().await.unwrap();
    let events = events(&body);
    let kinds: Vec<&str> = events.iter().map(|(kind, _)| kind.as_str()).collect();
    let position = |kind: &str| {
        kinds
            .iter()
            .position(|k| *k == kind)
            .unwrap_or_else(|| panic!("{kind} missing: {kinds:?}"))
    };
    assert_eq!(
        kinds[2..8],
        [
            "response.output_item.added",
            "response.file_search_call.in_progress",
            "response.file_search_call.searching",
            "response.file_search_call.completed",
            "response.output_item.done",
            "response.output_item.added",
        ],
        "{kinds:?}"
    );
    assert_eq!(events[2].1["item"]["type"], "file_search_call");
    assert_eq!(events[2].1["item"]["status"], "in_progress");
    assert_eq!(events[6].1["item"]["status"], "completed");
    assert_eq!(events[6].1["item"]["results"][0]["filename"], "help.md");
    assert_eq!(events[7].1["output_index"], 1);
    let annotated = position("response.output_text.annotation.added");
    assert!(annotated < position("response.output_text.done"));
    assert_eq!(events[annotated].1["annotation"]["file_id"], json!(cited));
    assert_eq!(events[annotated].1["annotation_index"], 0);
    let (last, completed) = events.last().unwrap();
    assert!(
        ["response.completed", "response.incomplete"].contains(&last.as_str()),
        "{last}"
    );
    check_grounded(&completed["response"], true);

    // `tool_choice: none` asks for no tool: nothing is searched.
    let none = searching(&store, json!({"tool_choice": "none"}));
    let plain = ok(respond(&app, &token, &none).await, 200).await;
    let output = plain["output"].as_array().unwrap();
    assert!(
        output.iter().all(|item| item["type"] != "file_search_call"),
        "{plain}"
    );
    assert!(
        output[0]["content"][0]["annotations"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // Choosing the tool by name searches, as `auto` does.
    let chosen = searching(&store, json!({"tool_choice": {"type": "file_search"}}));
    let chosen = ok(respond(&app, &token, &chosen).await, 200).await;
    assert_eq!(check_grounded(&chosen, false), cited);
    app.stop().await;
}

async fn file_search_refuses_stores_scopes_and_options_it_cannot_honour(backend: Backend) {
    let app = app_with_models(backend).await;
    let token = app.caller_token(SCOPES).await;
    let store = help_store(&app, &token).await;

    // Another organization's store, and stores that do not exist, are not found.
    let stranger = app.caller_token(SCOPES).await;
    for (caller, id) in [
        (&stranger, store.as_str()),
        (&token, "vs_abc123"),
        (&token, "ds_00000000000000000000000000000000"),
    ] {
        let error = openai_error(respond(&app, caller, &searching(id, json!({}))).await, 404).await;
        assert_eq!(error["param"], "tools", "{error}");
        assert!(error["message"].as_str().unwrap().contains(id), "{error}");
    }
    // Searching needs `datasets:read` beside `chats:invoke`.
    let narrow = app.caller_token("chats:invoke").await;
    let error = openai_error(
        respond(&app, &narrow, &searching("ds_x", json!({}))).await,
        403,
    )
    .await;
    assert!(
        error["message"].as_str().unwrap().contains("datasets:read"),
        "{error}"
    );

    // Options not supported, bad values, two tools, a chosen tool not given: 400 by name.
    let tool = |extra: Value| {
        let mut tool = json!({"type": "file_search", "vector_store_ids": [store]});
        for (key, value) in extra.as_object().unwrap() {
            tool[key] = value.clone();
        }
        tool
    };
    for (request, param) in [
        (
            json!({"tools": [tool(json!({"max_num_results": 0}))]}),
            "tools.0.max_num_results",
        ),
        (
            json!({"tools": [tool(json!({"vector_store_ids": []}))]}),
            "tools.0.vector_store_ids",
        ),
        (
            json!({"tools": [tool(json!({"filters": {"type": "near", "key": "a", "value": 1}}))]}),
            "tools.0.filters.type",
        ),
        (
            json!({"tools": [tool(json!({"ranking_options": {"ranker": "auto"}}))]}),
            "tools.0.ranking_options",
        ),
        (
            json!({"tools": [tool(json!({})), tool(json!({}))]}),
            "tools.1.type",
        ),
        (
            json!({"tools": [], "tool_choice": {"type": "file_search"}}),
            "tool_choice",
        ),
    ] {
        let body = searching(&store, request.clone());
        let error = openai_error(respond(&app, &token, &body).await, 400).await;
        assert_eq!(error["param"], param, "{request}: {error}");
    }
    app.stop().await;
}

tessera_store::on_both_databases!(
    file_search_grounds_the_answer_and_cites_its_files,
    file_search_refuses_stores_scopes_and_options_it_cannot_honour,
);
