//! The OTLP trace messages (`opentelemetry/proto/trace/v1/trace.proto` and the collector's
//! `ExportTraceServiceRequest`), encoded in protobuf straight from a finished span's record:
//! no intermediate message structs, no copies of attribute keys (they are `tracing`'s static
//! field names), the sizes of nested messages worked out before they are written.

use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};

use crate::span::{AttributeValue, EventRecord, SpanRecord, StatusCode};

/// `Span.flags`: bit 8 says whether the parent's remoteness is known, bit 9 that it is
/// remote; the low byte is the W3C trace flags.
const FLAGS_HAS_IS_REMOTE: u32 = 0x100;
const FLAGS_IS_REMOTE: u32 = 0x200;

fn len_delimited_len(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

fn write_len_delimited(tag: u32, bytes: &[u8], buf: &mut Vec<u8>) {
    write_header(tag, bytes.len(), buf);
    buf.extend_from_slice(bytes);
}

/// The key and length of a nested message or string whose body follows.
fn write_header(tag: u32, len: usize, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(len as u64, buf);
}

fn write_fixed64(tag: u32, value: u64, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::SixtyFourBit, buf);
    buf.extend_from_slice(&value.to_le_bytes());
}

fn write_varint(tag: u32, value: u64, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::Varint, buf);
    encode_varint(value, buf);
}

fn varint_len(tag: u32, value: u64) -> usize {
    key_len(tag) + encoded_len_varint(value)
}

/// `ArrayValue`'s body for strings: each an `AnyValue` holding `string_value`.
fn string_array_len(items: &[String]) -> usize {
    items
        .iter()
        .map(|item| len_delimited_len(1, len_delimited_len(1, item.len())))
        .sum()
}

/// `AnyValue`'s body.
fn any_value_len(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::Str(text) => len_delimited_len(1, text.len()),
        AttributeValue::Bool(_) => key_len(2) + 1,
        AttributeValue::Int(number) => varint_len(3, *number as u64),
        AttributeValue::Float(_) => key_len(4) + 8,
        AttributeValue::StrArray(items) => len_delimited_len(5, string_array_len(items)),
    }
}

fn write_any_value(value: &AttributeValue, buf: &mut Vec<u8>) {
    match value {
        AttributeValue::Str(text) => write_len_delimited(1, text.as_bytes(), buf),
        AttributeValue::Bool(flag) => write_varint(2, u64::from(*flag), buf),
        AttributeValue::Int(number) => write_varint(3, *number as u64, buf),
        AttributeValue::Float(number) => write_fixed64(4, number.to_bits(), buf),
        AttributeValue::StrArray(items) => {
            write_header(5, string_array_len(items), buf);
            for item in items {
                write_header(1, len_delimited_len(1, item.len()), buf);
                write_len_delimited(1, item.as_bytes(), buf);
            }
        }
    }
}

/// `KeyValue`'s body.
fn key_value_len(key: &str, value: &AttributeValue) -> usize {
    len_delimited_len(1, key.len()) + len_delimited_len(2, any_value_len(value))
}

/// A repeated `KeyValue` field (`tag`), each pair with its key and length.
fn attributes_len(tag: u32, attributes: &[(&str, AttributeValue)]) -> usize {
    attributes
        .iter()
        .map(|(key, value)| len_delimited_len(tag, key_value_len(key, value)))
        .sum()
}

fn write_attributes(tag: u32, attributes: &[(&str, AttributeValue)], buf: &mut Vec<u8>) {
    for (key, value) in attributes {
        write_header(tag, key_value_len(key, value), buf);
        write_len_delimited(1, key.as_bytes(), buf);
        write_header(2, any_value_len(value), buf);
        write_any_value(value, buf);
    }
}

fn event_len(event: &EventRecord) -> usize {
    key_len(1) + 8 + len_delimited_len(2, event.name.len()) + attributes_len(3, &event.attributes)
}

fn status_len(record: &SpanRecord) -> usize {
    let message = match record.status_message.as_deref() {
        Some(message) if !message.is_empty() => len_delimited_len(2, message.len()),
        _ => 0,
    };
    message + varint_len(3, record.status as u64)
}

fn span_len(record: &SpanRecord) -> usize {
    let parent = if record.parent_span_id.is_some() {
        len_delimited_len(4, 8)
    } else {
        0
    };
    let trace_state = match record.context.trace_state.len() {
        0 => 0,
        len => len_delimited_len(3, len),
    };
    let events: usize = record
        .events
        .iter()
        .map(|event| len_delimited_len(11, event_len(event)))
        .sum();
    let status = match record.status {
        StatusCode::Unset => 0,
        _ => len_delimited_len(15, status_len(record)),
    };
    len_delimited_len(1, 16)
        + len_delimited_len(2, 8)
        + trace_state
        + parent
        + len_delimited_len(5, record.name.len())
        + varint_len(6, record.kind as u64)
        + 2 * (key_len(7) + 8)
        + attributes_len(9, &record.attributes)
        + events
        + status
        + key_len(16)
        + 4
}

/// Appends the finished span to `buf` as one entry of `ScopeSpans.spans` (field 2): key,
/// length, then the `Span` message.
pub(crate) fn write_span(record: &SpanRecord, end_unix_nanos: u64, buf: &mut Vec<u8>) {
    let len = span_len(record);
    buf.reserve(len_delimited_len(2, len));
    write_header(2, len, buf);
    write_len_delimited(1, &record.context.trace_id.0, buf);
    write_len_delimited(2, &record.context.span_id.0, buf);
    if !record.context.trace_state.is_empty() {
        write_len_delimited(3, record.context.trace_state.as_bytes(), buf);
    }
    if let Some(parent) = &record.parent_span_id {
        write_len_delimited(4, &parent.0, buf);
    }
    write_len_delimited(5, record.name.as_bytes(), buf);
    write_varint(6, record.kind as u64, buf);
    write_fixed64(7, record.start_unix_nanos, buf);
    write_fixed64(8, end_unix_nanos.max(record.start_unix_nanos), buf);
    write_attributes(9, &record.attributes, buf);
    for event in &record.events {
        write_header(11, event_len(event), buf);
        write_fixed64(1, event.time_unix_nanos, buf);
        write_len_delimited(2, event.name.as_bytes(), buf);
        write_attributes(3, &event.attributes, buf);
    }
    if record.status != StatusCode::Unset {
        write_header(15, status_len(record), buf);
        if let Some(message) = record.status_message.as_deref().filter(|m| !m.is_empty()) {
            write_len_delimited(2, message.as_bytes(), buf);
        }
        write_varint(3, record.status as u64, buf);
    }
    let mut flags = u32::from(record.context.sampled) | FLAGS_HAS_IS_REMOTE;
    if record.parent_is_remote {
        flags |= FLAGS_IS_REMOTE;
    }
    encode_key(16, WireType::ThirtyTwoBit, buf);
    buf.extend_from_slice(&flags.to_le_bytes());
}

/// What every export of this process repeats around its spans: the `Resource` (the
/// service's attributes) and the `InstrumentationScope` (the tracer's name and version).
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    resource: Vec<u8>,
    scope: Vec<u8>,
}

impl Envelope {
    pub(crate) fn new(
        resource_attributes: &[(&str, AttributeValue)],
        scope_name: &str,
        scope_version: &str,
    ) -> Self {
        let mut resource = Vec::new();
        write_attributes(1, resource_attributes, &mut resource);
        let mut scope = Vec::new();
        write_len_delimited(1, scope_name.as_bytes(), &mut scope);
        write_len_delimited(2, scope_version.as_bytes(), &mut scope);
        Self { resource, scope }
    }

    /// An `ExportTraceServiceRequest` of one `ResourceSpans` with one `ScopeSpans` holding
    /// `spans` (entries written by [`write_span`]).
    pub(crate) fn request(&self, spans: &[u8]) -> Vec<u8> {
        let scope_spans = len_delimited_len(1, self.scope.len()) + spans.len();
        let resource_spans =
            len_delimited_len(1, self.resource.len()) + len_delimited_len(2, scope_spans);
        let mut body = Vec::with_capacity(len_delimited_len(1, resource_spans));
        write_header(1, resource_spans, &mut body);
        write_len_delimited(1, &self.resource, &mut body);
        write_header(2, scope_spans, &mut body);
        write_len_delimited(1, &self.scope, &mut body);
        body.extend_from_slice(spans);
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{SpanContext, SpanId, TraceId};
    use crate::span::SpanKind;

    fn record() -> SpanRecord {
        SpanRecord {
            context: SpanContext {
                trace_id: TraceId([1; 16]),
                span_id: SpanId([2; 8]),
                sampled: true,
                trace_state: "vendor=1".into(),
            },
            parent_span_id: Some(SpanId([3; 8])),
            parent_is_remote: true,
            name: "chat stub".into(),
            kind: SpanKind::Client,
            start_unix_nanos: 1_000,
            attributes: vec![
                ("gen_ai.request.model", AttributeValue::Str("stub".into())),
                ("gen_ai.usage.input_tokens", AttributeValue::Int(-1)),
                ("gen_ai.request.temperature", AttributeValue::Float(0.5)),
                ("cached", AttributeValue::Bool(true)),
                (
                    "gen_ai.response.finish_reasons",
                    AttributeValue::StrArray(vec!["stop".into(), "length".into()]),
                ),
            ],
            events: vec![EventRecord {
                time_unix_nanos: 1_500,
                name: "retrying".into(),
                attributes: vec![("level", AttributeValue::Str("WARN".into()))],
            }],
            status: StatusCode::Error,
            status_message: Some("timeout".into()),
        }
    }

    /// Reads one length-delimited field's key and length at `at`.
    fn header(bytes: &[u8], at: &mut usize) -> (u64, usize) {
        let mut slice = &bytes[*at..];
        let before = slice.len();
        let key = prost::encoding::decode_varint(&mut slice).unwrap();
        let len = prost::encoding::decode_varint(&mut slice).unwrap() as usize;
        *at += before - slice.len();
        (key, len)
    }

    #[test]
    fn the_lengths_written_are_the_lengths_of_what_follows() {
        let mut spans = Vec::new();
        write_span(&record(), 2_000, &mut spans);
        write_span(&record(), 3_000, &mut spans);
        let mut at = 0;
        for _ in 0..2 {
            let (key, len) = header(&spans, &mut at);
            assert_eq!(key, (2 << 3) | 2, "ScopeSpans.spans, length-delimited");
            assert_eq!(len, span_len(&record()));
            at += len;
        }
        assert_eq!(at, spans.len());

        let envelope = Envelope::new(
            &[("service.name", AttributeValue::Str("tessera".into()))],
            "tessera-api",
            "1.0.0",
        );
        let body = envelope.request(&spans);
        let mut at = 0;
        let (key, len) = header(&body, &mut at);
        assert_eq!(key, (1 << 3) | 2);
        assert_eq!(at + len, body.len(), "one ResourceSpans fills the request");
        assert!(body.ends_with(&spans));
    }

    #[test]
    fn a_string_array_is_an_array_value_of_string_values() {
        let value = AttributeValue::StrArray(vec!["stop".into()]);
        let mut buf = Vec::new();
        write_any_value(&value, &mut buf);
        assert_eq!(buf.len(), any_value_len(&value));
        // AnyValue.array_value (5) { ArrayValue.values (1) { AnyValue.string_value (1) } }
        assert_eq!(buf, [0x2a, 8, 0x0a, 6, 0x0a, 4, b's', b't', b'o', b'p']);
    }

    #[test]
    fn an_integer_attribute_is_a_twos_complement_varint() {
        let mut buf = Vec::new();
        write_any_value(&AttributeValue::Int(-1), &mut buf);
        assert_eq!(buf.len(), any_value_len(&AttributeValue::Int(-1)));
        assert_eq!(
            buf,
            [
                0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
            ]
        );
    }
}
