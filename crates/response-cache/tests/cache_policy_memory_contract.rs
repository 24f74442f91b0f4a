//! The `CachePolicyStore` contract on the in-memory reference store, every check of it, so
//! that the suite itself is checked against the behaviour it stands for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cache_policies {
    use std::sync::Arc;

    use tessera_response_cache::memory::InMemoryCachePolicyStore;

    tessera_response_cache::cache_policy_store_contract!(|| async {
        (Arc::new(InMemoryCachePolicyStore::new()), ())
    });
}
