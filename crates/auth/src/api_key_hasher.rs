use ring::hmac;
use tessera_identity::{ApiKeyHash, ApiKeyHasher, ApiKeySecret};

/// HMAC-SHA256 of API key secrets under a server-side key (decision 0024), in lowercase hex.
/// A secret holds 256 random bits, so nothing can be guessed from a fast hash; the key means a
/// copy of the table alone cannot even confirm a candidate secret. Changing the key makes every
/// existing API key unknown.
#[derive(Clone)]
pub struct HmacApiKeyHasher {
    key: hmac::Key,
}

impl HmacApiKeyHasher {
    /// A hasher keyed with `key` (32 bytes from configuration or a generated key file).
    pub fn new(key: &[u8; 32]) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, key),
        }
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

impl ApiKeyHasher for HmacApiKeyHasher {
    fn hash(&self, secret: &ApiKeySecret) -> ApiKeyHash {
        ApiKeyHash(to_hex(
            hmac::sign(&self.key, secret.expose().as_bytes()).as_ref(),
        ))
    }

    fn verify(&self, secret: &ApiKeySecret, hash: &ApiKeyHash) -> bool {
        // ring compares the tags in constant time.
        from_hex(&hash.0)
            .is_some_and(|tag| hmac::verify(&self.key, secret.expose().as_bytes(), &tag).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_keyed_deterministic_hex_and_verify_only_their_secret() {
        let hasher = HmacApiKeyHasher::new(&[7; 32]);
        let secret = ApiKeySecret::generate();
        let hash = hasher.hash(&secret);
        assert_eq!(
            hash,
            hasher.hash(&secret),
            "keys are looked up by their hash"
        );
        assert_eq!(hash.0.len(), 64);
        assert!(
            hash.0
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert!(!hash.0.contains(&secret.expose()[4..]));
        assert!(hasher.verify(&secret, &hash));
        assert!(!hasher.verify(&ApiKeySecret::generate(), &hash));
        assert!(!hasher.verify(&secret, &ApiKeyHash("not hex".into())));
        assert_ne!(
            HmacApiKeyHasher::new(&[8; 32]).hash(&secret),
            hash,
            "another server key, another hash"
        );
    }

    #[test]
    fn the_digest_is_the_standard_hmac_sha256() {
        // RFC 4231, test case 2 (key "Jefe"), with the key padded as HMAC pads it: a 32-byte
        // key of "Jefe" and zeros is the same HMAC key as "Jefe".
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        let hasher = HmacApiKeyHasher::new(&key);
        let hash = hasher.hash(&ApiKeySecret::presented("what do ya want for nothing?"));
        assert_eq!(
            hash.0,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
