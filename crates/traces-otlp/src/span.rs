//! What an exported span is made of while it runs: its context, name, kind, times,
//! attributes, events and status, filled from a `tracing` span's fields. Field names
//! starting `otel.` set the span's name (`otel.name`), kind (`otel.kind`) and status
//! (`otel.status_code`, `otel.status_message`) instead of becoming attributes, as
//! `tracing-opentelemetry` spells them.

use std::{
    borrow::Cow,
    fmt::{self, Write as _},
    time::{SystemTime, UNIX_EPOCH},
};

use tracing::field::{Field, Visit};

use crate::context::{SpanContext, SpanId};

/// OTLP's `Span.SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum SpanKind {
    Internal = 1,
    Server = 2,
    Client = 3,
    Producer = 4,
    Consumer = 5,
}

/// OTLP's `Status.StatusCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum StatusCode {
    Unset = 0,
    Ok = 1,
    Error = 2,
}

/// An attribute's value (OTLP's `AnyValue`: the scalar kinds, and arrays of strings).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AttributeValue {
    Str(String),
    Bool(bool),
    Int(i64),
    Float(f64),
    StrArray(Vec<String>),
}

/// Attributes whose OpenTelemetry type is a string array. `tracing` has no array value, so
/// such a field is recorded as text, its elements separated by commas (one element, most
/// often: `finish_reasons = "stop"`), and exported as an array.
const STRING_ARRAYS: &[&str] = &["gen_ai.response.finish_reasons"];

/// A log event inside a span, exported as a span event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EventRecord {
    pub time_unix_nanos: u64,
    pub name: String,
    pub attributes: Vec<(&'static str, AttributeValue)>,
}

/// A span as it will be exported, kept in the `tracing` span's extensions until it closes.
/// A span of a trace that is not kept records its context only (children and outgoing
/// calls still carry the trace on).
#[derive(Debug, Clone)]
pub(crate) struct SpanRecord {
    pub context: SpanContext,
    pub parent_span_id: Option<SpanId>,
    /// The parent is the caller's span, in another process.
    pub parent_is_remote: bool,
    pub name: Cow<'static, str>,
    pub kind: SpanKind,
    pub start_unix_nanos: u64,
    pub attributes: Vec<(&'static str, AttributeValue)>,
    pub events: Vec<EventRecord>,
    pub status: StatusCode,
    pub status_message: Option<String>,
}

impl SpanRecord {
    pub(crate) fn new(
        context: SpanContext,
        parent_span_id: Option<SpanId>,
        parent_is_remote: bool,
        name: &'static str,
    ) -> Self {
        Self {
            start_unix_nanos: if context.sampled { unix_nanos() } else { 0 },
            context,
            parent_span_id,
            parent_is_remote,
            name: Cow::Borrowed(name),
            kind: SpanKind::Internal,
            attributes: Vec::new(),
            events: Vec::new(),
            status: StatusCode::Unset,
            status_message: None,
        }
    }
}

fn kind_named(kind: &str) -> Option<SpanKind> {
    [
        ("internal", SpanKind::Internal),
        ("server", SpanKind::Server),
        ("client", SpanKind::Client),
        ("producer", SpanKind::Producer),
        ("consumer", SpanKind::Consumer),
    ]
    .into_iter()
    .find_map(|(name, kind_named)| kind.eq_ignore_ascii_case(name).then_some(kind_named))
}

fn status_named(code: &str) -> Option<StatusCode> {
    [
        ("error", StatusCode::Error),
        ("ok", StatusCode::Ok),
        ("unset", StatusCode::Unset),
    ]
    .into_iter()
    .find_map(|(name, status)| code.eq_ignore_ascii_case(name).then_some(status))
}

/// Now, in nanoseconds since the Unix epoch.
pub(crate) fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64)
}

fn debug_text(value: &dyn fmt::Debug) -> String {
    let mut text = String::new();
    let _ = write!(text, "{value:?}");
    text
}

fn integer(value: u64) -> AttributeValue {
    i64::try_from(value).map_or_else(
        |_| AttributeValue::Str(value.to_string()),
        AttributeValue::Int,
    )
}

/// What fields are recorded on: a span or an event.
pub(crate) trait Recorded {
    fn set(&mut self, key: &'static str, value: AttributeValue);

    /// A text value, copied only when it is kept.
    fn set_str(&mut self, key: &'static str, value: &str) {
        self.set(key, AttributeValue::Str(value.to_owned()));
    }
}

/// `otel.*` fields set the span's name, kind and status; the others are its attributes
/// (a field recorded again replaces its value).
impl Recorded for SpanRecord {
    fn set_str(&mut self, key: &'static str, value: &str) {
        match key {
            "otel.kind" => self.kind = kind_named(value).unwrap_or(self.kind),
            "otel.status_code" => self.status = status_named(value).unwrap_or(self.status),
            _ if STRING_ARRAYS.contains(&key) => self.set(
                key,
                AttributeValue::StrArray(value.split(',').map(str::to_owned).collect()),
            ),
            _ => self.set(key, AttributeValue::Str(value.to_owned())),
        }
    }

    fn set(&mut self, key: &'static str, value: AttributeValue) {
        match (key, value) {
            ("otel.kind" | "otel.status_code", AttributeValue::Str(text)) => {
                self.set_str(key, &text);
            }
            ("otel.name", AttributeValue::Str(name)) => self.name = Cow::Owned(name),
            ("otel.status_message" | "otel.status_description", AttributeValue::Str(message)) => {
                self.status_message = Some(message);
            }
            // Only text names a span, its kind or its status.
            (
                "otel.name"
                | "otel.kind"
                | "otel.status_code"
                | "otel.status_message"
                | "otel.status_description",
                _,
            ) => {}
            (key, value) => match self.attributes.iter_mut().find(|(name, _)| *name == key) {
                Some((_, old)) => *old = value,
                None => self.attributes.push((key, value)),
            },
        }
    }
}

/// An event's `message` names it; its other fields are its attributes.
impl Recorded for EventRecord {
    fn set(&mut self, key: &'static str, value: AttributeValue) {
        match (key, value) {
            ("message", AttributeValue::Str(message)) => self.name = message,
            (key, value) => self.attributes.push((key, value)),
        }
    }
}

/// Records `tracing` fields on a span (as attributes, or its name, kind and status) or on
/// an event.
pub(crate) struct Fields<'a, R>(pub &'a mut R);

impl<R: Recorded> Visit for Fields<'_, R> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.set(field.name(), AttributeValue::Float(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.set(field.name(), AttributeValue::Int(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.set(field.name(), integer(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.set(field.name(), AttributeValue::Bool(value));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.set_str(field.name(), value);
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0
            .set(field.name(), AttributeValue::Str(value.to_string()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .set(field.name(), AttributeValue::Str(debug_text(value)));
    }
}
