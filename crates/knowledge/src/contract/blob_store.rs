//! The `BlobStore` contract, for anyone implementing the port: each check states promises
//! of the trait against a fresh, empty store, and
//! [`blob_store_contract!`](crate::blob_store_contract) turns them into tests. A blob is
//! named by the lowercase hex SHA-256 of its content and read back whole or streamed, empty
//! or large; identical uploads share one blob; an upload dropped before `commit` leaves
//! nothing; a missing blob is `NotFound`, a name that is not a SHA-256 never reads anything;
//! deleting is idempotent; uploads at the same time neither mix nor fail. Tessera runs it
//! against the local directory store and, on moto's S3 server, the S3 store.

use std::sync::Arc;

use futures_util::TryStreamExt;

use crate::{BlobError, BlobRef, BlobStore};

/// Runs every check of the `BlobStore` contract as a `#[tokio::test]` of the calling crate,
/// each on its own store made by `$factory`: an expression that, called with no argument,
/// gives a future of `(store, guard)`, `store` an `Arc<dyn BlobStore>` (the guard, e.g. a
/// temporary directory, is dropped after the store).
///
/// `blob_store_contract!(@in_sequence $factory)` instead runs every check in turn inside the
/// test that calls it, each on a fresh store: for a store behind a server the test starts
/// once.
#[macro_export]
macro_rules! blob_store_contract {
    (@in_sequence $factory:expr) => {
        $crate::blob_store_contract! { @checks in_sequence $factory }
    };
    // The one list of the contract's checks, run in the named way.
    (@checks $mode:ident $factory:expr) => {
        $crate::__adapter_contract_checks! { $mode $factory, blob_store;
            content_is_named_by_its_sha256_and_read_back_whole_and_streamed,
            an_empty_upload_is_a_blob_of_no_bytes,
            a_large_binary_upload_in_uneven_pieces_reads_back_intact,
            identical_uploads_share_one_blob,
            an_upload_dropped_before_commit_leaves_nothing,
            missing_blobs_are_not_found,
            deleting_removes_the_blob_and_is_idempotent,
            names_that_are_not_sha256_hashes_never_read_a_blob,
            uploads_in_progress_at_once_do_not_mix,
            concurrent_identical_uploads_all_commit,
        }
    };
    ($factory:expr) => {
        $crate::blob_store_contract! { @checks tests $factory }
    };
}

/// The SHA-256 of no bytes.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// The SHA-256 of `hello world`.
pub const HELLO_WORLD_SHA256: &str =
    "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";

/// Uploads `pieces` in turn and commits them.
pub async fn put(store: &dyn BlobStore, pieces: &[&[u8]]) -> BlobRef {
    let mut writer = store.writer().await.expect("an upload starts");
    for piece in pieces {
        writer.write(piece).await.expect("a piece is written");
    }
    writer.commit().await.expect("the upload commits")
}

/// The content of `sha256` as streamed, its pieces joined.
pub async fn streamed(store: &dyn BlobStore, sha256: &str) -> Vec<u8> {
    let pieces: Vec<Vec<u8>> = (store.stream(sha256).await.expect("the stream opens"))
        .try_collect()
        .await
        .expect("every piece is read");
    pieces.concat()
}

/// `bytes` bytes of every value, in a sequence that does not repeat every 256 bytes.
pub fn binary_content(bytes: usize) -> Vec<u8> {
    (0..bytes).map(|i| (i * 7 + i / 256) as u8).collect()
}

/// Whether `result` is `NotFound` naming `sha256`.
pub fn is_not_found<T>(result: &Result<T, BlobError>, sha256: &str) -> bool {
    matches!(result, Err(BlobError::NotFound(name)) if name == sha256)
}

/// Panics unless `sha256` is neither read nor streamed: both are `NotFound` naming it (a
/// download can answer so before sending anything).
pub async fn assert_not_found(store: &dyn BlobStore, sha256: &str) {
    let read = store.read(sha256).await;
    assert!(is_not_found(&read, sha256), "read {sha256:?}: {read:?}");
    let stream = store.stream(sha256).await.map(|_| ());
    assert!(
        is_not_found(&stream, sha256),
        "stream {sha256:?}: {stream:?}"
    );
}

/// Content uploaded in pieces is named by its SHA-256 (lowercase hex) with its size, and
/// read back whole and streamed.
pub async fn content_is_named_by_its_sha256_and_read_back_whole_and_streamed(
    store: &Arc<dyn BlobStore>,
) {
    let blob = put(&**store, &[b"hello ", b"world"]).await;
    assert_eq!(
        blob,
        BlobRef {
            sha256: HELLO_WORLD_SHA256.into(),
            size: 11,
        }
    );
    assert_eq!(store.read(&blob.sha256).await.unwrap(), b"hello world");
    assert_eq!(streamed(&**store, &blob.sha256).await, b"hello world");
}

/// Committing without writing stores the empty blob, read back as no bytes.
pub async fn an_empty_upload_is_a_blob_of_no_bytes(store: &Arc<dyn BlobStore>) {
    let writer = store.writer().await.unwrap();
    let blob = writer.commit().await.unwrap();
    assert_eq!(
        blob,
        BlobRef {
            sha256: EMPTY_SHA256.into(),
            size: 0,
        }
    );
    assert_eq!(store.read(EMPTY_SHA256).await.unwrap(), b"");
    assert_eq!(streamed(&**store, EMPTY_SHA256).await, b"");
    // An empty piece adds nothing.
    assert_eq!(put(&**store, &[b"", b"hello world", b""]).await.size, 11);
}

/// Six MiB and a few bytes of every byte value (past common multipart part sizes), written
/// in pieces of uneven sizes, read back byte for byte, whole and streamed; the same content
/// in one piece has the same name.
pub async fn a_large_binary_upload_in_uneven_pieces_reads_back_intact(store: &Arc<dyn BlobStore>) {
    let content = binary_content(6 * 1024 * 1024 + 7);
    let mut pieces = Vec::new();
    let mut rest = &content[..];
    for size in [1, 4095, 65_536, 1_000_003, 17].into_iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (piece, after) = rest.split_at(size.min(rest.len()));
        pieces.push(piece);
        rest = after;
    }
    let blob = put(&**store, &pieces).await;
    assert_eq!(blob.size, content.len() as u64);
    assert!(
        blob.sha256.len() == 64
            && (blob.sha256.bytes()).all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{blob:?}"
    );
    // Not `assert_eq!`: a failure would print megabytes.
    assert!(
        store.read(&blob.sha256).await.unwrap() == content,
        "read back"
    );
    assert!(
        streamed(&**store, &blob.sha256).await == content,
        "streamed"
    );
    assert_eq!(put(&**store, &[&content]).await, blob);
}

/// The same content uploaded again, in other pieces, is the same blob: one delete removes
/// it. Other content is another blob.
pub async fn identical_uploads_share_one_blob(store: &Arc<dyn BlobStore>) {
    let first = put(&**store, &[b"same"]).await;
    let second = put(&**store, &[b"sa", b"me"]).await;
    assert_eq!(first, second);
    let other = put(&**store, &[b"Same"]).await;
    assert_ne!(other.sha256, first.sha256);

    store.delete(&first.sha256).await.unwrap();
    assert_not_found(&**store, &first.sha256).await;
    assert_eq!(store.read(&other.sha256).await.unwrap(), b"Same");
}

/// An upload dropped before `commit` stores nothing under its content's name, even after
/// that content was stored and deleted.
pub async fn an_upload_dropped_before_commit_leaves_nothing(store: &Arc<dyn BlobStore>) {
    // The name of the content, learnt by storing it once.
    let name = put(&**store, &[b"never committed"]).await.sha256;
    store.delete(&name).await.unwrap();

    let mut dropped = store.writer().await.unwrap();
    dropped.write(b"never ").await.unwrap();
    dropped.write(b"committed").await.unwrap();
    drop(dropped);
    assert_not_found(&**store, &name).await;
    // Nor does an upload dropped without a piece store the empty blob.
    drop(store.writer().await.unwrap());
    assert_not_found(&**store, EMPTY_SHA256).await;
}

/// Reading or streaming a blob never stored is `NotFound`, naming it.
pub async fn missing_blobs_are_not_found(store: &Arc<dyn BlobStore>) {
    put(&**store, &[b"something else"]).await;
    let zeros = "0".repeat(64);
    for name in [zeros.as_str(), HELLO_WORLD_SHA256, EMPTY_SHA256] {
        assert_not_found(&**store, name).await;
    }
}

/// A deleted blob is not found; deleting it again, or a blob never stored, is not an error;
/// the same content uploaded again is stored again.
pub async fn deleting_removes_the_blob_and_is_idempotent(store: &Arc<dyn BlobStore>) {
    let blob = put(&**store, &[b"short-lived"]).await;
    store.delete(&blob.sha256).await.unwrap();
    assert_not_found(&**store, &blob.sha256).await;
    store.delete(&blob.sha256).await.expect("deleting again");
    store
        .delete(&"0".repeat(64))
        .await
        .expect("deleting nothing");

    assert_eq!(put(&**store, &[b"short-lived"]).await, blob);
    assert_eq!(store.read(&blob.sha256).await.unwrap(), b"short-lived");
    assert_eq!(streamed(&**store, &blob.sha256).await, b"short-lived");
}

/// Names that are not a lowercase hex SHA-256 (the stored blob's name in capitals, cut,
/// lengthened, or within a path; paths; nothing) are `NotFound`, never another blob or file;
/// deleting them leaves the stored blob alone.
pub async fn names_that_are_not_sha256_hashes_never_read_a_blob(store: &Arc<dyn BlobStore>) {
    let blob = put(&**store, &[b"kept"]).await;
    let name = &blob.sha256;
    let names = [
        name.to_uppercase(),
        name[..63].to_owned(),
        format!("{name}0"),
        format!("{name}\n"),
        format!("../{name}"),
        format!("sha256/{}/{}/{name}", &name[..2], &name[2..4]),
        name[..2].to_owned(),
        "../../etc/passwd".to_owned(),
        ".".to_owned(),
        String::new(),
    ];
    for other in &names {
        assert_not_found(&**store, other).await;
    }
    for other in &names {
        // No blob has such a name, and removing one that does not exist is not an error.
        let deleted = store.delete(other).await;
        assert!(deleted.is_ok(), "delete {other:?}: {deleted:?}");
    }
    assert_eq!(store.read(name).await.unwrap(), b"kept");
}

/// Two uploads written in turns, piece by piece, commit each its own content.
pub async fn uploads_in_progress_at_once_do_not_mix(store: &Arc<dyn BlobStore>) {
    let mut first = store.writer().await.unwrap();
    let mut second = store.writer().await.unwrap();
    for (a, b) in [
        (&b"alpha "[..], &b"one "[..]),
        (b"beta ", b"two "),
        (b"gamma", b"three"),
    ] {
        first.write(a).await.unwrap();
        second.write(b).await.unwrap();
    }
    let second = second.commit().await.unwrap();
    let first = first.commit().await.unwrap();
    assert_eq!(
        store.read(&first.sha256).await.unwrap(),
        b"alpha beta gamma"
    );
    assert_eq!(store.read(&second.sha256).await.unwrap(), b"one two three");
    assert_eq!((first.size, second.size), (16, 13));
}

/// Eight uploads of the same content at the same time all commit, to the same blob (storing
/// content already stored is no error), which reads back whole.
pub async fn concurrent_identical_uploads_all_commit(store: &Arc<dyn BlobStore>) {
    let content = Arc::new(binary_content(300_000));
    let uploads: Vec<_> = (0..8)
        .map(|_| {
            let (store, content) = (Arc::clone(store), Arc::clone(&content));
            tokio::spawn(async move {
                let pieces: Vec<&[u8]> = content.chunks(50_000).collect();
                put(&*store, &pieces).await
            })
        })
        .collect();
    let mut blobs = Vec::new();
    for upload in uploads {
        blobs.push(upload.await.expect("the upload's task"));
    }
    assert!(blobs.windows(2).all(|pair| pair[0] == pair[1]), "{blobs:?}");
    assert!(
        store.read(&blobs[0].sha256).await.unwrap() == *content,
        "read back"
    );
}
