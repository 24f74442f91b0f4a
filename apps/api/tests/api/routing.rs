//! Routing under fault injection, through the real HTTP stack: real upstreams on loopback
//! (an OpenAI-compatible server in this process) that answer 500, answer 429 with
//! `Retry-After`, hang before the first byte, hang mid-stream, or close the connection
//! mid-stream, each deployed in front of a healthy backup. Before the first token the client
//! gets one clean answer from the backup, once; after it, a clean error event, the partial
//! answer kept with the chat in `error`; one usage record per completion either way, and the
//! attempts on the stored answer. The same upstream also speaks Anthropic's Messages API
//! (`/anthropic-…` paths), for a model served by `kind = "anthropic"` deployments. Both
//! report part of the prompt as read from their cache, which reaches the answers, the usage
//! records and reports, the metrics and both dialects.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use reqwest::Method;
use serde_json::{Value, json};
use tessera_llm_openai::testing::read_http_request;
use tessera_store::Backend;
use tokio::{
    io::AsyncWriteExt,
    net::{TcpListener, TcpStream},
};

use crate::support::{TestApp, ok, problem};

/// An OpenAI-compatible server whose behaviour is the first segment of the path
/// (`/ok/v1/chat/completions`, `/fail500/v1/…`); it counts the requests of each.
struct FaultyUpstream {
    port: u16,
    requests: Arc<Mutex<HashMap<String, u32>>>,
}

impl FaultyUpstream {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(HashMap::new()));
        let counted = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(serve(socket, counted.clone()));
            }
        });
        Self { port, requests }
    }

    fn requests(&self, behaviour: &str) -> u32 {
        self.requests
            .lock()
            .unwrap()
            .get(behaviour)
            .copied()
            .unwrap_or(0)
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({
        "id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0,
        "model": "stub-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {chunk}\n\n")
}

async fn serve(mut socket: TcpStream, requests: Arc<Mutex<HashMap<String, u32>>>) {
    let Some((head, _)) = read_http_request(&mut socket).await else {
        return;
    };
    let path = head.split_whitespace().nth(1).unwrap_or("/");
    let behaviour = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("")
        .to_owned();
    *requests
        .lock()
        .unwrap()
        .entry(behaviour.clone())
        .or_default() += 1;
    let stream_head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let error = |status: &str, extra: &str| {
        let body = r#"{"error":{"message":"injected fault","type":"server_error"}}"#;
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}",
            body.len()
        )
    };
    let partial = chunk(json!({"role": "assistant", "content": "Hel"}), None);
    match behaviour.as_str() {
        "fail500" => {
            let _ = socket
                .write_all(error("500 Internal Server Error", "").as_bytes())
                .await;
        }
        "r429" => {
            let response = error("429 Too Many Requests", "retry-after: 1\r\n");
            let _ = socket.write_all(response.as_bytes()).await;
        }
        "hang" => tokio::time::sleep(Duration::from_secs(120)).await,
        "midhang" => {
            let _ = socket
                .write_all(format!("{stream_head}{partial}").as_bytes())
                .await;
            tokio::time::sleep(Duration::from_secs(120)).await;
        }
        "midclose" => {
            let _ = socket
                .write_all(format!("{stream_head}{partial}").as_bytes())
                .await;
        }
        "anthropic-overloaded" => {
            let body =
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
            let response = format!(
                "HTTP/1.1 529 Overloaded\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
        "anthropic-ok" => {
            let _ = socket
                .write_all(format!("{stream_head}{}", messages_answer()).as_bytes())
                .await;
        }
        _ => {
            let usage = json!({
                "id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0,
                "model": "stub-model", "choices": [],
                "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9,
                          "prompt_tokens_details": {"cached_tokens": 4}}
            });
            let body = [
                partial,
                chunk(json!({"content": "lo world"}), None),
                chunk(json!({}), Some("stop")),
                format!("data: {usage}\n\n"),
                "data: [DONE]\n\n".to_owned(),
            ]
            .concat();
            let _ = socket
                .write_all(format!("{stream_head}{body}").as_bytes())
                .await;
        }
    }
    let _ = socket.shutdown().await;
}

/// "Hello world" as the Messages API streams it: 5 input tokens plus 2 read from the cache.
fn messages_answer() -> String {
    [
        json!({"type": "message_start", "message": {"id": "msg_stub", "type": "message",
            "role": "assistant", "content": [], "model": "stub-model",
            "usage": {"input_tokens": 5, "cache_read_input_tokens": 2, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo world"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ]
    .iter()
    .map(|event| format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap()))
    .collect()
}

const FAULTS: [&str; 5] = ["fail500", "r429", "hang", "midhang", "midclose"];

/// A model per fault: the faulty deployment first, the healthy one as its fallback.
fn catalog_text(port: u16) -> String {
    let mut text = String::new();
    for behaviour in FAULTS.iter().chain(&["ok"]) {
        text.push_str(&format!(
            "[providers.{behaviour}]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/{behaviour}/v1\"\ntimeouts = {{ first_token_ms = 1500, idle_ms = 1500 }}\n\n"
        ));
    }
    for behaviour in ["anthropic-overloaded", "anthropic-ok"] {
        text.push_str(&format!(
            "[providers.{behaviour}]\nkind = \"anthropic\"\nbase_url = \"http://127.0.0.1:{port}/{behaviour}/v1\"\n\n"
        ));
    }
    text.push_str(
        r#"[[models]]
id = "claude/overloaded"
display_name = "Claude, first deployment overloaded"
context_window = 8192
capabilities = { streaming = true }

[[models.deployments]]
provider = "anthropic-overloaded"
model_name = "claude-stub"

[[models.deployments]]
provider = "anthropic-ok"
model_name = "claude-stub"
priority = 1

"#,
    );
    for behaviour in FAULTS {
        text.push_str(&format!(
            r#"[[models]]
id = "faulty/{behaviour}"
display_name = "Faulty {behaviour}"
context_window = 8192
capabilities = {{ streaming = true }}

[[models.deployments]]
provider = "{behaviour}"
model_name = "stub-model"

[[models.deployments]]
provider = "ok"
model_name = "stub-model"
priority = 1

"#
        ));
    }
    text
}

/// The text of a default-format stream and its error chunk, if any.
fn streamed(body: &str) -> (String, Option<Value>) {
    let chunks = crate::chats::chunks(body);
    let text = chunks
        .iter()
        .filter_map(|chunk| chunk["delta"].as_str())
        .collect();
    let error = chunks
        .iter()
        .find_map(|chunk| chunk.get("error").filter(|error| !error.is_null()).cloned());
    (text, error)
}

async fn complete(app: &TestApp, token: &str, model: &str) -> (String, Option<Value>, String) {
    let response = app
        .client
        .post(app.url("/v1/chats"))
        .bearer_auth(token)
        .json(&json!({
            "modelId": model,
            "stream": true,
            "messages": [{"role": "user", "content": "Say hello"}]
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let chat = response.headers()["x-chat-id"].to_str().unwrap().to_owned();
    let (text, error) = streamed(&response.text().await.unwrap());
    (text, error, chat)
}

async fn requests_counted(app: &TestApp, token: &str) -> Value {
    let usage = ok(app.call(Method::GET, "/v1/usage", token).await, 200).await;
    usage["totals"]["requests"].clone()
}

async fn upstream_faults_are_routed_around_before_the_first_token(backend: Backend) {
    let upstream = FaultyUpstream::start().await;
    let (app, _dir) = crate::chats::local_app(backend, Some(catalog_text(upstream.port))).await;
    let token = app
        .caller_token("chats:admin chats:invoke usage:read")
        .await;
    let mut completions = 0;

    // One failed attempt each: the backup is tried at once, no back-off first.
    for (fault, attempts) in [("fail500", 1), ("r429", 1), ("hang", 1)] {
        let (text, error, chat) = complete(&app, &token, &format!("faulty/{fault}")).await;
        completions += 1;
        assert_eq!(
            text, "Hello world",
            "{fault}: one clean answer, nothing repeated"
        );
        assert_eq!(error, None, "{fault}");
        let record = crate::chats::settled(&app, &token, &chat).await;
        assert_eq!(record["status"], json!(null), "{fault}");
        let answer = &record["messages"][1];
        assert_eq!(answer["content"], json!("Hello world"));
        assert_eq!(answer["finishReason"], json!("stop"));
        assert_eq!(
            answer["usage"]["totalTokens"],
            json!(9),
            "the answering attempt is billed"
        );
        assert_eq!(answer["route"]["deployment"], json!("ok"), "{fault}");
        let failed = answer["route"]["failedAttempts"].as_array().unwrap();
        assert_eq!(failed.len(), attempts, "{fault}: {failed:?}");
        assert!(
            failed
                .iter()
                .all(|attempt| attempt["deployment"] == json!(fault))
        );
        assert_eq!(upstream.requests(fault), attempts as u32, "{fault}");
        assert_eq!(requests_counted(&app, &token).await, json!(completions));
    }
    assert_eq!(upstream.requests("ok"), 3);

    // The operator sees the failures on the deployments (one: not open).
    let admin = app.caller_token("org:admin").await;
    let health = ok(
        app.call(Method::GET, "/v1/models/catalog/deployments", &admin)
            .await,
        200,
    )
    .await;
    let of = |model: &str| -> Value {
        health["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["modelId"] == json!(model))
            .unwrap_or_else(|| panic!("{model} in {health}"))["deployments"]
            .clone()
    };
    let deployments = of("faulty/fail500");
    assert_eq!(deployments[0]["name"], json!("fail500"));
    assert_eq!(deployments[0]["circuit"], json!("closed"));
    assert_eq!(deployments[0]["consecutiveFailures"], json!(1));
    assert_eq!(deployments[1]["name"], json!("ok"));
    assert_eq!(deployments[1]["priority"], json!(1));
    assert_eq!(deployments[1]["consecutiveFailures"], json!(0));
    problem(
        app.call(Method::GET, "/v1/models/catalog/deployments", &token)
            .await,
        403,
        "insufficient_scope",
    )
    .await;

    for fault in ["midhang", "midclose"] {
        let (text, error, chat) = complete(&app, &token, &format!("faulty/{fault}")).await;
        completions += 1;
        assert_eq!(text, "Hel", "{fault}: what was sent is not sent again");
        let error = error.unwrap_or_else(|| panic!("{fault}: no error event"));
        let status = error["status"].as_u64();
        assert!(matches!(status, Some(502 | 504)), "{fault}: {error}");
        let record = crate::chats::settled(&app, &token, &chat).await;
        assert_eq!(record["status"], json!("error"), "{fault}");
        let answer = &record["messages"][1];
        assert_eq!(
            answer["content"],
            json!("Hel"),
            "{fault}: the partial answer is kept"
        );
        assert_eq!(answer["finishReason"], json!("error"));
        assert_eq!(answer["route"]["deployment"], json!(fault));
        assert_eq!(
            upstream.requests(fault),
            1,
            "{fault}: not retried after the first token"
        );
        assert_eq!(requests_counted(&app, &token).await, json!(completions));
    }
    assert_eq!(
        upstream.requests("ok"),
        3,
        "no fallback after the first token"
    );
}

async fn anthropic_deployments_answer_and_fall_back(backend: Backend) {
    let upstream = FaultyUpstream::start().await;
    let (app, _dir) = crate::chats::local_app(backend, Some(catalog_text(upstream.port))).await;
    let token = app.caller_token("chats:admin chats:invoke").await;
    let (text, error, chat) = complete(&app, &token, "claude/overloaded").await;
    assert_eq!(
        text, "Hello world",
        "one clean answer from the Messages API"
    );
    assert_eq!(error, None);
    let record = crate::chats::settled(&app, &token, &chat).await;
    let answer = &record["messages"][1];
    assert_eq!(answer["content"], json!("Hello world"));
    assert_eq!(answer["finishReason"], json!("stop"));
    assert_eq!(
        answer["usage"]["inputTokens"],
        json!(7),
        "cache reads are input"
    );
    assert_eq!(answer["usage"]["outputTokens"], json!(2));
    assert_eq!(
        answer["usage"]["cachedInputTokens"],
        json!(2),
        "and the cached part of the input"
    );
    assert_eq!(answer["route"]["deployment"], json!("anthropic-ok"));
    assert_eq!(answer["route"]["provider"], json!("anthropic-ok"));
    let failed = answer["route"]["failedAttempts"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "529 falls back at once: {failed:?}");
    assert!(
        failed[0]["error"].as_str().unwrap().contains("Overloaded"),
        "{failed:?}"
    );
    assert_eq!(upstream.requests("anthropic-overloaded"), 1);
    assert_eq!(upstream.requests("anthropic-ok"), 1);
}

/// The metrics credit a routed answer to the deployment's provider that gave it, not to the
/// first one tried; a non-streamed answer that fails after its first token names its stored
/// chat (issue 61).
async fn routed_answers_are_credited_to_their_provider_and_failed_ones_name_their_chat(
    backend: Backend,
) {
    let upstream = FaultyUpstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.toml");
    std::fs::write(&catalog, catalog_text(upstream.port)).unwrap();
    let app = TestApp::spawn_with(backend, |settings| {
        settings.models.catalog_file = Some(catalog);
        settings.rate_limit.enabled = false;
        settings.metrics.listen = "127.0.0.1:0".into();
    })
    .await;
    let token = app.caller_token("chats:admin chats:invoke").await;

    // Streamed and not: both answered by `ok` after `fail500` failed.
    let (text, error, _) = complete(&app, &token, "faulty/fail500").await;
    assert_eq!((text.as_str(), error), ("Hello world", None));
    let body = json!({
        "modelId": "faulty/fail500",
        "messages": [{"role": "user", "content": "Say hello"}]
    });
    let answer = ok(
        app.client
            .post(app.url("/v1/chats"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    assert_eq!(
        answer["message"]["content"],
        json!("Hello world"),
        "{answer}"
    );

    let address = app.metrics.expect("metrics are on");
    let text = reqwest::get(format!("http://{address}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series = |name: &str, provider: &str, extra: &str| -> Vec<&str> {
        text.lines()
            .filter(|line| {
                line.starts_with(name)
                    && line.contains(r#"gen_ai_request_model="faulty/fail500""#)
                    && line.contains(&format!(r#"gen_ai_provider_name="{provider}""#))
                    && line.contains(extra)
            })
            .collect()
    };
    let finished = series(
        "tessera_chat_completions_total",
        "ok",
        r#"outcome="finished""#,
    );
    assert_eq!(finished.len(), 1, "{text}");
    assert!(finished[0].ends_with(" 2"), "{}", finished[0]);
    assert!(
        series("tessera_chat_completions_total", "fail500", "").is_empty(),
        "nothing is credited to the deployment that failed:\n{text}"
    );
    let tokens = series(
        "gen_ai_client_token_usage_sum",
        "ok",
        r#"gen_ai_token_type="output""#,
    );
    assert_eq!(tokens.len(), 1, "{text}");
    assert!(
        tokens[0].ends_with(" 4"),
        "two answers of 2 tokens: {}",
        tokens[0]
    );
    let cached = series("tessera_chat_cached_input_tokens_total", "ok", "");
    assert_eq!(cached.len(), 1, "{text}");
    assert!(
        cached[0].ends_with(" 8"),
        "two answers with 4 cached input tokens: {}",
        cached[0]
    );

    // Not streamed, cut off after "Hel": the problem names the stored chat and answer.
    let body = json!({
        "modelId": "faulty/midclose",
        "messages": [{"role": "user", "content": "Say hello"}]
    });
    let response = app
        .client
        .post(app.url("/v1/chats"))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let location = response
        .headers()
        .get("location")
        .map(|value| value.to_str().unwrap().to_owned());
    let failure = problem(response, 502, "provider_error").await;
    let chat = failure["chatId"]
        .as_str()
        .expect("the problem names the chat");
    assert_eq!(
        location.as_deref(),
        Some(format!("/v1/chats/{chat}").as_str())
    );
    let record = crate::chats::settled(&app, &token, chat).await;
    assert_eq!(record["status"], json!("error"));
    let kept = &record["messages"][1];
    assert_eq!(kept["content"], json!("Hel"), "the partial answer is kept");
    assert_eq!(kept["id"], failure["messageId"], "{failure}");
}

/// A remote provider's cached prompt tokens (OpenAI's `prompt_tokens_details.cached_tokens`)
/// reach the answer and its stored message, OpenAI's dialect (chat completions, streamed or
/// not, and the Responses API), the usage records and the reports read from them or from the
/// hourly rollup.
async fn a_providers_cached_input_tokens_reach_answers_records_and_both_dialects(backend: Backend) {
    let upstream = FaultyUpstream::start().await;
    let (app, _dir) = crate::chats::local_app(backend, Some(catalog_text(upstream.port))).await;
    let token = app
        .caller_token("chats:admin chats:invoke chats:read usage:read")
        .await;
    let model = "faulty/fail500";
    let question = json!([{"role": "user", "content": "Say hello"}]);

    let answer = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &json!({"modelId": model, "messages": question}),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(answer["usage"]["inputTokens"], json!(7), "{answer}");
    assert_eq!(answer["usage"]["cachedInputTokens"], json!(4), "{answer}");
    let chat = answer["id"].as_str().unwrap();
    let record = crate::chats::settled(&app, &token, chat).await;
    assert_eq!(
        record["messages"][1]["usage"]["cachedInputTokens"],
        json!(4),
        "stored with the answer: {record}"
    );

    let completions = "/openai/v1/chat/completions";
    let request = json!({"model": model, "messages": question});
    let completion = ok(
        app.call_json(Method::POST, completions, &token, &request)
            .await,
        200,
    )
    .await;
    assert_eq!(
        completion["usage"]["prompt_tokens"],
        json!(7),
        "{completion}"
    );
    assert_eq!(
        completion["usage"]["prompt_tokens_details"],
        json!({"cached_tokens": 4}),
        "{completion}"
    );
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let response = app
        .call_json(Method::POST, completions, &token, &streamed)
        .await;
    assert_eq!(response.status(), 200);
    let chunks = crate::openai::openai_chunks(&response.text().await.unwrap());
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]), "{last}");
    assert_eq!(
        last["usage"]["prompt_tokens_details"]["cached_tokens"],
        json!(4),
        "{last}"
    );

    let response = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/responses",
            &token,
            &json!({"model": model, "input": "Say hello"}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(response["status"], json!("completed"), "{response}");
    assert_eq!(response["usage"]["input_tokens"], json!(7), "{response}");
    assert_eq!(
        response["usage"]["input_tokens_details"]["cached_tokens"],
        json!(4),
        "{response}"
    );

    // Four completions, 4 cached tokens each: read from the records (`to` is now) and from
    // the hourly rollup (whole UTC days), grouped by model.
    let today = chrono::Utc::now().date_naive();
    let tomorrow = today.succ_opt().unwrap();
    for query in [
        "groupBy=model".to_owned(),
        format!("groupBy=model&from={today}&to={tomorrow}"),
    ] {
        let report = ok(
            app.call(Method::GET, &format!("/v1/usage?{query}"), &token)
                .await,
            200,
        )
        .await;
        assert_eq!(report["totals"]["requests"], json!(4), "{query}: {report}");
        assert_eq!(
            report["totals"]["inputTokens"],
            json!(28),
            "{query}: {report}"
        );
        assert_eq!(
            report["totals"]["cachedInputTokens"],
            json!(16),
            "{query}: {report}"
        );
        assert_eq!(
            report["items"],
            json!([{"modelId": model, "inputTokens": 28, "outputTokens": 8,
                    "reasoningTokens": 0, "cachedInputTokens": 16, "totalTokens": 36,
                    "credits": 36, "requests": 4, "cachedRequests": 0}]),
            "{query}: {report}"
        );
    }
}

tessera_store::on_both_databases!(
    a_providers_cached_input_tokens_reach_answers_records_and_both_dialects,
    upstream_faults_are_routed_around_before_the_first_token,
    anthropic_deployments_answer_and_fall_back,
    routed_answers_are_credited_to_their_provider_and_failed_ones_name_their_chat,
);
