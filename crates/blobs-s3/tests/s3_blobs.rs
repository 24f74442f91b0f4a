//! The S3 blob store against a real S3-compatible server: moto's (`tessera_blobs_s3::testing`:
//! installed when missing, started on a free loopback port): the `BlobStore` contract
//! (tessera-knowledge's suite), and what is the adapter's own (multipart uploads, spool
//! files, prefixes, a missing bucket). When moto cannot be installed or started the tests
//! FAIL with the reason: they never pass without having talked to a server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use futures_util::TryStreamExt;
use sha2::{Digest, Sha256};
use tessera_blobs_s3::{
    S3BlobStore, S3Location,
    testing::{self, Moto},
};
use tessera_knowledge::{BlobError, BlobStore};

fn store(moto: &Moto, bucket: &str, prefix: &str, spool: &std::path::Path) -> S3BlobStore {
    S3BlobStore::connect_with_keys(
        &S3Location {
            bucket: bucket.into(),
            prefix: prefix.into(),
            endpoint: Some(moto.endpoint()),
            region: Some("us-east-1".into()),
            allow_http: true,
        },
        "testing",
        "testing",
        spool,
    )
    .unwrap()
}

fn sha256(content: &[u8]) -> String {
    Sha256::digest(content)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

async fn put(store: &S3BlobStore, pieces: &[&[u8]]) -> tessera_knowledge::BlobRef {
    let mut writer = store.writer().await.unwrap();
    for piece in pieces {
        writer.write(piece).await.unwrap();
    }
    writer.commit().await.unwrap()
}

/// Every check of the contract on one moto server, each on its own key prefix of a bucket
/// (a fresh, empty store).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_blob_store_contract_holds_on_an_s3_compatible_server() {
    let moto = testing::start().await;
    moto.create_bucket("tessera-contract").await;
    let spool = tempfile::tempdir().unwrap();
    let checks = AtomicUsize::new(0);
    let (moto, spool, checks) = (&moto, spool.path(), &checks);
    let fresh = move || async move {
        let prefix = format!("check-{}/", checks.fetch_add(1, Ordering::Relaxed));
        let blobs: Arc<dyn BlobStore> = Arc::new(store(moto, "tessera-contract", &prefix, spool));
        (blobs, ())
    };
    tessera_knowledge::blob_store_contract!(@in_sequence fresh);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blobs_round_trip_through_an_s3_compatible_server() {
    let moto = testing::start().await;
    moto.create_bucket("tessera-blobs").await;
    let spool = tempfile::tempdir().unwrap();
    let blobs = store(&moto, "tessera-blobs", "tenant-a/", spool.path());

    // Small: one request; the content is addressed by its hash and read back whole or streamed.
    let small = put(&blobs, &[b"hello ", b"world, caf\xc3\xa9"]).await;
    assert_eq!(small.sha256, sha256("hello world, café".as_bytes()));
    assert_eq!(small.size, 18);
    assert_eq!(
        blobs.read(&small.sha256).await.unwrap(),
        "hello world, café".as_bytes()
    );
    let streamed: Vec<Vec<u8>> = blobs
        .stream(&small.sha256)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(streamed.concat(), "hello world, café".as_bytes());
    // The same content again shares the object.
    assert_eq!(put(&blobs, &[b"hello world, caf\xc3\xa9"]).await, small);

    // Large: a multipart upload (three parts of 8 MiB at most).
    let large: Vec<u8> = (0..20 * 1024 * 1024_u32).map(|i| (i % 251) as u8).collect();
    let pieces: Vec<&[u8]> = large.chunks(700_000).collect();
    let stored = put(&blobs, &pieces).await;
    assert_eq!(
        (stored.sha256.clone(), stored.size),
        (sha256(&large), large.len() as u64)
    );
    assert!(
        blobs.read(&stored.sha256).await.unwrap() == large,
        "the large blob reads back"
    );

    // A dropped upload leaves nothing, and its spool file is gone.
    let mut dropped = blobs.writer().await.unwrap();
    dropped.write(b"never committed").await.unwrap();
    drop(dropped);
    assert!(matches!(
        blobs.read(&sha256(b"never committed")).await,
        Err(BlobError::NotFound(_))
    ));
    assert_eq!(
        std::fs::read_dir(spool.path()).unwrap().count(),
        0,
        "spool files are removed"
    );

    // Unknown and malformed names are not found; deleting is idempotent.
    let unknown = "0".repeat(64);
    assert!(matches!(
        blobs.read(&unknown).await,
        Err(BlobError::NotFound(_))
    ));
    assert!(matches!(
        blobs.stream("../etc/passwd").await.err(),
        Some(BlobError::NotFound(_))
    ));
    blobs.delete(&small.sha256).await.unwrap();
    blobs.delete(&small.sha256).await.unwrap();
    blobs.delete("not-a-hash").await.unwrap();
    assert!(matches!(
        blobs.read(&small.sha256).await,
        Err(BlobError::NotFound(_))
    ));

    // The prefix separates stores sharing a bucket.
    let other = store(&moto, "tessera-blobs", "tenant-b/", spool.path());
    assert!(matches!(
        other.read(&stored.sha256).await,
        Err(BlobError::NotFound(_))
    ));

    // A missing bucket is an error, not a silent loss.
    let missing = store(&moto, "no-such-bucket", "", spool.path());
    let mut writer = missing.writer().await.unwrap();
    writer.write(b"lost?").await.unwrap();
    assert!(matches!(writer.commit().await, Err(BlobError::Io(_))));
}
