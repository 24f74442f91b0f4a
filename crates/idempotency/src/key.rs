use sha2::{Digest, Sha256};

/// Why an `Idempotency-Key` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("must be 1 to 255 characters, got {0}")]
    Length(usize),
    #[error("must contain only visible ASCII characters")]
    Characters,
}

/// A client-chosen key: 1 to 255 visible ASCII characters (a UUID is typical).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub const MAX_LEN: usize = 255;

    pub fn parse(text: &str) -> Result<Self, KeyError> {
        if text.is_empty() || text.len() > Self::MAX_LEN {
            return Err(KeyError::Length(text.len()));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(KeyError::Characters);
        }
        Ok(Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What identifies "the same request": a SHA-256 over the method, the path and query, and
/// the body in canonical form (the caller canonicalizes JSON so that key order and
/// insignificant whitespace do not matter).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fingerprint(String);

impl Fingerprint {
    pub fn of(method: &str, path_and_query: &str, canonical_body: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        for part in [method.as_bytes(), path_and_query.as_bytes()] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part);
        }
        hasher.update(canonical_body);
        Self(
            hasher
                .finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }

    /// A stored fingerprint, as `as_str` wrote it.
    pub fn from_stored(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_bounded_visible_ascii() {
        assert!(IdempotencyKey::parse("8e0f6b0a-6f1c-4b7e-9a53-2d1f0c9e7b11").is_ok());
        assert_eq!(IdempotencyKey::parse(""), Err(KeyError::Length(0)));
        assert_eq!(
            IdempotencyKey::parse(&"k".repeat(256)),
            Err(KeyError::Length(256))
        );
        assert_eq!(IdempotencyKey::parse("a b"), Err(KeyError::Characters));
        assert_eq!(IdempotencyKey::parse("ключ"), Err(KeyError::Characters));
    }

    #[test]
    fn fingerprints_separate_method_path_and_body() {
        let base = Fingerprint::of("POST", "/v1/particles", b"{}");
        assert_eq!(base, Fingerprint::of("POST", "/v1/particles", b"{}"));
        assert_ne!(base, Fingerprint::of("POST", "/v1/particles", b"{ }"));
        assert_ne!(base, Fingerprint::of("POST", "/v1/system-prompts", b"{}"));
        // Moving bytes between the path and the body changes the fingerprint.
        assert_ne!(
            Fingerprint::of("POST", "/a", b"b"),
            Fingerprint::of("POST", "/ab", b"")
        );
        assert_eq!(base.as_str().len(), 64);
    }
}
