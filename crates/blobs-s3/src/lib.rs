//! Content-addressed blob storage in S3-compatible object storage (AWS S3, MinIO, Ceph,
//! R2…) through the `object_store` crate: the scale-out `tessera_knowledge::BlobStore`, which
//! every replica shares. An upload is spooled to a local temporary file while its SHA-256 is
//! computed (nothing is sent before the content is known and accepted), then stored under
//! `<prefix>sha256/<ab>/<cd>/<hash>` in one request, or as a multipart upload when large. An
//! upload dropped before `commit` leaves nothing behind; identical uploads share one object.

use std::{path::PathBuf, sync::Arc};

#[cfg(feature = "testing")]
pub mod testing;

use async_trait::async_trait;
use futures_util::{StreamExt, TryStreamExt, stream::BoxStream};
use object_store::{
    ObjectStore, PutPayload, WriteMultipart,
    aws::{AmazonS3, AmazonS3Builder},
    path::Path as ObjectPath,
};
use sha2::{Digest, Sha256};
use tessera_knowledge::{BlobError, BlobRef, BlobStore, BlobWriter};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// Above this size a blob goes up as a multipart upload, in parts of this size.
const PART: usize = 8 * 1024 * 1024;

/// Where the blobs go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Location {
    pub bucket: String,
    /// A key prefix, e.g. `tessera/` (empty for the bucket's root).
    pub prefix: String,
    /// An S3-compatible endpoint (MinIO, Ceph, R2); `None` for AWS.
    pub endpoint: Option<String>,
    /// `None` takes `AWS_REGION` / `AWS_DEFAULT_REGION`, else `us-east-1`.
    pub region: Option<String>,
    /// Allow plain `http://` endpoints (a local MinIO).
    pub allow_http: bool,
}

/// Blobs in a bucket.
#[derive(Debug, Clone)]
pub struct S3BlobStore {
    store: Arc<AmazonS3>,
    prefix: String,
    spool: PathBuf,
}

fn failed(context: &str, error: impl std::fmt::Display) -> BlobError {
    BlobError::Io(format!("{context}: {error}"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn valid_name(sha256: &str) -> bool {
    sha256.len() == 64
        && sha256
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl S3BlobStore {
    /// A store in `location`, with credentials from the environment (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, or the instance's role); uploads are
    /// spooled under `spool` (created if missing). No request is made.
    pub fn connect(location: &S3Location, spool: impl Into<PathBuf>) -> Result<Self, BlobError> {
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(&location.bucket)
            .with_allow_http(location.allow_http);
        if let Some(endpoint) = &location.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        if let Some(region) = &location.region {
            builder = builder.with_region(region);
        }
        Self::with_builder(builder, &location.prefix, spool)
    }

    /// As [`Self::connect`], with explicit credentials.
    pub fn connect_with_keys(
        location: &S3Location,
        access_key_id: &str,
        secret_access_key: &str,
        spool: impl Into<PathBuf>,
    ) -> Result<Self, BlobError> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&location.bucket)
            .with_allow_http(location.allow_http)
            .with_access_key_id(access_key_id)
            .with_secret_access_key(secret_access_key)
            .with_region(location.region.as_deref().unwrap_or("us-east-1"));
        if let Some(endpoint) = &location.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        Self::with_builder(builder, &location.prefix, spool)
    }

    fn with_builder(
        builder: AmazonS3Builder,
        prefix: &str,
        spool: impl Into<PathBuf>,
    ) -> Result<Self, BlobError> {
        // The HTTP client's rustls needs a process-wide crypto provider; keep the one the
        // process installed, or install the same one the API does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let store = builder
            .build()
            .map_err(|e| failed("the S3 configuration", e))?;
        let spool = spool.into();
        std::fs::create_dir_all(&spool)
            .map_err(|e| failed(&format!("cannot create {}", spool.display()), e))?;
        Ok(Self {
            store: Arc::new(store),
            prefix: prefix.to_owned(),
            spool,
        })
    }

    /// The key of a blob; `None` for a name that is not a SHA-256.
    fn key(&self, sha256: &str) -> Option<ObjectPath> {
        valid_name(sha256).then(|| {
            ObjectPath::from(format!(
                "{}sha256/{}/{}/{sha256}",
                self.prefix,
                &sha256[0..2],
                &sha256[2..4]
            ))
        })
    }

    fn existing(&self, sha256: &str) -> Result<ObjectPath, BlobError> {
        self.key(sha256)
            .ok_or_else(|| BlobError::NotFound(sha256.to_owned()))
    }
}

fn read_error(sha256: &str, error: object_store::Error) -> BlobError {
    match error {
        object_store::Error::NotFound { .. } => BlobError::NotFound(sha256.to_owned()),
        other => failed(&format!("reading blob {sha256}"), other),
    }
}

/// An upload in progress: a spooled temporary file (deleted when dropped) and its hash.
struct S3Writer {
    store: S3BlobStore,
    file: tokio::fs::File,
    _spooled: tempfile::TempPath,
    hasher: Sha256,
    size: u64,
}

#[async_trait]
impl BlobWriter for S3Writer {
    async fn write(&mut self, piece: &[u8]) -> Result<(), BlobError> {
        self.file
            .write_all(piece)
            .await
            .map_err(|e| failed("spooling the upload", e))?;
        self.hasher.update(piece);
        self.size += piece.len() as u64;
        Ok(())
    }

    async fn commit(mut self: Box<Self>) -> Result<BlobRef, BlobError> {
        let sha256 = hex(&std::mem::take(&mut self.hasher).finalize());
        let key = self.store.existing(&sha256)?;
        let stored = BlobRef {
            sha256: sha256.clone(),
            size: self.size,
        };
        match self.store.store.head(&key).await {
            Ok(_) => return Ok(stored),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(error) => return Err(failed("checking for the blob", error)),
        }
        self.file
            .flush()
            .await
            .map_err(|e| failed("spooling the upload", e))?;
        self.file
            .rewind()
            .await
            .map_err(|e| failed("reading the spooled upload", e))?;
        if self.size <= PART as u64 {
            let mut content = Vec::with_capacity(usize::try_from(self.size).unwrap_or(0));
            self.file
                .read_to_end(&mut content)
                .await
                .map_err(|e| failed("reading the spooled upload", e))?;
            self.store
                .store
                .put(&key, PutPayload::from(content))
                .await
                .map_err(|e| failed("storing the blob", e))?;
            return Ok(stored);
        }
        let upload = self
            .store
            .store
            .put_multipart(&key)
            .await
            .map_err(|e| failed("starting the multipart upload", e))?;
        let mut parts = WriteMultipart::new_with_chunk_size(upload, PART);
        let mut piece = vec![0_u8; 1024 * 1024];
        loop {
            let read = match self.file.read(&mut piece).await {
                Ok(read) => read,
                Err(error) => {
                    let _ = parts.abort().await;
                    return Err(failed("reading the spooled upload", error));
                }
            };
            if read == 0 {
                break;
            }
            if let Err(error) = parts.wait_for_capacity(2).await {
                let _ = parts.abort().await;
                return Err(failed("uploading a part", error));
            }
            parts.write(&piece[..read]);
        }
        parts
            .finish()
            .await
            .map_err(|e| failed("finishing the multipart upload", e))?;
        Ok(stored)
    }
}

#[async_trait]
impl BlobStore for S3BlobStore {
    async fn writer(&self) -> Result<Box<dyn BlobWriter>, BlobError> {
        let spooled = tempfile::NamedTempFile::new_in(&self.spool)
            .map_err(|e| failed("cannot create a spool file", e))?;
        let (file, path) = spooled.into_parts();
        Ok(Box::new(S3Writer {
            store: self.clone(),
            file: tokio::fs::File::from_std(file),
            _spooled: path,
            hasher: Sha256::new(),
            size: 0,
        }))
    }

    async fn read(&self, sha256: &str) -> Result<Vec<u8>, BlobError> {
        let key = self.existing(sha256)?;
        let object = self
            .store
            .get(&key)
            .await
            .map_err(|e| read_error(sha256, e))?;
        let bytes = object.bytes().await.map_err(|e| read_error(sha256, e))?;
        Ok(bytes.to_vec())
    }

    async fn stream(
        &self,
        sha256: &str,
    ) -> Result<BoxStream<'static, Result<Vec<u8>, BlobError>>, BlobError> {
        let key = self.existing(sha256)?;
        let object = self
            .store
            .get(&key)
            .await
            .map_err(|e| read_error(sha256, e))?;
        let name = sha256.to_owned();
        Ok(object
            .into_stream()
            .map_ok(|bytes| bytes.to_vec())
            .map_err(move |e| read_error(&name, e))
            .boxed())
    }

    async fn delete(&self, sha256: &str) -> Result<(), BlobError> {
        let Some(key) = self.key(sha256) else {
            return Ok(());
        };
        match self.store.delete(&key).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(failed(&format!("deleting blob {sha256}"), error)),
        }
    }
}
