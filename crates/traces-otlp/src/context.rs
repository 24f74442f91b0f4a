//! W3C trace context: the ids that tie a span to its trace and parent, how a `traceparent`
//! header reads and writes them, and the sampling decision a new trace gets.

use std::fmt::{self, Write as _};

/// A trace's id: 16 bytes, never all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceId(pub [u8; 16]);

/// A span's id: 8 bytes, never all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanId(pub [u8; 8]);

/// Random bytes, not all zero (a zero id is invalid).
fn nonzero_random<const N: usize>() -> [u8; N] {
    loop {
        let bytes: [u8; N] = rand::random();
        if bytes != [0; N] {
            return bytes;
        }
    }
}

impl TraceId {
    pub(crate) fn random() -> Self {
        Self(nonzero_random())
    }
}

impl SpanId {
    pub(crate) fn random() -> Self {
        Self(nonzero_random())
    }
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for byte in bytes {
        write!(f, "{byte:02x}")?;
    }
    Ok(())
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

/// Where a span sits: its trace, its own id, whether its trace is kept, and the vendors'
/// `tracestate` it carries on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanContext {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub sampled: bool,
    /// The caller's `tracestate`, passed on unchanged (empty when none).
    pub trace_state: String,
}

impl SpanContext {
    /// A caller's context from its `traceparent` (version `00`, or a later version read as
    /// `00` as the specification asks) and `tracestate` headers; `None` when the
    /// `traceparent` is missing or malformed, and the trace starts here.
    pub fn from_headers(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Self> {
        let mut parts = traceparent?.trim().split('-');
        let version = parts.next()?;
        let trace_id = parts.next()?;
        let span_id = parts.next()?;
        let flags = parts.next()?;
        let rest = parts.next();
        let version = u8::from_str_radix(hex_field(version, 2)?, 16).ok()?;
        if version == 0xff || (version == 0 && rest.is_some()) {
            return None;
        }
        let trace_id = TraceId(hex_bytes(trace_id)?);
        let span_id = SpanId(hex_bytes(span_id)?);
        let flags = u8::from_str_radix(hex_field(flags, 2)?, 16).ok()?;
        if trace_id.0 == [0; 16] || span_id.0 == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
            trace_state: tracestate.map(str::trim).unwrap_or_default().to_owned(),
        })
    }

    /// The `traceparent` header that continues this span's trace.
    pub fn traceparent(&self) -> String {
        let mut header = String::with_capacity(55);
        let flags = u8::from(self.sampled);
        let _ = write!(header, "00-{}-{}-{flags:02x}", self.trace_id, self.span_id);
        header
    }
}

/// `text` when it is `len` lowercase hex digits.
fn hex_field(text: &str, len: usize) -> Option<&str> {
    (text.len() == len
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then_some(text)
}

fn hex_bytes<const N: usize>(text: &str) -> Option<[u8; N]> {
    let text = hex_field(text, N * 2)?;
    let mut bytes = [0; N];
    for (byte, pair) in bytes.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(bytes)
}

/// Keeps a share of new traces, decided by the trace id alone (as OpenTelemetry's
/// `TraceIdRatioBased` does), so every service that sees the trace decides alike; a ratio of
/// 1 is `always_on`, 0 `always_off`. Parent-based (OpenTelemetry's `ParentBased`), a
/// caller's decision wins for the spans of its request. A span under a span of this process
/// always follows its parent (the rule gives the same answer for the same trace).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sampler {
    /// Trace ids whose low 63 bits fall below this are kept.
    threshold: u64,
    always: bool,
    follow_caller: bool,
}

impl Sampler {
    /// Parent-based, keeping `ratio` of the traces that start here.
    #[cfg(test)]
    pub(crate) fn ratio(ratio: f64) -> Self {
        Self::new(ratio, true)
    }

    pub(crate) fn new(ratio: f64, follow_caller: bool) -> Self {
        let ratio = if ratio.is_nan() {
            0.0
        } else {
            ratio.clamp(0.0, 1.0)
        };
        Self {
            threshold: (ratio * (1u64 << 63) as f64) as u64,
            always: ratio >= 1.0,
            follow_caller,
        }
    }

    /// The decision for the first span of a caller's request in this process.
    pub(crate) fn keeps_for(self, caller: &SpanContext) -> bool {
        if self.follow_caller {
            caller.sampled
        } else {
            self.keeps(caller.trace_id)
        }
    }

    pub(crate) fn keeps(self, trace_id: TraceId) -> bool {
        let mut low = [0; 8];
        low.copy_from_slice(&trace_id.0[8..]);
        self.always || (u64::from_be_bytes(low) >> 1) < self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_reads_and_writes_back() {
        let context = SpanContext::from_headers(Some(TRACEPARENT), Some("vendor=1")).unwrap();
        assert_eq!(
            context.trace_id.to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(context.span_id.to_string(), "00f067aa0ba902b7");
        assert!(context.sampled);
        assert_eq!(context.trace_state, "vendor=1");
        assert_eq!(context.traceparent(), TRACEPARENT);
    }

    #[test]
    fn an_unsampled_caller_is_followed() {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        let context = SpanContext::from_headers(Some(header), None).unwrap();
        assert!(!context.sampled);
        assert_eq!(context.traceparent(), header);
    }

    #[test]
    fn malformed_traceparents_start_a_new_trace() {
        for header in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(
                SpanContext::from_headers(Some(header), None),
                None,
                "{header}"
            );
        }
        assert_eq!(SpanContext::from_headers(None, Some("vendor=1")), None);
    }

    #[test]
    fn a_later_version_is_read_as_the_first() {
        let header = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
        assert!(SpanContext::from_headers(Some(header), None).is_some());
    }

    #[test]
    fn a_parent_based_sampler_follows_the_caller_and_the_others_decide_alone() {
        let caller = |sampled: bool| SpanContext {
            trace_id: TraceId([9; 16]),
            span_id: SpanId([1; 8]),
            sampled,
            trace_state: String::new(),
        };
        assert!(Sampler::new(0.0, true).keeps_for(&caller(true)));
        assert!(!Sampler::new(1.0, true).keeps_for(&caller(false)));
        assert!(
            Sampler::new(1.0, false).keeps_for(&caller(false)),
            "always_on"
        );
        assert!(
            !Sampler::new(0.0, false).keeps_for(&caller(true)),
            "always_off"
        );
    }

    #[test]
    fn the_sampler_keeps_its_share_by_trace_id() {
        let id = |low: u64| {
            let mut bytes = [7; 16];
            bytes[8..].copy_from_slice(&low.to_be_bytes());
            TraceId(bytes)
        };
        assert!(Sampler::ratio(1.0).keeps(id(u64::MAX)));
        assert!(!Sampler::ratio(0.0).keeps(id(0)));
        let half = Sampler::ratio(0.5);
        assert!(half.keeps(id(u64::MAX / 2 - 10)));
        assert!(!half.keeps(id(u64::MAX - 10)));
        let kept = (0..10_000u64)
            .filter(|n| Sampler::ratio(0.25).keeps(id(n.wrapping_mul(0x9e37_79b9_7f4a_7c15))))
            .count();
        assert!((2_000..3_000).contains(&kept), "{kept}");
    }
}
