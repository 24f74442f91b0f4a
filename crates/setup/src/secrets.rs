//! Server-side keys: the cursor-signing key comes from `cursor_secret`, or from a random key
//! generated once into `data_dir/cursor.key` (embedded mode, single node); the key of the
//! HMAC that API key secrets are stored under comes from `api_key_secret`, or likewise from
//! `data_dir/api-key.key`; the key MCP servers' header values are encrypted under comes from
//! `mcp.header_secret`, or from `data_dir/mcp-header.key`.

use std::path::Path;

use sha2::{Digest, Sha256};
use tessera_kernel::CursorCodec;

use crate::config::Settings;

/// The cursor codec for these settings.
pub fn cursor_codec(settings: &Settings) -> Result<CursorCodec, String> {
    let key: [u8; 32] = match &settings.cursor_secret {
        Some(secret) => Sha256::digest(secret.expose().as_bytes()).into(),
        None => load_or_create_key(&settings.data_dir.join("cursor.key"))?,
    };
    Ok(CursorCodec::new(key))
}

/// The key API key secrets are hashed with (HMAC-SHA256) for these settings.
pub fn api_key_hash_key(settings: &Settings) -> Result<[u8; 32], String> {
    match &settings.api_key_secret {
        Some(secret) => Ok(Sha256::digest(secret.expose().as_bytes()).into()),
        None => load_or_create_key(&settings.data_dir.join("api-key.key")),
    }
}

/// The key MCP servers' header values are encrypted under, for these settings.
pub fn mcp_header_key(settings: &Settings) -> Result<[u8; 32], String> {
    match &settings.mcp.header_secret {
        Some(secret) => Ok(Sha256::digest(secret.expose().as_bytes()).into()),
        None => load_or_create_key(&settings.data_dir.join("mcp-header.key")),
    }
}

fn load_or_create_key(path: &Path) -> Result<[u8; 32], String> {
    if let Ok(text) = std::fs::read_to_string(path) {
        return decode_hex(text.trim()).ok_or_else(|| {
            format!(
                "{} is not a 64-digit hex key; delete it to generate a new one",
                path.display()
            )
        });
    }
    let key: [u8; 32] = rand::random();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut file) => {
            std::io::Write::write_all(&mut file, hex.as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            Ok(key)
        }
        // Another process created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => load_or_create_key(path),
        Err(e) => Err(format!("cannot write {}: {e}", path.display())),
    }
}

fn decode_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_key_is_kept_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            data_dir: dir.path().to_path_buf(),
            ..Settings::default()
        };
        let first = cursor_codec(&settings).unwrap().encode("list", "", &1);
        let second = cursor_codec(&settings).unwrap();
        assert_eq!(second.decode::<i32>("list", "", first.as_str()), Ok(1));
    }

    #[test]
    fn the_api_key_hash_key_is_configured_or_kept_apart_from_the_cursor_key() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            data_dir: dir.path().to_path_buf(),
            ..Settings::default()
        };
        let generated = api_key_hash_key(&settings).unwrap();
        assert_eq!(api_key_hash_key(&settings).unwrap(), generated);
        assert!(dir.path().join("api-key.key").exists());
        let cursor = load_or_create_key(&dir.path().join("cursor.key")).unwrap();
        assert_ne!(cursor, generated);
        let configured = Settings {
            api_key_secret: Some(crate::config::Secret::new("x".repeat(32))),
            ..settings
        };
        let key = api_key_hash_key(&configured).unwrap();
        assert_ne!(key, generated);
        assert_eq!(api_key_hash_key(&configured).unwrap(), key);
    }

    #[test]
    fn corrupt_key_file_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cursor.key"), "xyz").unwrap();
        let settings = Settings {
            data_dir: dir.path().to_path_buf(),
            ..Settings::default()
        };
        assert!(cursor_codec(&settings).unwrap_err().contains("cursor.key"));
    }
}
