//! Tokens whose signature and claims were already checked, so a client presenting the same
//! token on every request pays for one Ed25519 verification and JSON decoding per token
//! instead of one per request. Keyed by the exact token text: any other byte is a miss and a
//! full verification. A hit still checks `exp` and `nbf` against the clock, with the same
//! leeway, so a cached token expires exactly when a fresh verification would refuse it.
//! Revocation is not decided here (the identity service checks the client on every request).

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
    time::{SystemTime, UNIX_EPOCH},
};

use tessera_identity::{AccessClaims, TokenError};

/// Verified tokens kept at most; beyond it the cache starts afresh (a bound on memory, not an
/// LRU: a dropped token is verified again once).
const CAPACITY: usize = 4096;

/// The claims of tokens that verified, by token text.
#[derive(Default)]
pub(crate) struct VerifiedTokens {
    claims: Mutex<HashMap<Box<str>, AccessClaims>>,
}

impl VerifiedTokens {
    /// The claims of `token` if it verified before: `Some(Ok)` while its time window holds
    /// (within `leeway` seconds), `Some(Err)` once it has expired; `None` if unknown.
    pub(crate) fn get(&self, token: &str, leeway: u64) -> Option<Result<AccessClaims, TokenError>> {
        let now = unix_now();
        let mut cached = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        let claims = cached.get(token)?;
        let leeway = i64::try_from(leeway).unwrap_or(i64::MAX);
        if claims.exp.saturating_add(leeway) < now {
            cached.remove(token);
            return Some(Err(TokenError::Expired));
        }
        if claims.nbf.saturating_sub(leeway) > now {
            return Some(Err(TokenError::NotYetValid));
        }
        Some(Ok(claims.clone()))
    }

    /// Remembers a token that has just verified.
    pub(crate) fn insert(&self, token: &str, claims: &AccessClaims) {
        let mut cached = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        if cached.len() >= CAPACITY {
            cached.clear();
        }
        cached.insert(token.into(), claims.clone());
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(nbf: i64, exp: i64) -> AccessClaims {
        AccessClaims {
            iat: nbf,
            nbf,
            exp,
            ..crate::keys::tests::claims()
        }
    }

    #[test]
    fn a_known_token_is_answered_until_it_expires() {
        let now = unix_now();
        let cache = VerifiedTokens::default();
        assert_eq!(cache.get("a.b.c", 30), None);

        let valid = claims(now - 10, now + 3600);
        cache.insert("a.b.c", &valid);
        assert_eq!(cache.get("a.b.c", 30), Some(Ok(valid)));
        assert_eq!(cache.get("a.b.d", 30), None, "another text is a miss");

        cache.insert("old", &claims(now - 3700, now - 20));
        assert!(matches!(cache.get("old", 30), Some(Ok(_))), "within leeway");
        assert_eq!(cache.get("old", 5), Some(Err(TokenError::Expired)));
        assert_eq!(cache.get("old", 30), None, "an expired token is forgotten");

        cache.insert("early", &claims(now + 120, now + 3600));
        assert_eq!(cache.get("early", 30), Some(Err(TokenError::NotYetValid)));
    }

    #[test]
    fn the_cache_is_bounded() {
        let now = unix_now();
        let cache = VerifiedTokens::default();
        for i in 0..=CAPACITY {
            cache.insert(&format!("token-{i}"), &claims(now, now + 60));
        }
        let held = cache.claims.lock().unwrap().len();
        assert_eq!(held, 1, "full: started afresh with the newest token");
        assert!(cache.get(&format!("token-{CAPACITY}"), 0).is_some());
    }
}
