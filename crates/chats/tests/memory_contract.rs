//! The `ChatStore` contract on the in-memory reference store, checking the suite against
//! the behaviour it stands for.

use std::sync::Arc;

use tessera_chats::memory::InMemoryChatStore;

tessera_chats::chat_store_contract!(|| async { (Arc::new(InMemoryChatStore::new()), ()) });
