//! The `ParticleStore` and `SystemPromptStore` contract on the in-memory reference store, so
//! that the suite itself is checked against the behaviour it stands for. The integrity
//! checks (duplicate ids, unplaceable particles, a deletion racing a placement) are what the
//! databases enforce beyond the reference, so they run against the SQL stores only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use tessera_prompts::memory::InMemoryPromptStore;

tessera_prompts::prompt_store_contract!(
    || async { (Arc::new(InMemoryPromptStore::new()), ()) },
    behaviour
);
