//! What the model tests share: a catalog of two local base models and a whitespace token
//! counter for the prompt service.

use tessera_prompts::TokenCounter;

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
