//! The OpenTelemetry SDK's own words for a trace export's choices, as its environment
//! variables spell them (`OTEL_TRACES_SAMPLER`, `OTEL_EXPORTER_OTLP_COMPRESSION`,
//! `OTEL_SDK_DISABLED`); the `telemetry` settings take the same words (decision 0044).

use std::{fmt, str::FromStr};

/// Which traces are kept (`telemetry.sampler`, `OTEL_TRACES_SAMPLER`). The ratio ones use
/// `telemetry.sampling_ratio` (`OTEL_TRACES_SAMPLER_ARG`); `parentbased_*` follow a caller's
/// `traceparent` decision and apply their rule to traces that start here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceSampler {
    AlwaysOn,
    AlwaysOff,
    TraceIdRatio,
    ParentBasedAlwaysOn,
    ParentBasedAlwaysOff,
    /// Tessera's default: with the default ratio of 1 it keeps what `parentbased_always_on`
    /// (the SDK's default) keeps, and `OTEL_TRACES_SAMPLER_ARG` alone still sets the share.
    #[default]
    ParentBasedTraceIdRatio,
}

const SAMPLERS: [(&str, TraceSampler); 6] = [
    ("always_on", TraceSampler::AlwaysOn),
    ("always_off", TraceSampler::AlwaysOff),
    ("traceidratio", TraceSampler::TraceIdRatio),
    ("parentbased_always_on", TraceSampler::ParentBasedAlwaysOn),
    ("parentbased_always_off", TraceSampler::ParentBasedAlwaysOff),
    (
        "parentbased_traceidratio",
        TraceSampler::ParentBasedTraceIdRatio,
    ),
];

impl FromStr for TraceSampler {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        SAMPLERS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(text))
            .map(|(_, sampler)| *sampler)
            .ok_or_else(|| {
                let names: Vec<_> = SAMPLERS.iter().map(|(name, _)| *name).collect();
                format!("not a supported sampler; one of {}", names.join(", "))
            })
    }
}

impl TraceSampler {
    /// The share of traces starting here that is kept, given the configured ratio.
    pub fn ratio(self, configured: f64) -> f64 {
        match self {
            Self::AlwaysOn | Self::ParentBasedAlwaysOn => 1.0,
            Self::AlwaysOff | Self::ParentBasedAlwaysOff => 0.0,
            Self::TraceIdRatio | Self::ParentBasedTraceIdRatio => configured,
        }
    }

    /// Whether a caller's sampled flag decides for the spans made for its request.
    pub fn follows_caller(self) -> bool {
        matches!(
            self,
            Self::ParentBasedAlwaysOn | Self::ParentBasedAlwaysOff | Self::ParentBasedTraceIdRatio
        )
    }
}

/// How export requests' bodies are compressed (`telemetry.otlp_compression`,
/// `OTEL_EXPORTER_OTLP_COMPRESSION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OtlpCompression {
    #[default]
    None,
    Gzip,
}

impl FromStr for OtlpCompression {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_lowercase().as_str() {
            "none" => Ok(Self::None),
            "gzip" => Ok(Self::Gzip),
            _ => Err("expected `gzip` or `none`".into()),
        }
    }
}

/// A boolean as OpenTelemetry's variables spell it: `true` or `false` in any case. Anything
/// else is refused (the SDKs read it as false with a warning; a typo must not keep exporting
/// silently).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OtelBool(pub bool);

impl FromStr for OtelBool {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.eq_ignore_ascii_case("true") {
            Ok(Self(true))
        } else if text.eq_ignore_ascii_case("false") {
            Ok(Self(false))
        } else {
            Err("expected `true` or `false`".into())
        }
    }
}

impl fmt::Display for OtelBool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samplers_are_read_by_their_sdk_names() {
        assert_eq!(
            "parentbased_always_off".parse(),
            Ok(TraceSampler::ParentBasedAlwaysOff)
        );
        assert_eq!("TraceIdRatio".parse(), Ok(TraceSampler::TraceIdRatio));
        assert!(
            "jaeger_remote"
                .parse::<TraceSampler>()
                .unwrap_err()
                .contains("parentbased_traceidratio")
        );
        assert_eq!(TraceSampler::AlwaysOff.ratio(0.5), 0.0);
        assert_eq!(TraceSampler::TraceIdRatio.ratio(0.5), 0.5);
        assert!(!TraceSampler::AlwaysOn.follows_caller());
        assert!(TraceSampler::ParentBasedAlwaysOn.follows_caller());
    }
}
