//! The `FileStore` and `DatasetStore` contract on the in-memory reference store, checking
//! the suite against the behaviour it stands for.

use std::sync::Arc;

use tessera_knowledge::memory::InMemoryKnowledgeStore;

tessera_knowledge::knowledge_store_contract!(|| async {
    (Arc::new(InMemoryKnowledgeStore::new()), ())
});
