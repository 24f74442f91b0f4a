//! The local blob store on a real temporary directory: the `BlobStore` contract
//! (tessera-knowledge's suite), and what is its own (files on disk, temporary files).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use futures_util::TryStreamExt;
use tessera_blobs_local::LocalBlobStore;
use tessera_knowledge::{BlobError, BlobStore};

const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

async fn put(store: &LocalBlobStore, pieces: &[&[u8]]) -> tessera_knowledge::BlobRef {
    let mut writer = store.writer().await.unwrap();
    for piece in pieces {
        writer.write(piece).await.unwrap();
    }
    writer.commit().await.unwrap()
}

#[tokio::test]
async fn content_is_named_by_its_hash_and_read_back_whole_and_streamed() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::open(dir.path()).await.unwrap();
    let blob = put(&store, &[b"hello ", b"world"]).await;
    // sha256("hello world")
    assert_eq!(
        blob.sha256,
        "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
    );
    assert_eq!(blob.size, 11);
    assert_eq!(store.read(&blob.sha256).await.unwrap(), b"hello world");

    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let blob = put(&store, &[&big[..70_000], &big[70_000..]]).await;
    let pieces: Vec<Vec<u8>> = store
        .stream(&blob.sha256)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(pieces.len() > 1, "streamed in pieces");
    assert_eq!(pieces.concat(), big);
}

#[tokio::test]
async fn an_abandoned_upload_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::open(dir.path()).await.unwrap();
    {
        let mut writer = store.writer().await.unwrap();
        writer.write(b"half an upload").await.unwrap();
    }
    let temp: Vec<_> = std::fs::read_dir(dir.path().join("tmp")).unwrap().collect();
    assert!(temp.is_empty(), "the partial upload was removed");
    assert!(matches!(
        store.read(EMPTY_SHA256).await,
        Err(BlobError::NotFound(_))
    ));
}

#[tokio::test]
async fn names_that_are_not_hashes_never_reach_the_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::open(dir.path().join("blobs"))
        .await
        .unwrap();
    std::fs::write(dir.path().join("secret"), b"x").unwrap();
    for name in ["../secret", "../../etc/passwd", "ABC", ""] {
        assert!(matches!(
            store.read(name).await,
            Err(BlobError::NotFound(_))
        ));
    }
}

#[tokio::test]
async fn reopening_clears_temporary_files_but_keeps_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::open(dir.path()).await.unwrap();
    let blob = put(&store, &[b"kept"]).await;
    std::fs::write(dir.path().join("tmp").join("crashed-upload"), b"x").unwrap();
    let store = LocalBlobStore::open(dir.path()).await.unwrap();
    assert_eq!(store.read(&blob.sha256).await.unwrap(), b"kept");
    assert_eq!(
        std::fs::read_dir(dir.path().join("tmp")).unwrap().count(),
        0
    );
}

/// The contract's checks, each on a fresh directory.
mod contract {
    use std::sync::Arc;

    use tempfile::TempDir;
    use tessera_blobs_local::LocalBlobStore;
    use tessera_knowledge::BlobStore;

    async fn fresh_store() -> (Arc<dyn BlobStore>, TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalBlobStore::open(dir.path()).await.unwrap();
        (Arc::new(store), dir)
    }

    tessera_knowledge::blob_store_contract!(fresh_store);
}
