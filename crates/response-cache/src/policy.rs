//! A model's cache policy as its organization writes it: how long answers are kept, whether
//! near-duplicate questions are answered from the cache, and which requests are too random
//! to be answered from it.

use serde::{Deserialize, Serialize};
use tessera_kernel::{FieldError, LocSegment};

/// How long an answer stays in the cache when a policy does not say.
pub const DEFAULT_TTL_SECONDS: u32 = 3_600;
/// The similarity a semantic hit needs when a policy does not say.
pub const DEFAULT_SEMANTIC_THRESHOLD: f32 = 0.95;
/// The highest temperature a cached request may ask for when a policy does not say.
pub const DEFAULT_MAX_TEMPERATURE: f32 = 1.0;

/// A model's cache policy (the body of `PUT /v1/response-cache/models/{model}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CachePolicySpec {
    /// How long an answer is served from the cache, in seconds.
    #[serde(default = "default_ttl")]
    pub ttl_seconds: u32,
    /// Answer near-duplicates of a cached question (the last user message) too; exact
    /// matches only when absent.
    #[serde(default)]
    pub semantic: Option<SemanticSpec>,
    /// Requests asking for a higher temperature are neither answered from the cache nor
    /// stored in it (a request without one counts as 0).
    #[serde(default = "default_max_temperature")]
    pub max_temperature: f32,
}

/// The semantic cache's setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SemanticSpec {
    /// The cosine similarity of the two questions' embeddings a hit needs.
    #[serde(default = "default_threshold")]
    pub threshold: f32,
}

fn default_ttl() -> u32 {
    DEFAULT_TTL_SECONDS
}

fn default_threshold() -> f32 {
    DEFAULT_SEMANTIC_THRESHOLD
}

fn default_max_temperature() -> f32 {
    DEFAULT_MAX_TEMPERATURE
}

impl Default for CachePolicySpec {
    fn default() -> Self {
        Self {
            ttl_seconds: DEFAULT_TTL_SECONDS,
            semantic: None,
            max_temperature: DEFAULT_MAX_TEMPERATURE,
        }
    }
}

/// The longest time to live a policy may set: 30 days.
pub const MAX_TTL_SECONDS: u32 = 2_592_000;
/// The highest temperature a policy may cache (the dialects' own upper bound).
pub const MAX_TEMPERATURE: f32 = 2.0;
/// The lowest similarity a semantic hit may be set to need: below it, questions that differ
/// in meaning would share answers.
pub const MIN_SEMANTIC_THRESHOLD: f32 = 0.5;

impl CachePolicySpec {
    /// The spec, once its values are within their bounds: a time to live of 1 second to
    /// [`MAX_TTL_SECONDS`], a finite maximum temperature of 0 to [`MAX_TEMPERATURE`], and a
    /// finite semantic threshold of [`MIN_SEMANTIC_THRESHOLD`] to 1. Every problem is a
    /// `range` error located under `at` (`body.semantic.threshold`), all reported at once.
    pub fn check(self, at: &[LocSegment]) -> Result<CachePolicySpec, Vec<FieldError>> {
        let mut errors = Vec::new();
        let mut refuse = |path: &[&str], msg: String| {
            let loc = at
                .iter()
                .cloned()
                .chain(path.iter().map(|field| LocSegment::from(*field)));
            errors.push(FieldError::new(loc, msg, "range"));
        };
        if !(1..=MAX_TTL_SECONDS).contains(&self.ttl_seconds) {
            refuse(
                &["ttlSeconds"],
                format!("must be from 1 to {MAX_TTL_SECONDS} seconds (30 days)"),
            );
        }
        if !(self.max_temperature.is_finite()
            && (0.0..=MAX_TEMPERATURE).contains(&self.max_temperature))
        {
            refuse(
                &["maxTemperature"],
                format!("must be a number from 0 to {MAX_TEMPERATURE}"),
            );
        }
        if let Some(semantic) = &self.semantic
            && !(semantic.threshold.is_finite()
                && (MIN_SEMANTIC_THRESHOLD..=1.0).contains(&semantic.threshold))
        {
            refuse(
                &["semantic", "threshold"],
                format!("must be a number from {MIN_SEMANTIC_THRESHOLD} to 1"),
            );
        }
        if errors.is_empty() {
            Ok(self)
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn body() -> Vec<LocSegment> {
        vec![LocSegment::from("body")]
    }

    fn refused(spec: CachePolicySpec) -> Vec<(String, String)> {
        spec.check(&body())
            .expect_err("accepted")
            .into_iter()
            .map(|error| {
                let loc: Vec<String> = (error.loc.iter())
                    .map(|segment| match segment {
                        LocSegment::Field(field) => field.clone(),
                        LocSegment::Index(index) => index.to_string(),
                    })
                    .collect();
                (loc.join("."), error.kind)
            })
            .collect()
    }

    fn semantic(threshold: f32) -> Option<SemanticSpec> {
        Some(SemanticSpec { threshold })
    }

    #[test]
    fn an_empty_body_is_the_defaults_and_they_pass() {
        let spec: CachePolicySpec = serde_json::from_str("{}").unwrap();
        assert_eq!(spec, CachePolicySpec::default());
        assert_eq!(spec.clone().check(&body()), Ok(spec));
        let semantic: CachePolicySpec = serde_json::from_str(r#"{"semantic": {}}"#).unwrap();
        assert_eq!(
            semantic.semantic,
            Some(SemanticSpec {
                threshold: DEFAULT_SEMANTIC_THRESHOLD
            })
        );
        assert!(semantic.check(&body()).is_ok());
    }

    #[test]
    fn bounds_are_inclusive() {
        for spec in [
            CachePolicySpec {
                ttl_seconds: 1,
                semantic: semantic(MIN_SEMANTIC_THRESHOLD),
                max_temperature: 0.0,
            },
            CachePolicySpec {
                ttl_seconds: MAX_TTL_SECONDS,
                semantic: semantic(1.0),
                max_temperature: MAX_TEMPERATURE,
            },
        ] {
            assert_eq!(spec.clone().check(&body()), Ok(spec));
        }
    }

    #[test]
    fn each_value_out_of_bounds_is_located_and_all_are_reported() {
        let all = CachePolicySpec {
            ttl_seconds: 0,
            semantic: semantic(0.49),
            max_temperature: 2.01,
        };
        assert_eq!(
            refused(all),
            vec![
                ("body.ttlSeconds".to_owned(), "range".to_owned()),
                ("body.maxTemperature".to_owned(), "range".to_owned()),
                ("body.semantic.threshold".to_owned(), "range".to_owned()),
            ]
        );
        let longer = CachePolicySpec {
            ttl_seconds: MAX_TTL_SECONDS + 1,
            ..CachePolicySpec::default()
        };
        assert_eq!(refused(longer)[0].0, "body.ttlSeconds");
        let above_one = CachePolicySpec {
            semantic: semantic(1.01),
            ..CachePolicySpec::default()
        };
        assert_eq!(refused(above_one)[0].0, "body.semantic.threshold");
        let negative = CachePolicySpec {
            max_temperature: -0.1,
            ..CachePolicySpec::default()
        };
        assert_eq!(refused(negative)[0].0, "body.maxTemperature");
    }

    #[test]
    fn non_finite_numbers_are_refused() {
        for value in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let temperature = CachePolicySpec {
                max_temperature: value,
                ..CachePolicySpec::default()
            };
            assert_eq!(refused(temperature)[0].0, "body.maxTemperature");
            let threshold = CachePolicySpec {
                semantic: semantic(value),
                ..CachePolicySpec::default()
            };
            assert_eq!(refused(threshold)[0].0, "body.semantic.threshold");
        }
    }

    #[test]
    fn errors_are_located_under_any_prefix() {
        let errors = CachePolicySpec {
            ttl_seconds: 0,
            ..CachePolicySpec::default()
        }
        .check(&[])
        .unwrap_err();
        assert_eq!(errors[0].loc, vec![LocSegment::from("ttlSeconds")]);
    }

    #[test]
    fn unknown_fields_are_refused() {
        assert!(serde_json::from_str::<CachePolicySpec>(r#"{"ttl": 60}"#).is_err());
        assert!(
            serde_json::from_str::<CachePolicySpec>(r#"{"semantic": {"threshold": 0.9, "x": 1}}"#)
                .is_err()
        );
    }
}
