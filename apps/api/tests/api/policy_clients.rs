//! Issue 66's policies as unchanged clients meet them (`tests/openai-clients/policy.py`):
//! the official `openai` Python package and LangChain's `ChatOpenAI`, against the real
//! server's `/openai/v1` over HTTPS, see ordinary answers and ordinary errors. An
//! organization's guardrail policy refuses an email with the `BadRequestError` naming the
//! rule and the parameter, and hands back a pseudonymised phone number restored, streamed or
//! not; a model's response cache answers the same request twice with the same
//! `ChatCompletion` (`x-cache: hit`, streamed too), `no-cache` asking the model again; a key's
//! allow-list is a `PermissionDeniedError` and a shorter model list, its spent budget a
//! `RateLimitError` (`insufficient_quota`). The embedded model is the one an email is
//! refused on and the one the allow-listed key may use; a loopback OpenAI-compatible upstream
//! of this test's own, which numbers its answers and echoes the question, serves the others
//! (the guarded, cached and billed ones), so the test sees what the provider read (the
//! placeholder, never the value) and that neither a hit nor a refusal reaches it.

use std::{
    process::Command,
    sync::{Arc, Mutex},
};

use reqwest::Method;
use serde_json::{Value, json};
use tessera_llm_openai::testing::read_http_request;
use tessera_store::Backend;
use tokio::{io::AsyncWriteExt, net::TcpListener};

use crate::{
    chats::{LOCAL, model_dir},
    openai::api_key,
    openai_clients::{clients_dir, run_script},
    support::{TestApp, ok},
};

/// The upstream's model the guardrail checks use, and the budget is spent on (the embedded
/// model costs no credits).
const ECHO: &str = "stub/echo";
/// The upstream's model with a response cache policy.
const CACHED: &str = "stub/cached";
/// What `policy.py` pseudonymises and blocks; the provider must read neither.
const PHONE: &str = "+1 415 555 2671";
const EMAIL: &str = "jane.doe@example.org";

const ADMIN: &str = "org:admin models:read chats:invoke chats:read usage:read";

/// An OpenAI-compatible `/v1/chat/completions` on loopback answering its `n`th request with
/// `answer <n>: <the last user message>`, streamed in pieces of three characters (so a
/// placeholder arrives split across deltas), and recording each request's body.
struct EchoUpstream {
    port: u16,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl EchoUpstream {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::<Value>::new()));
        let recorded = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let Some((_, body)) = read_http_request(&mut socket).await else {
                        return;
                    };
                    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let question = (request["messages"].as_array().into_iter().flatten())
                        .rfind(|message| message["role"] == "user")
                        .and_then(|message| message["content"].as_str())
                        .unwrap_or_default()
                        .to_owned();
                    let n = {
                        let mut recorded = recorded.lock().unwrap();
                        recorded.push(request);
                        recorded.len()
                    };
                    let answer: Vec<char> = format!("answer {n}: {question}").chars().collect();
                    let chunk = |delta: Value, finish: Option<&str>| {
                        let chunk = json!({"id": "chatcmpl-echo", "object": "chat.completion.chunk",
                            "created": 0, "model": "echo",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                        format!("data: {chunk}\n\n")
                    };
                    let mut body = String::new();
                    for (i, piece) in answer.chunks(3).enumerate() {
                        let text: String = piece.iter().collect();
                        let delta = if i == 0 {
                            json!({"role": "assistant", "content": text})
                        } else {
                            json!({"content": text})
                        };
                        body.push_str(&chunk(delta, None));
                    }
                    body.push_str(&chunk(json!({}), Some("stop")));
                    let usage = json!({"id": "chatcmpl-echo", "object": "chat.completion.chunk",
                        "created": 0, "model": "echo", "choices": [],
                        "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}});
                    body.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                    let _ = socket.write_all(format!("{head}{body}").as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { port, requests }
    }

    /// The request bodies received so far.
    fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// The built-in catalog (the embedded model among others), [`ECHO`] and [`CACHED`].
    fn catalog(&self) -> String {
        let builtin = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../crates/models/catalog.toml"
        ));
        let model = |id: &str, name: &str| {
            format!(
                "[[models]]\nid = \"{id}\"\ndisplay_name = \"{id}\"\nprovider = \"echo\"\nmodel_name = \"{name}\"\ncontext_window = 8192\ncapabilities = {{ streaming = true }}\ncredit_multiplier = 1\n"
            )
        };
        format!(
            "{builtin}\n[providers.echo]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{}/v1\"\n\n{}\n{}",
            self.port,
            model(ECHO, "echo"),
            model(CACHED, "cached"),
        )
    }
}

/// The organization's guardrail policy, the cache policy of [`CACHED`], three keys (one
/// free, one allowed only the embedded model, one with a budget of one credit a day), then
/// `policy.py`; afterwards, the server's side of what the clients saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_package_and_langchain_meet_policies_as_ordinary_answers_and_errors() {
    let python = std::env::var("TESSERA_OPENAI_PYTHON")
        .expect("TESSERA_OPENAI_PYTHON names the venv's Python; `just test` installs it");
    let upstream = EchoUpstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.toml");
    std::fs::write(&catalog, upstream.catalog()).unwrap();
    let app = TestApp::spawn_with(Backend::Sqlite, |settings| {
        settings.models.local_dir = Some(model_dir());
        settings.models.catalog_file = Some(catalog);
        // The script makes a few dozen requests in a row; the rate limits have their tests.
        settings.rate_limit.enabled = false;
        // The budget's spend read afresh on every request: spent at once.
        settings.quotas.cache_secs = 0;
    })
    .await;
    let admin = app.caller_token(ADMIN).await;
    let scopes = json!(["models:read", "chats:invoke"]);
    let key = |name: &str| json!({"name": name, "scopes": scopes});
    let (free_id, free) = api_key(&app, &admin, key("policy clients")).await;
    let (limited_id, limited) = api_key(&app, &admin, key("allow-listed")).await;
    let (budget_id, budget) = api_key(&app, &admin, key("budgeted")).await;
    let put = |path: String, body: Value| {
        let (app, admin) = (&app, &admin);
        async move { ok(app.call_json(Method::PUT, &path, admin, &body).await, 200).await }
    };
    put(
        format!("/v1/api-keys/{limited_id}/limits"),
        json!({"models": [LOCAL]}),
    )
    .await;
    put(
        format!("/v1/api-keys/{budget_id}/limits"),
        json!({"budget": {"credits": 1, "period": "day"}}),
    )
    .await;
    put(
        "/v1/guardrails".to_owned(),
        json!({"pii": [
            {"id": "emails", "kind": "email", "action": "block", "appliesTo": "input"},
            {"id": "phones", "kind": "phone", "action": "pseudonymise", "appliesTo": "input"}
        ]}),
    )
    .await;
    put(format!("/v1/response-cache/models/{CACHED}"), json!({})).await;

    let mut command = Command::new(python);
    command
        .arg(clients_dir().join("policy.py"))
        .env("OPENAI_API_KEY", &free)
        .env("TESSERA_LIMITED_KEY", &limited)
        .env("TESSERA_BUDGET_KEY", &budget)
        .env("TESSERA_MODEL", LOCAL)
        .env("TESSERA_ECHO_MODEL", ECHO)
        .env("TESSERA_CACHED_MODEL", CACHED);
    let summary = run_script(&app, "policy.py (openai and LangChain)", command).await;

    // The provider read the placeholder, never the phone number, and never the blocked
    // email.
    let requests = upstream.requests();
    let read = serde_json::to_string(&requests).unwrap();
    assert!(!read.contains(PHONE) && !read.contains(EMAIL), "{read}");
    // Two restorations by each client and the completion that spent the budget: the
    // refusals never reached the provider.
    let echoed = (requests.iter())
        .filter(|request| request["model"] == "echo")
        .count();
    assert_eq!(echoed, 5, "{read}");
    assert_eq!(
        (requests.iter())
            .filter(|request| request.to_string().contains("⟦PHONE_1⟧"))
            .count(),
        4,
        "{read}"
    );

    // Every miss the clients saw reached the provider, no hit did; hits cost nothing.
    let seen: Vec<&str> = (summary["cache"]["x_cache"].as_array().unwrap().iter())
        .map(|seen| seen.as_str().unwrap())
        .collect();
    let misses = seen.iter().filter(|seen| **seen == "miss").count();
    let hits = seen.iter().filter(|seen| **seen == "hit").count();
    assert_eq!(misses + hits, seen.len(), "{summary}");
    let cached = (requests.iter())
        .filter(|request| request["model"] == "cached")
        .count();
    assert_eq!(cached, misses, "{seen:?}: {read}");
    let usage = ok(
        app.call(Method::GET, "/v1/usage?groupBy=user", &admin)
            .await,
        200,
    )
    .await;
    assert_eq!(usage["totals"]["cachedRequests"], json!(hits), "{usage}");

    // The refusals billed nothing: the allow-listed key has its one completion of the
    // embedded model (at no credits), the budgeted key the one that spent its budget.
    let requests_of = |id: &str| {
        (usage["items"].as_array().unwrap().iter())
            .find(|group| group["userId"] == json!(id))
            .map_or(0, |group| group["requests"].as_u64().unwrap())
    };
    assert_eq!(requests_of(&limited_id), 1, "{usage}");
    assert_eq!(requests_of(&budget_id), 1, "{usage}");
    assert!(requests_of(&free_id) > 0, "{usage}");
    app.stop().await;
}
