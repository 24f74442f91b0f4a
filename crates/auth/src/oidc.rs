//! Session tokens of an external OpenID Connect provider: its discovery document names its
//! JWKS; keys are cached and fetched again when a token names an unknown `kid` (at most once
//! per `refresh_interval`, so a stream of forged kids cannot make us hammer the provider).
//! A discovery document is used only when its `issuer` is exactly the configured issuer
//! (OpenID Connect Discovery 1.0, section 4.3): otherwise it is refused with a warning, no key
//! is taken from it, and the provider's tokens are refused as unverifiable.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use async_trait::async_trait;
use jsonwebtoken::{
    Algorithm, DecodingKey, Validation,
    jwk::{JwkSet, KeyAlgorithm},
};
use serde::Deserialize;
use tessera_identity::{SessionClaims, SessionVerifier, TokenError};

/// How one identity provider's tokens are read.
#[derive(Debug, Clone)]
pub struct OidcProvider {
    /// The provider's issuer URL (`iss` of its tokens); discovery is at
    /// `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    /// The audience (`aud`) its tokens must name.
    pub audience: String,
    /// The claim holding the organization id.
    pub organization_claim: String,
    /// The claim holding the scopes (a space-separated string or an array of strings).
    pub scopes_claim: String,
    pub leeway_secs: u64,
    /// Least time between two JWKS fetches.
    pub refresh_interval: Duration,
}

struct CachedKeys {
    keys: HashMap<String, (DecodingKey, Option<Algorithm>)>,
    fetched: Option<Instant>,
}

/// Verifies one provider's session tokens.
pub struct OidcVerifier {
    provider: OidcProvider,
    http: reqwest::Client,
    cache: Mutex<CachedKeys>,
}

#[derive(Deserialize)]
struct Discovery {
    /// Must equal the issuer the document was fetched for, character for character.
    issuer: String,
    jwks_uri: String,
}

/// Algorithms a provider may sign with: asymmetric only (no `none`, no shared-secret HMAC).
const ACCEPTED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

fn algorithm_of(key: KeyAlgorithm) -> Option<Algorithm> {
    let name = format!("{key:?}");
    ACCEPTED
        .iter()
        .copied()
        .find(|alg| format!("{alg:?}") == name)
}

impl OidcVerifier {
    pub fn new(provider: OidcProvider) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap_or_default();
        Self {
            provider,
            http,
            cache: Mutex::new(CachedKeys {
                keys: HashMap::new(),
                fetched: None,
            }),
        }
    }

    fn cached(&self, kid: &str) -> (Option<(DecodingKey, Option<Algorithm>)>, bool) {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let may_refresh = cache
            .fetched
            .is_none_or(|at| at.elapsed() >= self.provider.refresh_interval);
        (cache.keys.get(kid).cloned(), may_refresh)
    }

    async fn fetch_keys(
        &self,
    ) -> Result<HashMap<String, (DecodingKey, Option<Algorithm>)>, TokenError> {
        let unavailable = |e: reqwest::Error| {
            tracing::warn!(issuer = %self.provider.issuer, error = %e, "cannot fetch the identity provider's keys");
            TokenError::Unavailable
        };
        let discovery_url = format!(
            "{}/.well-known/openid-configuration",
            self.provider.issuer.trim_end_matches('/')
        );
        let discovery: Discovery = self
            .http
            .get(discovery_url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(unavailable)?
            .json()
            .await
            .map_err(unavailable)?;
        // OpenID Connect Discovery 1.0, 4.3: "The issuer value returned MUST be identical to
        // the Issuer URL that was used as the prefix to /.well-known/openid-configuration",
        // and a document that differs MUST NOT be used. Its keys could sign for anyone.
        if discovery.issuer != self.provider.issuer {
            tracing::warn!(
                issuer = %self.provider.issuer,
                document_issuer = %discovery.issuer,
                "the identity provider's discovery document names another issuer; it is refused, no key is taken from it, and the provider's session tokens are refused until it names the configured issuer"
            );
            return Err(TokenError::UntrustedProvider);
        }
        let set: JwkSet = self
            .http
            .get(discovery.jwks_uri)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(unavailable)?
            .json()
            .await
            .map_err(unavailable)?;
        Ok(set
            .keys
            .iter()
            .filter_map(|jwk| {
                let kid = jwk.common.key_id.clone()?;
                let key = DecodingKey::from_jwk(jwk).ok()?;
                Some((kid, (key, jwk.common.key_algorithm.and_then(algorithm_of))))
            })
            .collect())
    }

    async fn key(&self, kid: &str) -> Result<(DecodingKey, Option<Algorithm>), TokenError> {
        let (cached, may_refresh) = self.cached(kid);
        if let Some(key) = cached {
            return Ok(key);
        }
        if !may_refresh {
            return Err(TokenError::BadSignature);
        }
        let fetched = self.fetch_keys().await;
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        match fetched {
            Ok(keys) => cache.keys = keys,
            // A provider whose document names another issuer keeps no key, not even one an
            // earlier document gave; the refusal counts as a fetch, so it is not asked again
            // before `refresh_interval`.
            Err(TokenError::UntrustedProvider) => {
                cache.keys.clear();
                cache.fetched = Some(Instant::now());
                return Err(TokenError::UntrustedProvider);
            }
            Err(error) => return Err(error),
        }
        cache.fetched = Some(Instant::now());
        cache.keys.get(kid).cloned().ok_or(TokenError::BadSignature)
    }
}

fn scopes_of(value: Option<&serde_json::Value>) -> String {
    match value {
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

#[async_trait]
impl SessionVerifier for OidcVerifier {
    fn issuer(&self) -> &str {
        &self.provider.issuer
    }

    async fn verify(&self, token: &str) -> Result<SessionClaims, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if !ACCEPTED.contains(&header.alg) {
            return Err(TokenError::DisallowedAlgorithm);
        }
        let kid = header.kid.ok_or(TokenError::BadSignature)?;
        let (key, key_alg) = self.key(&kid).await?;
        if key_alg.is_some_and(|alg| alg != header.alg) {
            return Err(TokenError::DisallowedAlgorithm);
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.provider.leeway_secs;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.provider.issuer]);
        validation.set_audience(&[&self.provider.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
            token,
            &key,
            &validation,
        )
        .map_err(|e| crate::jwt_error::token_error(&e))?
        .claims;
        let text = |name: &str| claims.get(name).and_then(|v| v.as_str()).map(str::to_owned);
        Ok(SessionClaims {
            subject: text("sub").ok_or(TokenError::Malformed)?,
            organization: text(&self.provider.organization_claim).ok_or(TokenError::Malformed)?,
            scope: scopes_of(claims.get(&self.provider.scopes_claim)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_come_as_strings_or_arrays() {
        assert_eq!(
            scopes_of(Some(&serde_json::json!("a:read b:write"))),
            "a:read b:write"
        );
        assert_eq!(
            scopes_of(Some(&serde_json::json!(["a:read", "b:write"]))),
            "a:read b:write"
        );
        assert_eq!(scopes_of(None), "");
    }

    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    use tessera_identity::{AccessClaims, TokenSigner};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::{JwtKeys, TokenRules};

    /// An identity provider of the test's own on a real loopback listener: its discovery
    /// document names `issuer` (changed by the test) and its JWKS the keys given.
    struct Provider {
        url: String,
        issuer: Arc<Mutex<String>>,
        jwks_fetches: Arc<AtomicUsize>,
    }

    async fn provider(jwks: serde_json::Value) -> Provider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let issuer = Arc::new(Mutex::new(url.clone()));
        let jwks_fetches = Arc::new(AtomicUsize::new(0));
        let (named, fetches, base) = (issuer.clone(), jwks_fetches.clone(), url.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut head = Vec::new();
                let mut buffer = [0; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buffer).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buffer[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head);
                let path = head.split(' ').nth(1).unwrap_or_default();
                let body = if path == "/.well-known/openid-configuration" {
                    let issuer = named.lock().unwrap().clone();
                    serde_json::json!({"issuer": issuer, "jwks_uri": format!("{base}/jwks")})
                } else {
                    fetches.fetch_add(1, Ordering::SeqCst);
                    jwks.clone()
                }
                .to_string();
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            }
        });
        Provider {
            url,
            issuer,
            jwks_fetches,
        }
    }

    fn session_token(keys: &JwtKeys, issuer: &str) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            .cast_signed();
        keys.sign(&AccessClaims {
            iss: issuer.into(),
            sub: "user-1".into(),
            aud: "tessera-api".into(),
            org: "org_test".into(),
            scope: "files:read".into(),
            secret_generation: 0,
            iat: now,
            nbf: now,
            exp: now + 300,
            jti: "j".into(),
        })
        .unwrap()
    }

    /// The same token naming another key id (so its key is looked for again).
    fn with_kid(token: &str, kid: &str) -> String {
        let (header, rest) = token.split_once('.').unwrap();
        let mut header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap();
        header["kid"] = kid.into();
        format!("{}.{rest}", URL_SAFE_NO_PAD.encode(header.to_string()))
    }

    #[tokio::test]
    async fn a_discovery_document_naming_another_issuer_is_refused_and_gives_no_key() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().unwrap();
        let rules = TokenRules {
            issuer: "unused".into(),
            audience: "tessera-api".into(),
            leeway_secs: 0,
        };
        let keys = JwtKeys::load_or_create(dir.path(), rules).unwrap();
        let idp = provider(keys.jwks()).await;
        let verifier = OidcVerifier::new(OidcProvider {
            issuer: idp.url.clone(),
            audience: "tessera-api".into(),
            organization_claim: "org".into(),
            scopes_claim: "scope".into(),
            leeway_secs: 0,
            refresh_interval: Duration::ZERO,
        });
        let token = session_token(&keys, &idp.url);
        // Identical means identical: not another host, not even a trailing slash.
        for named in ["https://idp.example", &format!("{}/", idp.url), ""] {
            *idp.issuer.lock().unwrap() = named.to_owned();
            assert_eq!(
                verifier.verify(&token).await,
                Err(TokenError::UntrustedProvider),
                "{named}"
            );
        }
        assert_eq!(
            idp.jwks_fetches.load(Ordering::SeqCst),
            0,
            "no key is fetched through a refused document"
        );

        // The same provider naming itself: the token verifies.
        *idp.issuer.lock().unwrap() = idp.url.clone();
        let claims = verifier.verify(&token).await.unwrap();
        assert_eq!(
            (claims.subject.as_str(), claims.organization.as_str()),
            ("user-1", "org_test")
        );

        // A document refused later takes away the keys an earlier one gave.
        *idp.issuer.lock().unwrap() = "https://idp.example".into();
        assert_eq!(
            verifier.verify(&with_kid(&token, "rotated")).await,
            Err(TokenError::UntrustedProvider)
        );
        assert_eq!(
            verifier.verify(&token).await,
            Err(TokenError::UntrustedProvider)
        );
    }

    #[test]
    fn only_asymmetric_algorithms_are_mapped() {
        assert_eq!(algorithm_of(KeyAlgorithm::RS256), Some(Algorithm::RS256));
        assert_eq!(algorithm_of(KeyAlgorithm::HS256), None);
    }
}
