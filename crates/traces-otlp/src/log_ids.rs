//! Log lines that name their trace: while traces are exported, every line written inside a
//! span carries its `trace_id` and `span_id` (first keys of a JSON line, a prefix of a text
//! line), so a log search leads to the trace and back.

use std::fmt;

use tracing::{Event, Subscriber};
use tracing_subscriber::{
    fmt::{FmtContext, FormatEvent, FormatFields, format::Writer},
    registry::LookupSpan,
};

use crate::span::SpanRecord;

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
        // The nearest exported span of those the log filter shows (`tracing` does not let a
        // subscriber look itself up while it handles an event).
        let context = ctx.lookup_current().and_then(|current| {
            current.scope().find_map(|span| {
                span.extensions()
                    .get::<SpanRecord>()
                    .map(|record| record.context.clone())
            })
        });
        let Some(span) = context else {
            return self.format.format_event(ctx, writer, event);
        };
        let (trace_id, span_id) = (span.trace_id, span.span_id);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tracing_subscriber::{Layer as _, fmt, prelude::*};

    use super::WithTraceIds;
    use crate::{
        context::{Sampler, SpanContext},
        export::Queue,
        layer::{ExportFilter, ExportLayer},
        test_support::Written,
    };

    /// Logs a warning inside a span, then one outside it, with the export layer in place,
    /// as text or JSON lines; gives the span's ids and the lines.
    fn logged(json: bool) -> (SpanContext, String) {
        let written = Written::default();
        let export = ExportLayer {
            sampler: Sampler::ratio(1.0),
            queue: Arc::new(Queue::default()),
        }
        .with_filter(ExportFilter);
        let logs = fmt::layer().with_writer(written.clone()).with_ansi(false);
        let logs = if json {
            logs.json()
                .map_event_format(|format| WithTraceIds { format, json })
                .boxed()
        } else {
            logs.map_event_format(|format| WithTraceIds { format, json })
                .boxed()
        };
        let subscriber = tracing_subscriber::registry().with(export).with(logs);
        let context = tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("work");
            span.in_scope(|| tracing::warn!("inside"));
            tracing::warn!("outside");
            crate::context_of(&span).unwrap()
        });
        (context, written.text())
    }

    #[test]
    fn a_line_inside_a_span_names_its_trace_and_span() {
        let (
            SpanContext {
                trace_id, span_id, ..
            },
            text,
        ) = logged(false);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with(&format!("trace_id={trace_id} span_id={span_id} ")),
            "{text}"
        );
        assert!(!lines[1].contains("trace_id="), "{text}");
    }

    #[test]
    fn a_json_line_starts_with_the_ids() {
        let (
            SpanContext {
                trace_id, span_id, ..
            },
            text,
        ) = logged(true);
        let first = text.lines().next().unwrap();
        let line: serde_json::Value = serde_json::from_str(first).unwrap();
        assert_eq!(line["trace_id"], trace_id.to_string().as_str(), "{text}");
        assert_eq!(line["span_id"], span_id.to_string().as_str(), "{text}");
        assert!(text.starts_with("{\"trace_id\":"), "{text}");
    }
}
