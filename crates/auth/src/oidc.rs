//! Session tokens of an external OpenID Connect provider: its discovery document names its
//! JWKS; keys are cached and fetched again when a token names an unknown `kid` (at most once
//! per `refresh_interval`, so a stream of forged kids cannot make us hammer the provider).

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
        let keys = self.fetch_keys().await?;
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.keys = keys;
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

    #[test]
    fn only_asymmetric_algorithms_are_mapped() {
        assert_eq!(algorithm_of(KeyAlgorithm::RS256), Some(Algorithm::RS256));
        assert_eq!(algorithm_of(KeyAlgorithm::HS256), None);
    }
}
