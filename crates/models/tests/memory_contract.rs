//! The `ModelStore` and `DatasetLinkStore` contract on the in-memory reference stores, every
//! check of it, so that the suite itself is checked against the behaviour it stands for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tessera_models::contract::MemoryStores;

tessera_models::model_store_contract!(|| async { (MemoryStores::default(), ()) });
