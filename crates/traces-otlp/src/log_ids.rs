//! Log lines that name their trace: while traces are exported, every line written inside a
//! span carries its `trace_id` and `span_id` (first keys of a JSON line, a prefix of a text
//! line), so a log search leads to the trace and back.

use std::fmt;

use opentelemetry::trace::TraceContextExt as _;
use tracing::{Event, Subscriber};
use tracing_subscriber::{
    fmt::{FmtContext, FormatEvent, FormatFields, format::Writer},
    registry::LookupSpan,
};

/// Wraps an event format, adding the current span's OpenTelemetry ids.
pub struct WithTraceIds<F> {
    pub format: F,
    /// The format writes JSON objects (the ids become their first keys).
    pub json: bool,
}

impl<S, N, F> FormatEvent<S, N> for WithTraceIds<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let id = ctx.lookup_current().map(|span| span.id());
        let ids = id
            .and_then(|id| {
                tracing::dispatcher::get_default(|dispatch| {
                    tracing_opentelemetry::get_otel_context(&id, dispatch)
                })
            })
            .map(|context| context.span().span_context().clone())
            .filter(|span| span.is_valid());
        let Some(span) = ids else {
            return self.format.format_event(ctx, writer, event);
        };
        let (trace_id, span_id) = (span.trace_id(), span.span_id());
        if !self.json {
            write!(writer, "trace_id={trace_id} span_id={span_id} ")?;
            return self.format.format_event(ctx, writer, event);
        }
        let mut line = String::new();
        self.format
            .format_event(ctx, Writer::new(&mut line), event)?;
        match line.strip_prefix('{') {
            Some(rest) => write!(
                writer,
                "{{\"trace_id\":\"{trace_id}\",\"span_id\":\"{span_id}\",{rest}"
            ),
            None => writer.write_str(&line),
        }
    }
}
