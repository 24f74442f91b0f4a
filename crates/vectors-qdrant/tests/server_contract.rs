//! The `VectorIndex` contract (tessera-knowledge's suite, and the engine's stopwords) on a
//! real Qdrant server, when `QDRANT_URL` names one (the REST port, e.g.
//! `http://localhost:6333`; `QDRANT_API_KEY` if it needs a key). Each check gets its own
//! collection, deleted afterwards.
//!
//! Without `QDRANT_URL` these tests print `skipped: QDRANT_URL not set` and return: they
//! then prove nothing about the server adapter, which is why their names say so.

#![cfg(feature = "server")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod qdrant;

use std::sync::Arc;

use tessera_knowledge::{
    IndexError,
    contract::vector_index::{DIMENSIONS, IndexUnderTest},
};
use tessera_vectors_qdrant::QdrantServerIndex;

/// Where the server is, or `None` (after saying so) when `QDRANT_URL` is unset.
fn server(test: &str) -> Option<Server> {
    match std::env::var("QDRANT_URL") {
        Ok(url) if !url.is_empty() => Some(Server {
            url,
            api_key: std::env::var("QDRANT_API_KEY")
                .ok()
                .filter(|key| !key.is_empty()),
        }),
        _ => {
            eprintln!("skipped: QDRANT_URL not set ({test} did not run against a Qdrant server)");
            None
        }
    }
}

#[derive(Clone)]
struct Server {
    url: String,
    api_key: Option<String>,
}

impl Server {
    /// An index on a new collection, and the guard that deletes the collection.
    async fn fresh_index(&self) -> (IndexUnderTest, DropCollection) {
        let name = format!("tessera_contract_{}", uuid::Uuid::now_v7().simple());
        let guard = DropCollection {
            server: self.clone(),
            name: name.clone(),
        };
        let index =
            QdrantServerIndex::connect(&self.url, self.api_key.as_deref(), &name, DIMENSIONS)
                .await
                .expect("connect to QDRANT_URL");
        (qdrant::under_test(Arc::new(index)), guard)
    }
}

/// Deletes its collection when dropped, also when a contract assertion panicked.
struct DropCollection {
    server: Server,
    name: String,
}

impl Drop for DropCollection {
    fn drop(&mut self) {
        let url = format!(
            "{}/collections/{}",
            self.server.url.trim_end_matches('/'),
            self.name
        );
        let api_key = self.server.api_key.clone();
        // Drop cannot await: delete from a thread with its own small runtime.
        let deleted = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|error| error.to_string())?;
            runtime.block_on(async move {
                let mut request = reqwest::Client::new().delete(&url);
                if let Some(key) = api_key {
                    request = request.header("api-key", key);
                }
                let response = request.send().await.map_err(|error| error.to_string())?;
                if response.status().is_success() {
                    Ok(())
                } else {
                    Err(format!("DELETE {url}: {}", response.status()))
                }
            })
        })
        .join();
        if !matches!(deleted, Ok(Ok(()))) {
            eprintln!(
                "could not delete the Qdrant collection {}: {deleted:?}",
                self.name
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn server_contract_when_qdrant_url_is_set() {
    let Some(server) = server("server_contract_when_qdrant_url_is_set") else {
        return;
    };
    let fresh = || server.fresh_index();
    tessera_knowledge::vector_index_contract!(@in_sequence fresh);
    let (under_test, guard) = fresh().await;
    eprintln!("contract: stopwords_alone_search_densely");
    qdrant::stopwords_alone_search_densely(&*under_test.index).await;
    drop(under_test);
    drop(guard);
}

/// Connecting again to a collection is fine; connecting with other dimensions is `Invalid`
/// (the embedding model changed), and leaves the collection as it was.
#[tokio::test]
async fn server_collection_checks_when_qdrant_url_is_set() {
    let Some(server) = server("server_collection_checks_when_qdrant_url_is_set") else {
        return;
    };
    let (_index, guard) = server.fresh_index().await;
    let again = QdrantServerIndex::connect(
        &server.url,
        server.api_key.as_deref(),
        &guard.name,
        DIMENSIONS,
    )
    .await;
    assert!(again.is_ok(), "{again:?}");
    let other = QdrantServerIndex::connect(
        &server.url,
        server.api_key.as_deref(),
        &guard.name,
        DIMENSIONS + 1,
    )
    .await;
    assert!(matches!(other, Err(IndexError::Invalid(_))), "{other:?}");
}
