//! The bodies of `/v1/response-cache/models`: a model's response cache policy as written
//! (the request of a `PUT`, the shape of `tessera_response_cache::CachePolicySpec`, unknown
//! fields refused so a misspelt setting is an error rather than a default silently kept) and
//! as stored (with its model and who wrote it when).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_response_cache::{
    CachePolicySpec, SemanticSpec, StoredCachePolicy,
    policy::{DEFAULT_MAX_TEMPERATURE, DEFAULT_SEMANTIC_THRESHOLD, DEFAULT_TTL_SECONDS},
};
use utoipa::ToSchema;
use validator::Validate;

use crate::itemized;

/// A model's response cache policy. Values are checked when it is written: each one out of
/// bounds is a 422 located where it is (`body.semantic.threshold`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, Validate)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResponseCachePolicyIn {
    /// How long an answer is served from the cache: 1 to 2,592,000 seconds (30 days);
    /// 3,600 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 2_592_000, example = 3600)]
    pub ttl_seconds: Option<u64>,
    /// Also answer questions close in meaning to a cached one (the last user message's
    /// embedding, everything else of the request the same); exact matches only when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<SemanticCacheIn>,
    /// Requests asking for a higher temperature are neither answered from the cache nor
    /// kept in it (a request without one counts as 0): 0 to 2; 1 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2, example = 0.7)]
    pub max_temperature: Option<f32>,
}

/// The semantic cache's setting.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SemanticCacheIn {
    /// The cosine similarity of the two questions' embeddings a hit needs: 0.5 to 1; 0.95
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0.5, maximum = 1, example = 0.95)]
    pub threshold: Option<f32>,
}

impl From<ResponseCachePolicyIn> for CachePolicySpec {
    fn from(policy: ResponseCachePolicyIn) -> Self {
        Self {
            // Beyond `u32`, still out of bounds: refused as such by the domain's check.
            ttl_seconds: policy.ttl_seconds.map_or(DEFAULT_TTL_SECONDS, |ttl| {
                u32::try_from(ttl).unwrap_or(u32::MAX)
            }),
            semantic: policy.semantic.map(|semantic| SemanticSpec {
                threshold: semantic.threshold.unwrap_or(DEFAULT_SEMANTIC_THRESHOLD),
            }),
            max_temperature: policy.max_temperature.unwrap_or(DEFAULT_MAX_TEMPERATURE),
        }
    }
}

impl From<CachePolicySpec> for ResponseCachePolicyIn {
    fn from(spec: CachePolicySpec) -> Self {
        Self {
            ttl_seconds: Some(u64::from(spec.ttl_seconds)),
            semantic: spec.semantic.map(|semantic| SemanticCacheIn {
                threshold: Some(semantic.threshold),
            }),
            max_temperature: Some(spec.max_temperature),
        }
    }
}

/// A model's stored response cache policy.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResponseCachePolicyOut {
    /// A catalog model's id or one of the organization's own models.
    #[schema(example = "local/smollm2-135m-instruct")]
    pub model_id: String,
    /// The policy as written (the body of its `PUT`), with the defaults it was given.
    pub policy: ResponseCachePolicyIn,
    pub updated_at: DateTime<Utc>,
    /// Who wrote it last (a user's subject, a client's id).
    pub updated_by: String,
}

impl From<StoredCachePolicy> for ResponseCachePolicyOut {
    fn from(stored: StoredCachePolicy) -> Self {
        Self {
            model_id: stored.model_id,
            policy: stored.spec.into(),
            updated_at: stored.updated_at,
            updated_by: stored.updated_by,
        }
    }
}

itemized!(ResponseCachePolicyOut => ResponseCachePolicyList, "The organization's models' response cache policies, by model id.");

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// As answered: written as text (an `f32` written as itself, `0.7`), read back.
    fn answered(policy: &ResponseCachePolicyIn) -> serde_json::Value {
        serde_json::from_str(&serde_json::to_string(policy).unwrap()).unwrap()
    }

    fn spec(body: serde_json::Value) -> CachePolicySpec {
        serde_json::from_value::<ResponseCachePolicyIn>(body)
            .unwrap()
            .into()
    }

    #[test]
    fn response_cache_policy_absent_values_are_the_domains_defaults() {
        assert_eq!(spec(serde_json::json!({})), CachePolicySpec::default());
        assert_eq!(
            spec(serde_json::json!({"semantic": {}})).semantic,
            Some(SemanticSpec {
                threshold: DEFAULT_SEMANTIC_THRESHOLD
            })
        );
        let domain: CachePolicySpec =
            serde_json::from_value(serde_json::json!({"semantic": {}})).unwrap();
        assert_eq!(spec(serde_json::json!({"semantic": {}})), domain);
    }

    #[test]
    fn response_cache_policy_round_trips_and_too_long_a_ttl_stays_out_of_bounds() {
        let body = serde_json::json!({"ttlSeconds": 60, "semantic": {"threshold": 0.95}, "maxTemperature": 0.7});
        let policy: ResponseCachePolicyIn = spec(body.clone()).into();
        assert_eq!(answered(&policy), body);
        let policy: ResponseCachePolicyIn = CachePolicySpec::default().into();
        assert_eq!(
            answered(&policy),
            serde_json::json!({"ttlSeconds": 3600, "maxTemperature": 1.0})
        );
        assert_eq!(
            spec(serde_json::json!({"ttlSeconds": 5_000_000_000_u64})).ttl_seconds,
            u32::MAX
        );
        assert!(
            serde_json::from_value::<ResponseCachePolicyIn>(serde_json::json!({"ttl": 60}))
                .is_err()
        );
    }
}
