//! The `ChatModel` contract (`tessera_models::contract::chat_model`) on the embedded engine
//! with the real SmolLM2 GGUF: every check runs, tools and JSON schema included, but the
//! unknown model's (the engine serves its one model whatever the request names it).

use std::sync::Arc;

use tessera_llm_local::{LocalEngineOptions, testing};
use tessera_models::contract::chat_model::{Backend, ChatModelUnderTest, check_chat_model};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_engine_keeps_the_chat_model_contract() {
    let engine = testing::engine(LocalEngineOptions::default());
    let window = u32::try_from(engine.context_length()).unwrap_or(u32::MAX);
    let backend = Backend {
        context_window: Some(window),
        ..Backend::real_model()
    };
    let subject = ChatModelUnderTest::new(Arc::new(engine), "smollm2", backend);
    check_chat_model(
        &subject,
        &["a_model_the_backend_does_not_serve_is_an_invalid_request"],
    )
    .await;
}
