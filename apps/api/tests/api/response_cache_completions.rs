//! The response cache end to end (decision 0063), through the real HTTP stack on both
//! databases, in front of a loopback OpenAI-compatible upstream of this test's own that
//! numbers its answers and records every request it receives: once an organization opts
//! the model in, the same request is answered from the cache (`X-Cache: hit`, the first
//! answer's text, no request upstream) in every dialect, streamed or not, and recorded at
//! zero credits with `cachedRequests` in the usage report; `Cache-Control: no-cache` asks
//! the model again and `no-store` keeps nothing; a request hotter than the policy allows
//! is never cached; a near-duplicate question is a semantic hit and a different one a
//! miss; another organization never sees the first one's answers; and a model not opted in
//! has no `X-Cache` at all.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use reqwest::Method;
use serde_json::{Value, json};
use tessera_llm_openai::testing::read_http_request;
use tessera_store::Backend;
use tokio::{io::AsyncWriteExt, net::TcpListener};

use crate::{
    anthropic::anthropic_events,
    openai::openai_chunks,
    processing::knowledge_app_with,
    support::{TestApp, ok},
};

const SCOPES: &str = "org:admin chats:invoke chats:read models:read usage:read";
const COMPLETIONS: &str = "/openai/v1/chat/completions";
/// The catalog model [`NumberingUpstream`] serves.
const REMOTE: &str = "stub/numbered";
const POLICY: &str = "/v1/response-cache/models/stub/numbered";

/// An OpenAI-compatible upstream answering `answer <n>` to its `n`th request.
struct NumberingUpstream {
    port: u16,
    received: Arc<AtomicUsize>,
}

impl NumberingUpstream {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(AtomicUsize::new(0));
        let counter = received.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    if read_http_request(&mut socket).await.is_none() {
                        return;
                    }
                    let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                    let chunk = |delta: Value, finish: Option<&str>| {
                        let chunk = json!({"id": "chatcmpl-n", "object": "chat.completion.chunk",
                            "created": 0, "model": "numbered",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                        format!("data: {chunk}\n\n")
                    };
                    let usage = json!({"id": "chatcmpl-n", "object": "chat.completion.chunk",
                        "created": 0, "model": "numbered", "choices": [],
                        "usage": {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23}});
                    let body = [
                        chunk(
                            json!({"role": "assistant", "content": format!("answer {n}")}),
                            None,
                        ),
                        chunk(json!({}), Some("stop")),
                        format!("data: {usage}\n\n"),
                        "data: [DONE]\n\n".to_owned(),
                    ]
                    .concat();
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                    let _ = socket.write_all(format!("{head}{body}").as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { port, received }
    }

    fn received(&self) -> usize {
        self.received.load(Ordering::SeqCst)
    }

    /// The built-in catalog and [`REMOTE`].
    fn catalog(&self) -> String {
        let builtin = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../crates/models/catalog.toml"
        ));
        format!(
            r#"{builtin}

[providers.numbered]
kind = "openai"
base_url = "http://127.0.0.1:{port}/v1"

[[models]]
id = "{REMOTE}"
display_name = "A remote model that numbers its answers"
provider = "numbered"
model_name = "numbered"
context_window = 8192
capabilities = {{ streaming = true }}
"#,
            port = self.port
        )
    }
}

/// The app with the knowledge embedder and [`REMOTE`] served by `upstream`.
async fn cache_app(backend: Backend, upstream: &NumberingUpstream) -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.toml");
    std::fs::write(&catalog, upstream.catalog()).unwrap();
    let app = knowledge_app_with(backend, |settings| {
        settings.models.catalog_file = Some(catalog);
    })
    .await;
    (app, dir)
}

fn question(text: &str) -> Value {
    json!({"model": REMOTE, "temperature": 0, "max_tokens": 64,
           "messages": [{"role": "user", "content": text}]})
}

/// An OpenAI chat completion: its `X-Cache` header and its answer's text.
async fn complete(
    app: &TestApp,
    token: &str,
    body: &Value,
    cache_control: Option<&str>,
) -> (Option<String>, String) {
    let mut request = app
        .client
        .post(app.url(COMPLETIONS))
        .bearer_auth(token)
        .json(body);
    if let Some(value) = cache_control {
        request = request.header("Cache-Control", value);
    }
    let response = request.send().await.unwrap();
    let cache = x_cache(&response);
    let completion = ok(response, 200).await;
    let text = completion["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (cache, text)
}

fn x_cache(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get("x-cache")
        .map(|value| value.to_str().unwrap().to_owned())
}

async fn answers_are_replayed_from_the_cache(backend: Backend) {
    let upstream = NumberingUpstream::start().await;
    let (app, _dir) = cache_app(backend, &upstream).await;
    let token = app.caller_token(SCOPES).await;
    let capital = question("What is the capital of France?");
    let answer = |n: usize| format!("answer {n}");
    let hit = |n: usize| (Some("hit".to_owned()), answer(n));
    let miss = |n: usize| (Some("miss".to_owned()), answer(n));

    // Not opted in: no X-Cache, every request goes upstream.
    assert_eq!(
        complete(&app, &token, &capital, None).await,
        (None, answer(1))
    );

    let policy = json!({"semantic": {"threshold": 0.9}, "maxTemperature": 0.5});
    ok(
        app.call_json(Method::PUT, POLICY, &token, &policy).await,
        200,
    )
    .await;
    assert_eq!(complete(&app, &token, &capital, None).await, miss(2));
    assert_eq!(
        complete(&app, &token, &capital, None).await,
        hit(2),
        "the answer replayed"
    );
    assert_eq!(upstream.received(), 2, "a hit never reaches the upstream");

    // Streamed, in OpenAI's chunks.
    let mut streamed = capital.clone();
    streamed["stream"] = json!(true);
    let response = app
        .call_json(Method::POST, COMPLETIONS, &token, &streamed)
        .await;
    assert_eq!(x_cache(&response).as_deref(), Some("hit"));
    let chunks = openai_chunks(&response.text().await.unwrap());
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, answer(2));
    assert!(
        chunks
            .iter()
            .any(|c| c["choices"][0]["finish_reason"] == "stop"),
        "{chunks:?}"
    );

    // The same question in the other dialects is the same provider request.
    let native = app
        .call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &json!({"modelId": REMOTE, "temperature": 0, "maxTokens": 64,
                    "messages": [{"role": "user", "content": "What is the capital of France?"}]}),
        )
        .await;
    assert_eq!(x_cache(&native).as_deref(), Some("hit"));
    let native = ok(native, 201).await;
    assert_eq!(native["message"]["content"], json!(answer(2)), "{native}");
    let anthropic = app
        .call_json(
            Method::POST,
            "/anthropic/v1/messages",
            &token,
            &json!({"model": REMOTE, "max_tokens": 64, "temperature": 0, "stream": true,
                    "messages": [{"role": "user", "content": "What is the capital of France?"}]}),
        )
        .await;
    assert_eq!(x_cache(&anthropic).as_deref(), Some("hit"));
    let events = anthropic_events(&anthropic.text().await.unwrap());
    let text: String = (events.iter())
        .filter_map(|(_, event)| event["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, answer(2), "{events:?}");
    assert!(
        events.iter().any(|(name, _)| name == "message_stop"),
        "{events:?}"
    );
    assert_eq!(upstream.received(), 2);

    // no-cache asks the model (and keeps its answer); no-store keeps nothing.
    assert_eq!(
        complete(&app, &token, &capital, Some("no-cache")).await,
        miss(3)
    );
    assert_eq!(complete(&app, &token, &capital, None).await, hit(3));
    let weather = question("Will it rain in Oslo tomorrow?");
    assert_eq!(
        complete(&app, &token, &weather, Some("no-store")).await,
        miss(4)
    );
    assert_eq!(complete(&app, &token, &weather, None).await, miss(5));

    // Hotter than the policy allows: neither answered from the cache nor kept in it.
    let mut hot = capital.clone();
    hot["temperature"] = json!(0.9);
    assert_eq!(complete(&app, &token, &hot, None).await, miss(6));
    assert_eq!(complete(&app, &token, &hot, None).await, miss(7));

    // Semantic: a paraphrase is a hit, another question a miss.
    let paraphrase = question("What's the capital of France?");
    assert_eq!(complete(&app, &token, &paraphrase, None).await, hit(3));
    let spider = question("How many legs does a spider have?");
    assert_eq!(complete(&app, &token, &spider, None).await, miss(8));

    // Another organization with the same policy never sees these answers.
    let stranger = app.caller_token(SCOPES).await;
    ok(
        app.call_json(Method::PUT, POLICY, &stranger, &policy).await,
        200,
    )
    .await;
    assert_eq!(complete(&app, &stranger, &capital, None).await, miss(9));

    // Usage: hits are recorded, at zero credits, and counted as cached.
    let usage = ok(app.call(Method::GET, "/v1/usage", &token).await, 200).await;
    let totals = &usage["totals"];
    assert_eq!(totals["requests"], json!(14), "{usage}");
    assert_eq!(totals["cachedRequests"], json!(6), "{usage}");
    assert_eq!(
        totals["credits"],
        json!(8 * 23),
        "each of the 8 requests upstream costs its 23 tokens, each hit nothing: {usage}"
    );
}

tessera_store::on_both_databases!(answers_are_replayed_from_the_cache);
