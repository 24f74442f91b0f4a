//! Opaque keyset cursors. A cursor is `base64url(json position) "." base64url(tag)`, where
//! the tag is an HMAC-SHA256 (truncated to 128 bits) over the list's name, the list's owner
//! (the organization, and the parent record for a nested list) and the position, keyed by a
//! server secret. Clients cannot forge or edit a cursor, nor replay one list's cursor against
//! another list or another organization's list: each is refused as a validation error, never
//! a 500.

use std::sync::Arc;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit, Mac};
use serde::{Serialize, de::DeserializeOwned};
use sha2::Sha256;

use crate::{DomainError, FieldError};

const TAG_LEN: usize = 16;

/// An encoded cursor, as handed to and received from clients.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Cursor(String);

impl Cursor {
    /// Wraps an already-encoded cursor string (as received from a client).
    pub fn from_encoded(encoded: impl Into<String>) -> Self {
        Self(encoded.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a cursor was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("cursor is malformed")]
    Malformed,
    #[error("cursor was not issued by this service for this list of this organization")]
    Forged,
}

impl From<CursorError> for DomainError {
    fn from(error: CursorError) -> Self {
        DomainError::Validation(vec![FieldError::new(
            ["query".into(), "cursor".into()],
            format!("{error}; pass a nextCursor value from the previous page unchanged"),
            "cursor_invalid",
        )])
    }
}

/// Encodes and verifies cursors with a server-side secret.
///
/// ```
/// use tessera_kernel::CursorCodec;
/// let codec = CursorCodec::new([7; 32]);
/// let cursor = codec.encode("chats", "org_a", &"chat_9");
/// assert!(codec.decode::<String>("chats", "org_a", cursor.as_str()).is_ok());
/// assert!(codec.decode::<String>("chats", "org_b", cursor.as_str()).is_err());
/// ```
#[derive(Clone)]
pub struct CursorCodec {
    key: Arc<[u8; 32]>,
}

impl std::fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorCodec { key: <redacted> }")
    }
}

impl CursorCodec {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key: Arc::new(key) }
    }

    /// The owner of a nested list: the organization and the parent record (e.g. a dataset's
    /// files belong to `org_…/ds_…`).
    pub fn owner(organization: &str, parent: &str) -> String {
        format!("{organization}/{parent}")
    }

    fn tag(&self, list: &str, owner: &str, payload: &[u8]) -> [u8; TAG_LEN] {
        // A 32-byte key is always accepted by HMAC; the fallback is unreachable.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(self.key.as_slice())
            .unwrap_or_else(|_| <Hmac<Sha256> as KeyInit>::new(&Default::default()));
        // NUL separates the parts: names and ids never contain it, so no two (list, owner)
        // pairs feed the MAC the same bytes.
        mac.update(list.as_bytes());
        mac.update(&[0]);
        mac.update(owner.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&full[..TAG_LEN]);
        tag
    }

    /// Encodes a position in the list named `list` (e.g. `"particles"`) that belongs to
    /// `owner`: the organization's id, followed by the parent record's id for a nested list
    /// (see [`CursorCodec::owner`]); `""` for a list that spans organizations.
    pub fn encode<K: Serialize>(&self, list: &str, owner: &str, position: &K) -> Cursor {
        // Serializing plain keys (strings, numbers, tuples of them) cannot fail.
        let payload = serde_json::to_vec(position).unwrap_or_default();
        let tag = self.tag(list, owner, &payload);
        Cursor(format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        ))
    }

    /// Decodes a cursor issued by [`CursorCodec::encode`] for the same list and owner.
    pub fn decode<K: DeserializeOwned>(
        &self,
        list: &str,
        owner: &str,
        cursor: &str,
    ) -> Result<K, CursorError> {
        let (payload, tag) = cursor.split_once('.').ok_or(CursorError::Malformed)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| CursorError::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| CursorError::Malformed)?;
        if tag.len() != TAG_LEN {
            return Err(CursorError::Malformed);
        }
        let expected = self.tag(list, owner, &payload);
        // Constant-time comparison: the tag is a secret-derived value.
        let difference = expected
            .iter()
            .zip(&tag)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if difference != 0 {
            return Err(CursorError::Forged);
        }
        serde_json::from_slice(&payload).map_err(|_| CursorError::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec() -> CursorCodec {
        CursorCodec::new([7; 32])
    }

    #[test]
    fn round_trips_a_position() {
        let cursor = codec().encode("organizations", "", &("org_1", 42_i64));
        let decoded: (String, i64) = codec()
            .decode("organizations", "", cursor.as_str())
            .unwrap();
        assert_eq!(decoded, ("org_1".to_owned(), 42));
    }

    #[test]
    fn refuses_edits_other_lists_and_other_keys() {
        let cursor = codec().encode("organizations", "", &"org_1");
        let (payload, tag) = cursor.as_str().split_once('.').unwrap();
        let edited = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(b"\"org_2\""));
        assert_eq!(
            codec().decode::<String>("organizations", "", &edited),
            Err(CursorError::Forged)
        );
        assert_eq!(
            codec().decode::<String>("particles", "", cursor.as_str()),
            Err(CursorError::Forged)
        );
        assert_eq!(
            CursorCodec::new([8; 32]).decode::<String>("organizations", "", cursor.as_str()),
            Err(CursorError::Forged)
        );
        assert!(payload.len() > 2);
    }

    #[test]
    fn refuses_another_owners_cursor() {
        let cursor = codec().encode("particles", "org_b", &"prt_1");
        assert_eq!(
            codec().decode::<String>("particles", "org_a", cursor.as_str()),
            Err(CursorError::Forged)
        );
        let nested = codec().encode("files", &CursorCodec::owner("org_a", "ds_1"), &"file_1");
        assert_eq!(
            codec().decode::<String>(
                "files",
                &CursorCodec::owner("org_a", "ds_2"),
                nested.as_str()
            ),
            Err(CursorError::Forged)
        );
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        let split = codec().encode("ab", "c", &1);
        assert_eq!(
            codec().decode::<i32>("a", "bc", split.as_str()),
            Err(CursorError::Forged)
        );
    }

    #[test]
    fn refuses_garbage_as_malformed() {
        for garbage in ["", "abc", "abc.def", "!!!.???", "e30.AAAA"] {
            assert_eq!(
                codec().decode::<String>("organizations", "", garbage),
                Err(CursorError::Malformed),
                "{garbage}"
            );
        }
    }

    #[test]
    fn maps_to_a_validation_error_on_the_cursor_parameter() {
        let DomainError::Validation(errors) = DomainError::from(CursorError::Forged) else {
            panic!("not a validation error")
        };
        assert_eq!(errors[0].loc, vec!["query".into(), "cursor".into()]);
        assert_eq!(errors[0].kind, "cursor_invalid");
    }
}
