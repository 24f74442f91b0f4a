//! What the model tests share: a catalog of two local base models and a whitespace token
//! counter for the prompt service, and a manual clock with a prompt service on memory.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use tessera_kernel::{CursorCodec, ManualClock};
use tessera_prompts::{PromptService, TokenCounter, memory::InMemoryPromptStore};

pub struct Words;

impl TokenCounter for Words {
    fn encoding(&self) -> &str {
        "words"
    }

    fn count(&self, text: &str) -> u32 {
        text.split_whitespace().count() as u32
    }
}

pub const CATALOG: &str = r#"
[providers.local]
kind = "local"
[[models]]
id = "local/a"
display_name = "A"
provider = "local"
model_name = "a.gguf"
context_window = 2048
[[models]]
id = "local/b"
display_name = "B"
provider = "local"
model_name = "b.gguf"
context_window = 4096
"#;

/// A manual clock at 2026-02-03T04:05:06Z and a prompt service over an in-memory store.
pub fn clock_and_prompts() -> (Arc<ManualClock>, PromptService) {
    let clock = Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 2, 3, 4, 5, 6).unwrap(),
    ));
    let prompt_store = Arc::new(InMemoryPromptStore::new());
    let prompts = PromptService::new(
        prompt_store.clone(),
        prompt_store,
        Arc::new(Words),
        clock.clone(),
        CursorCodec::new([4; 32]),
    );
    (clock, prompts)
}
