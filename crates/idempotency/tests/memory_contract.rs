//! The `IdempotencyStore` contract on the in-memory reference store, every check of it, so
//! that the suite itself is checked against the behaviour it stands for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use tessera_idempotency::memory::InMemoryIdempotencyStore;

tessera_idempotency::idempotency_store_contract!(|| async {
    (Arc::new(InMemoryIdempotencyStore::new()), ())
});
