use argon2::{
    Algorithm, Argon2, Params, Version,
    password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString},
};
use tessera_identity::{ClientSecret, SecretHash, SecretHasher};
use tessera_kernel::DomainError;

/// argon2id with the OWASP-recommended cost (19 MiB, 2 passes, 1 lane). Client secrets have
/// 256 bits of entropy, so the cost guards against a leaked table, not against guessing.
#[derive(Clone)]
pub struct Argon2SecretHasher {
    argon2: Argon2<'static>,
}

impl Default for Argon2SecretHasher {
    fn default() -> Self {
        let params = Params::new(19 * 1024, 2, 1, None).unwrap_or_default();
        Self {
            argon2: Argon2::new(Algorithm::Argon2id, Version::V0x13, params),
        }
    }
}

impl SecretHasher for Argon2SecretHasher {
    fn hash(&self, secret: &ClientSecret) -> Result<SecretHash, DomainError> {
        let salt_bytes: [u8; 16] = rand::random();
        let salt = SaltString::encode_b64(&salt_bytes)
            .map_err(|e| DomainError::internal(format!("salt: {e}")))?;
        let hash = self
            .argon2
            .hash_password(secret.expose().as_bytes(), &salt)
            .map_err(|e| DomainError::internal(format!("hashing a secret failed: {e}")))?;
        Ok(SecretHash(hash.to_string()))
    }

    fn verify(&self, secret: &ClientSecret, hash: &SecretHash) -> bool {
        // argon2's verification compares in constant time.
        PasswordHash::new(&hash.0).is_ok_and(|parsed| {
            self.argon2
                .verify_password(secret.expose().as_bytes(), &parsed)
                .is_ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifies_only_the_right_secret() {
        let hasher = Argon2SecretHasher::default();
        let secret = ClientSecret::generate();
        let hash = hasher.hash(&secret).unwrap();
        assert!(hash.0.starts_with("$argon2id$"));
        assert!(hasher.verify(&secret, &hash));
        assert!(!hasher.verify(&ClientSecret::presented("tss_wrong"), &hash));
        assert!(!hasher.verify(&secret, &SecretHash("not a phc string".into())));
    }

    #[test]
    fn salts_differ() {
        let hasher = Argon2SecretHasher::default();
        let secret = ClientSecret::presented("same");
        assert_ne!(hasher.hash(&secret).unwrap(), hasher.hash(&secret).unwrap());
    }
}
