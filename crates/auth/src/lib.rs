//! Adapters for Tessera's identity ports: `Argon2SecretHasher` (argon2id, salted, PHC strings),
//! `HmacApiKeyHasher` (HMAC-SHA256 of API key secrets under a server key) and `JwtKeys`, which
//! signs access tokens as EdDSA (Ed25519) JWTs with a `kid`, verifies
//! them against every key of its set (so keys can rotate: several verify, the newest signs),
//! and publishes the public keys as a JWKS (keys live as PKCS#8 PEM files in one directory);
//! and `OidcVerifier`, which checks session tokens of an external OpenID Connect provider
//! against its discovered, cached and refreshed JWKS. Verified access tokens are remembered
//! until they expire (`verified`), so a client's repeated token costs one verification.

mod api_key_hasher;
mod hasher;
mod jwt_error;
mod keys;
mod oidc;
mod verified;

pub use api_key_hasher::HmacApiKeyHasher;
pub use hasher::Argon2SecretHasher;
pub use keys::{JwtKeys, KeyError, TokenRules};
pub use oidc::{OidcProvider, OidcVerifier};
