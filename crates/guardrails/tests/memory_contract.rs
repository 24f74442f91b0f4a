//! The `GuardrailPolicyStore` contract on the in-memory reference store, every check of it,
//! so that the suite itself is checked against the behaviour it stands for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use tessera_guardrails::memory::InMemoryGuardrailPolicyStore;

tessera_guardrails::guardrail_policy_store_contract!(|| async {
    (Arc::new(InMemoryGuardrailPolicyStore::new()), ())
});
