//! Content-addressed blob storage in a local directory: the embedded default of
//! `tessera_knowledge::BlobStore`. An upload is written to a temporary file while its
//! SHA-256 is computed, flushed to disk, then renamed to `<root>/sha256/<ab>/<cd>/<hash>`, so
//! a blob is either complete or absent and identical uploads share one file.

use std::{
    io::ErrorKind,
    path::{Path, PathBuf},
};

use async_trait::async_trait;
use futures_util::stream::{self, BoxStream};
use sha2::{Digest, Sha256};
use tessera_knowledge::{BlobError, BlobRef, BlobStore, BlobWriter};
use tokio::{
    fs::{self, File},
    io::{AsyncReadExt, AsyncWriteExt},
};

/// Pieces a download is streamed in.
const READ_PIECE: usize = 64 * 1024;

/// Blobs under a directory.
#[derive(Debug, Clone)]
pub struct LocalBlobStore {
    root: PathBuf,
}

fn io(context: &str, error: std::io::Error) -> BlobError {
    BlobError::Io(format!("{context}: {error}"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl LocalBlobStore {
    /// Uses (and creates) `root`; temporary files left by a crash are removed.
    pub async fn open(root: impl Into<PathBuf>) -> Result<Self, BlobError> {
        let root = root.into();
        let temp = root.join("tmp");
        if fs::metadata(&temp).await.is_ok() {
            fs::remove_dir_all(&temp)
                .await
                .map_err(|e| io("cannot clear the temporary directory", e))?;
        }
        fs::create_dir_all(&temp)
            .await
            .map_err(|e| io(&format!("cannot create {}", temp.display()), e))?;
        fs::create_dir_all(root.join("sha256"))
            .await
            .map_err(|e| io("cannot create the blob directory", e))?;
        Ok(Self { root })
    }

    /// Where a blob lives; `None` for a name that is not a SHA-256 (never a path outside).
    fn path(&self, sha256: &str) -> Option<PathBuf> {
        let valid = sha256.len() == 64
            && sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then(|| {
            self.root
                .join("sha256")
                .join(&sha256[0..2])
                .join(&sha256[2..4])
                .join(sha256)
        })
    }

    fn existing(&self, sha256: &str) -> Result<PathBuf, BlobError> {
        self.path(sha256)
            .ok_or_else(|| BlobError::NotFound(sha256.to_owned()))
    }
}

async fn open_existing(path: &Path, sha256: &str) -> Result<File, BlobError> {
    File::open(path).await.map_err(|error| {
        if error.kind() == ErrorKind::NotFound {
            BlobError::NotFound(sha256.to_owned())
        } else {
            io("cannot open a blob", error)
        }
    })
}

struct LocalWriter {
    root: PathBuf,
    temp: PathBuf,
    file: Option<File>,
    hasher: Sha256,
    size: u64,
}

impl Drop for LocalWriter {
    fn drop(&mut self) {
        // Not committed (or the commit failed): discard the partial upload.
        if self.file.is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

#[async_trait]
impl BlobWriter for LocalWriter {
    async fn write(&mut self, piece: &[u8]) -> Result<(), BlobError> {
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| BlobError::Io("the upload was already committed".into()))?;
        file.write_all(piece)
            .await
            .map_err(|e| io("cannot write an upload", e))?;
        self.hasher.update(piece);
        self.size += piece.len() as u64;
        Ok(())
    }

    async fn commit(mut self: Box<Self>) -> Result<BlobRef, BlobError> {
        let Some(mut file) = self.file.take() else {
            return Err(BlobError::Io("the upload was already committed".into()));
        };
        let sha256 = hex(&std::mem::take(&mut self.hasher).finalize());
        let store = LocalBlobStore {
            root: self.root.clone(),
        };
        let target = store.existing(&sha256)?;
        let result = async {
            file.flush()
                .await
                .map_err(|e| io("cannot flush an upload", e))?;
            file.sync_all()
                .await
                .map_err(|e| io("cannot sync an upload", e))?;
            drop(file);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent)
                    .await
                    .map_err(|e| io("cannot create a blob directory", e))?;
            }
            // Same content already stored: the rename replaces it with identical bytes.
            fs::rename(&self.temp, &target)
                .await
                .map_err(|e| io("cannot move an upload into place", e))
        }
        .await;
        if result.is_err() {
            let _ = fs::remove_file(&self.temp).await;
        }
        result?;
        Ok(BlobRef {
            sha256,
            size: self.size,
        })
    }
}

#[async_trait]
impl BlobStore for LocalBlobStore {
    async fn writer(&self) -> Result<Box<dyn BlobWriter>, BlobError> {
        let temp = self
            .root
            .join("tmp")
            .join(uuid::Uuid::now_v7().simple().to_string());
        let file = File::create(&temp)
            .await
            .map_err(|e| io("cannot create a temporary file", e))?;
        Ok(Box::new(LocalWriter {
            root: self.root.clone(),
            temp,
            file: Some(file),
            hasher: Sha256::new(),
            size: 0,
        }))
    }

    async fn read(&self, sha256: &str) -> Result<Vec<u8>, BlobError> {
        let path = self.existing(sha256)?;
        let mut file = open_existing(&path, sha256).await?;
        let mut content = Vec::new();
        file.read_to_end(&mut content)
            .await
            .map_err(|e| io("cannot read a blob", e))?;
        Ok(content)
    }

    async fn stream(
        &self,
        sha256: &str,
    ) -> Result<BoxStream<'static, Result<Vec<u8>, BlobError>>, BlobError> {
        let path = self.existing(sha256)?;
        let file = open_existing(&path, sha256).await?;
        let pieces = stream::try_unfold(file, |mut file| async move {
            let mut piece = vec![0; READ_PIECE];
            let read = file
                .read(&mut piece)
                .await
                .map_err(|e| io("cannot read a blob", e))?;
            if read == 0 {
                return Ok(None);
            }
            piece.truncate(read);
            Ok(Some((piece, file)))
        });
        Ok(Box::pin(pieces))
    }

    async fn delete(&self, sha256: &str) -> Result<(), BlobError> {
        // A name that is not a SHA-256 names no blob: there is nothing to remove, which the
        // port says is not an error.
        let Some(path) = self.path(sha256) else {
            return Ok(());
        };
        match fs::remove_file(&path).await {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == ErrorKind::NotFound => Ok(()),
            Err(error) => Err(io("cannot delete a blob", error)),
        }
    }
}
