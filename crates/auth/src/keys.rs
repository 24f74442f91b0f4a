use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use tessera_identity::{AccessClaims, TokenError, TokenSigner, TokenVerifier};
use tessera_kernel::DomainError;

use crate::verified::VerifiedTokens;

/// The token type of RFC 9068 access tokens.
const TOKEN_TYPE: &str = "at+jwt";

/// Why the key set could not be loaded or created.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot use key directory {path}: {message}")]
    Directory { path: String, message: String },
    #[error("key file {path} is not a PKCS#8 Ed25519 private key: {message}")]
    BadKey { path: String, message: String },
}

/// What every accepted token must say about itself.
#[derive(Debug, Clone)]
pub struct TokenRules {
    pub issuer: String,
    pub audience: String,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64,
}

struct VerifyingKey {
    decoding: DecodingKey,
    /// The raw 32-byte Ed25519 public key, base64url (the JWK `x`).
    x: String,
}

/// Ed25519 signing keys: each `<kid>.pem` file of the directory verifies; the greatest kid
/// (they are named by creation time) signs.
pub struct JwtKeys {
    signing_kid: String,
    signing: EncodingKey,
    verifying: BTreeMap<String, VerifyingKey>,
    rules: TokenRules,
    /// Tokens that verified (the key set never changes while loaded).
    verified: VerifiedTokens,
}

impl JwtKeys {
    /// Loads every key of `dir`, creating the directory and a first key when there is none.
    pub fn load_or_create(dir: &Path, rules: TokenRules) -> Result<Self, KeyError> {
        let dir_error = |message: String| KeyError::Directory {
            path: dir.display().to_string(),
            message,
        };
        std::fs::create_dir_all(dir).map_err(|e| dir_error(e.to_string()))?;
        if Self::key_files(dir).map_err(dir_error)?.is_empty() {
            Self::create_key(dir)?;
        }
        let mut verifying = BTreeMap::new();
        let mut signing = None;
        for (kid, path) in Self::key_files(dir).map_err(dir_error)? {
            let bad = |message: String| KeyError::BadKey {
                path: path.display().to_string(),
                message,
            };
            let pem = std::fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
            let pair = rcgen::KeyPair::from_pem(&pem).map_err(|e| bad(e.to_string()))?;
            if !pair.is_compatible(&rcgen::PKCS_ED25519) {
                return Err(bad("not an Ed25519 key".into()));
            }
            let encoding =
                EncodingKey::from_ed_pem(pem.as_bytes()).map_err(|e| bad(e.to_string()))?;
            let raw = pair.public_key_raw();
            verifying.insert(
                kid.clone(),
                VerifyingKey {
                    decoding: DecodingKey::from_ed_der(raw),
                    x: URL_SAFE_NO_PAD.encode(raw),
                },
            );
            // Files are visited in kid order, so the last one is the newest.
            signing = Some((kid, encoding));
        }
        let (signing_kid, signing) = signing.ok_or_else(|| dir_error("no key found".into()))?;
        Ok(Self {
            signing_kid,
            signing,
            verifying,
            rules,
            verified: VerifiedTokens::default(),
        })
    }

    /// Adds a new key to `dir`; it becomes the signing key at the next load. Existing keys
    /// keep verifying the tokens they signed until their files are removed.
    pub fn create_key(dir: &Path) -> Result<String, KeyError> {
        let dir_error = |message: String| KeyError::Directory {
            path: dir.display().to_string(),
            message,
        };
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519)
            .map_err(|e| dir_error(e.to_string()))?;
        let kid = format!("ed25519-{}", uuid_like_time_id());
        let path = dir.join(format!("{kid}.pem"));
        write_private(&path, pair.serialize_pem().as_bytes())
            .map_err(|e| dir_error(e.to_string()))?;
        tracing::info!(kid, "created a token signing key");
        Ok(kid)
    }

    fn key_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, String> {
        let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
            .map_err(|e| e.to_string())?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "pem"))
            .filter_map(|path| Some((path.file_stem()?.to_str()?.to_owned(), path)))
            .collect();
        files.sort();
        Ok(files)
    }

    pub fn signing_kid(&self) -> &str {
        &self.signing_kid
    }

    /// The public keys as a JSON Web Key Set.
    pub fn jwks(&self) -> serde_json::Value {
        let keys: Vec<serde_json::Value> = self
            .verifying
            .iter()
            .map(|(kid, key)| serde_json::json!({ "kty": "OKP", "crv": "Ed25519", "x": key.x, "kid": kid, "use": "sig", "alg": "EdDSA" }))
            .collect();
        serde_json::json!({ "keys": keys })
    }
}

impl TokenSigner for JwtKeys {
    fn sign(&self, claims: &AccessClaims) -> Result<String, DomainError> {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.signing_kid.clone());
        header.typ = Some(TOKEN_TYPE.to_owned());
        jsonwebtoken::encode(&header, claims, &self.signing)
            .map_err(|e| DomainError::internal(format!("signing a token failed: {e}")))
    }
}

impl TokenVerifier for JwtKeys {
    fn verify(&self, token: &str) -> Result<AccessClaims, TokenError> {
        if let Some(known) = self.verified.get(token, self.rules.leeway_secs) {
            return known;
        }
        let claims = self.verify_signed(token)?;
        self.verified.insert(token, &claims);
        Ok(claims)
    }
}

impl JwtKeys {
    /// The full check: algorithm, key, signature, then every claim.
    fn verify_signed(&self, token: &str) -> Result<AccessClaims, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        // Only our own algorithm: refuses `none`, and HMAC tokens keyed with a public key.
        if header.alg != Algorithm::EdDSA {
            return Err(TokenError::DisallowedAlgorithm);
        }
        let key = header
            .kid
            .as_ref()
            .and_then(|kid| self.verifying.get(kid))
            .ok_or(TokenError::BadSignature)?;
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.leeway = self.rules.leeway_secs;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.rules.issuer]);
        validation.set_audience(&[&self.rules.audience]);
        validation.set_required_spec_claims(&["exp", "nbf", "iss", "aud", "sub"]);
        jsonwebtoken::decode::<AccessClaims>(token, &key.decoding, &validation)
            .map(|data| data.claims)
            .map_err(|e| crate::jwt_error::token_error(&e))
    }
}

/// A sortable, unique suffix: creation time in microseconds, then random bits.
fn uuid_like_time_id() -> String {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or_default();
    let noise: u16 = rand::random();
    format!("{micros:020}-{noise:04x}")
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn rules() -> TokenRules {
        TokenRules {
            issuer: "https://tessera.test".into(),
            audience: "tessera".into(),
            leeway_secs: 30,
        }
    }

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    /// Claims valid from now for an hour.
    pub(crate) fn claims() -> AccessClaims {
        AccessClaims {
            iss: "https://tessera.test".into(),
            sub: "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".into(),
            aud: "tessera".into(),
            org: "org_a".into(),
            scope: "files:read".into(),
            secret_generation: 1,
            iat: now(),
            nbf: now(),
            exp: now() + 3600,
            jti: "j".into(),
        }
    }

    #[test]
    fn signs_and_verifies_with_kid_and_type() {
        let dir = tempfile::tempdir().unwrap();
        let keys = JwtKeys::load_or_create(dir.path(), rules()).unwrap();
        let token = keys.sign(&claims()).unwrap();
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(
            (header.alg, header.kid.as_deref(), header.typ.as_deref()),
            (Algorithm::EdDSA, Some(keys.signing_kid()), Some("at+jwt"))
        );
        assert_eq!(keys.verify(&token).unwrap(), claims());
        assert_eq!(keys.jwks()["keys"][0]["kid"], keys.signing_kid());
    }

    #[test]
    fn rotation_keeps_old_tokens_valid_and_signs_with_the_new_key() {
        let dir = tempfile::tempdir().unwrap();
        let old = JwtKeys::load_or_create(dir.path(), rules()).unwrap();
        let old_token = old.sign(&claims()).unwrap();
        let new_kid = JwtKeys::create_key(dir.path()).unwrap();
        let rotated = JwtKeys::load_or_create(dir.path(), rules()).unwrap();
        assert_eq!(rotated.signing_kid(), new_kid);
        assert!(rotated.verify(&old_token).is_ok());
        assert_eq!(rotated.jwks()["keys"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn refuses_expired_early_foreign_and_tampered_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let keys = JwtKeys::load_or_create(dir.path(), rules()).unwrap();
        let sign = |c: AccessClaims| keys.sign(&c).unwrap();
        assert_eq!(
            keys.verify(&sign(AccessClaims {
                exp: now() - 120,
                ..claims()
            })),
            Err(TokenError::Expired)
        );
        assert!(
            keys.verify(&sign(AccessClaims {
                exp: now() - 10,
                ..claims()
            }))
            .is_ok(),
            "within leeway"
        );
        assert_eq!(
            keys.verify(&sign(AccessClaims {
                nbf: now() + 120,
                ..claims()
            })),
            Err(TokenError::NotYetValid)
        );
        assert_eq!(
            keys.verify(&sign(AccessClaims {
                iss: "https://evil".into(),
                ..claims()
            })),
            Err(TokenError::WrongIssuerOrAudience)
        );
        assert_eq!(
            keys.verify(&sign(AccessClaims {
                aud: "other".into(),
                ..claims()
            })),
            Err(TokenError::WrongIssuerOrAudience)
        );

        let token = sign(claims());
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        parts[1] = URL_SAFE_NO_PAD.encode(
            serde_json::to_vec(&AccessClaims {
                org: "org_b".into(),
                ..claims()
            })
            .unwrap(),
        );
        assert_eq!(keys.verify(&parts.join(".")), Err(TokenError::BadSignature));

        let other_dir = tempfile::tempdir().unwrap();
        let stranger = JwtKeys::load_or_create(other_dir.path(), rules()).unwrap();
        assert_eq!(
            keys.verify(&stranger.sign(&claims()).unwrap()),
            Err(TokenError::BadSignature),
            "unknown kid"
        );
        assert_eq!(keys.verify("not.a.jwt"), Err(TokenError::Malformed));
    }

    #[test]
    fn refuses_alg_none_and_hmac_confusion() {
        let dir = tempfile::tempdir().unwrap();
        let keys = JwtKeys::load_or_create(dir.path(), rules()).unwrap();
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims()).unwrap());
        let none_header = URL_SAFE_NO_PAD.encode(format!(
            r#"{{"alg":"none","kid":"{}"}}"#,
            keys.signing_kid()
        ));
        assert!(keys.verify(&format!("{none_header}.{body}.")).is_err());

        // An HS256 token keyed with the published public key must not verify.
        let x = keys.jwks()["keys"][0]["x"].as_str().unwrap().to_owned();
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(keys.signing_kid().to_owned());
        let forged =
            jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_secret(x.as_bytes()))
                .unwrap();
        assert_eq!(keys.verify(&forged), Err(TokenError::DisallowedAlgorithm));
    }

    #[test]
    fn corrupt_key_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ed25519-1.pem"), "garbage").unwrap();
        let error = JwtKeys::load_or_create(dir.path(), rules())
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("ed25519-1.pem"), "{error}");
    }
}
