//! The `ClientStore` and `ApiKeyStore` contracts on the in-memory reference stores.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod clients {
    use std::sync::Arc;

    use tessera_identity::memory::InMemoryClientStore;

    tessera_identity::client_store_contract!(|| async {
        (Arc::new(InMemoryClientStore::new()), ())
    });
}

mod api_keys {
    use std::sync::Arc;

    use tessera_identity::memory::InMemoryApiKeyStore;

    tessera_identity::api_key_store_contract!(|| async {
        (Arc::new(InMemoryApiKeyStore::new()), ())
    });
}
