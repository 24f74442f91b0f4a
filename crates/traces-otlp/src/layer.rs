//! The `tracing` layer that turns spans into exported OpenTelemetry spans: a span takes its
//! trace from its parent, from the caller's context it was started under
//! ([`with_remote_parent`]), or starts a trace the sampler keeps or not; its fields are
//! recorded as they come; when it closes it is encoded into the export queue. Warnings and
//! errors logged inside a span are its events (an error marks it failed). It does nothing on
//! enter and exit, so polling an instrumented future costs only the registry's bookkeeping.

use std::{cell::RefCell, sync::Arc};

use tracing::{
    Event, Level, Metadata, Subscriber,
    span::{Attributes, Id, Record},
    subscriber::Interest,
};
use tracing_subscriber::{
    Registry,
    layer::{Context, Filter, Layer},
    registry::LookupSpan,
};

use crate::{
    context::{Sampler, SpanContext, SpanId, TraceId},
    export::Queue,
    span::{EventRecord, Fields, SpanRecord, StatusCode, unix_nanos},
};

thread_local! {
    /// The caller's context the next root span on this thread continues.
    static REMOTE_PARENT: RefCell<Option<SpanContext>> = const { RefCell::new(None) };
}

/// Runs `start` (which starts a span) so that its root span continues the caller's trace
/// (`parent`, read from a `traceparent` header), following the caller's sampling decision.
pub fn with_remote_parent<T>(parent: Option<SpanContext>, start: impl FnOnce() -> T) -> T {
    if parent.is_none() {
        return start();
    }
    REMOTE_PARENT.with(|slot| *slot.borrow_mut() = parent);
    let started = start();
    REMOTE_PARENT.with(|slot| slot.borrow_mut().take());
    started
}

/// The context of `span` (or, when it is not exported, of its nearest exported ancestor).
pub fn context_of(span: &tracing::Span) -> Option<SpanContext> {
    span.with_subscriber(|(id, dispatch)| {
        let registry = dispatch.downcast_ref::<Registry>()?;
        registry.span(id)?.scope().find_map(|span| {
            span.extensions()
                .get::<SpanRecord>()
                .map(|record| record.context.clone())
        })
    })
    .flatten()
}

/// Exports spans at `INFO` and above, and records `WARN` and `ERROR` events as span events.
pub(crate) struct ExportLayer {
    pub sampler: Sampler,
    pub queue: Arc<Queue>,
}

impl ExportLayer {
    /// Where a new span sits: under its parent's record, under the caller's context, or at
    /// the root of a new trace.
    fn context_for<S>(
        &self,
        parent: Option<tracing_subscriber::registry::SpanRef<'_, S>>,
    ) -> (SpanContext, Option<SpanId>, bool)
    where
        S: for<'a> LookupSpan<'a>,
    {
        let span_id = SpanId::random();
        if let Some(parent) = parent
            && let Some(record) = parent.extensions().get::<SpanRecord>()
        {
            let context = SpanContext {
                span_id,
                ..record.context.clone()
            };
            return (context, Some(record.context.span_id), false);
        }
        if let Some(caller) = REMOTE_PARENT.with(|slot| slot.borrow_mut().take()) {
            let parent = caller.span_id;
            let sampled = self.sampler.keeps_for(&caller);
            return (
                SpanContext {
                    span_id,
                    sampled,
                    ..caller
                },
                Some(parent),
                true,
            );
        }
        let trace_id = TraceId::random();
        let context = SpanContext {
            trace_id,
            span_id,
            sampled: self.sampler.keeps(trace_id),
            trace_state: String::new(),
        };
        (context, None, false)
    }
}

impl<S> Layer<S> for ExportLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let (context, parent, remote) = self.context_for(span.parent());
        let mut record = SpanRecord::new(context, parent, remote, attrs.metadata().name());
        if record.context.sampled {
            attrs.record(&mut Fields(&mut record));
        }
        span.extensions_mut().insert(record);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        if let Some(record) = extensions.get_mut::<SpanRecord>()
            && record.context.sampled
        {
            values.record(&mut Fields(record));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let level = *event.metadata().level();
        let Some(span) = ctx.event_span(event) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        let Some(record) = extensions.get_mut::<SpanRecord>() else {
            return;
        };
        if !record.context.sampled {
            return;
        }
        let mut recorded = EventRecord {
            time_unix_nanos: unix_nanos(),
            name: String::new(),
            attributes: vec![("level", crate::span::AttributeValue::Str(level.to_string()))],
        };
        event.record(&mut Fields(&mut recorded));
        if level == Level::ERROR && record.status == StatusCode::Unset {
            record.status = StatusCode::Error;
        }
        record.events.push(recorded);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let record = span.extensions_mut().remove::<SpanRecord>();
        if let Some(record) = record
            && record.context.sampled
        {
            self.queue.push(&record, unix_nanos());
        }
    }
}

/// What the export layer sees: spans at `INFO` and above, events at `WARN` and above. The
/// decision depends on the callsite alone, so `tracing` caches it per callsite.
pub(crate) struct ExportFilter;

impl ExportFilter {
    fn wants(metadata: &Metadata<'_>) -> bool {
        let level = *metadata.level();
        if metadata.is_event() {
            level <= Level::WARN
        } else {
            level <= Level::INFO
        }
    }
}

impl<S> Filter<S> for ExportFilter {
    fn enabled(&self, metadata: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        Self::wants(metadata)
    }

    fn callsite_enabled(&self, metadata: &'static Metadata<'static>) -> Interest {
        if Self::wants(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::INFO)
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::prelude::*;

    use super::*;

    fn exporting(
        ratio: f64,
    ) -> (
        impl Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
        Arc<Queue>,
    ) {
        let queue = Arc::new(Queue::default());
        let layer = ExportLayer {
            sampler: Sampler::ratio(ratio),
            queue: queue.clone(),
        }
        .with_filter(ExportFilter);
        (tracing_subscriber::registry().with(layer), queue)
    }

    fn caller(sampled: bool) -> SpanContext {
        SpanContext::from_headers(
            Some(&format!(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0{}",
                u8::from(sampled)
            )),
            Some("vendor=1"),
        )
        .unwrap()
    }

    #[test]
    fn a_child_is_in_its_parents_trace_and_both_are_exported_when_closed() {
        let (subscriber, queue) = exporting(1.0);
        tracing::subscriber::with_default(subscriber, || {
            let parent = tracing::info_span!("parent", "otel.name" = "renamed");
            let child = parent.in_scope(|| tracing::info_span!("child", answer = 42));
            let (outer, inner) = (context_of(&parent).unwrap(), context_of(&child).unwrap());
            assert_eq!(inner.trace_id, outer.trace_id);
            assert_ne!(inner.span_id, outer.span_id);
            assert!(outer.sampled && inner.sampled);
            drop(child);
            assert_eq!(queue.queued(), 1, "a span is exported when it closes");
            drop(parent);
        });
        assert_eq!(queue.queued(), 2);
        let spans = queue.encoded();
        assert!(contains(&spans, b"renamed") && !contains(&spans, b"parent"));
        assert!(contains(&spans, b"answer"));
    }

    #[test]
    fn a_root_span_started_for_a_caller_continues_its_trace_once() {
        let (subscriber, queue) = exporting(0.0);
        tracing::subscriber::with_default(subscriber, || {
            let request = with_remote_parent(Some(caller(true)), || tracing::info_span!("request"));
            let context = context_of(&request).unwrap();
            assert_eq!(context.trace_id, caller(true).trace_id);
            assert_ne!(context.span_id, caller(true).span_id);
            assert_eq!(context.trace_state, "vendor=1");
            assert!(context.sampled, "the caller's decision wins over the ratio");
            let next = tracing::info_span!("next");
            assert_ne!(context_of(&next).unwrap().trace_id, context.trace_id);
        });
        assert_eq!(
            queue.queued(),
            1,
            "only the caller's sampled trace is exported"
        );
        assert!(contains(&queue.encoded(), &caller(true).span_id.0));
    }

    #[test]
    fn a_trace_not_kept_is_carried_on_but_not_exported() {
        let (subscriber, queue) = exporting(1.0);
        tracing::subscriber::with_default(subscriber, || {
            let request =
                with_remote_parent(Some(caller(false)), || tracing::info_span!("request"));
            let child = request.in_scope(|| tracing::info_span!("child"));
            let context = context_of(&child).unwrap();
            assert_eq!(context.trace_id, caller(false).trace_id);
            assert!(!context.sampled);
        });
        assert_eq!(queue.queued(), 0);
    }

    #[test]
    fn a_debug_span_belongs_to_its_nearest_exported_ancestor() {
        let (subscriber, queue) = exporting(1.0);
        // Logs at `debug` make the debug span exist; the export layer still ignores it.
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::sink)
            .with_filter(tracing::level_filters::LevelFilter::DEBUG);
        tracing::subscriber::with_default(subscriber.with(logs), || {
            let parent = tracing::info_span!("parent");
            let detail = parent.in_scope(|| tracing::debug_span!("detail"));
            assert!(!detail.is_disabled());
            assert_eq!(context_of(&detail), context_of(&parent));
        });
        assert_eq!(queue.queued(), 1);
    }

    #[test]
    fn errors_inside_a_span_are_its_events_and_its_status() {
        let (subscriber, queue) = exporting(1.0);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("work");
            span.in_scope(|| {
                tracing::info!("routine");
                tracing::error!(code = 7, "it broke");
            });
        });
        let spans = queue.encoded();
        assert!(contains(&spans, b"it broke") && !contains(&spans, b"routine"));
        // Status { code: ERROR }: field 15, length 2, then field 3 = 2.
        assert!(contains(&spans, &[0x7a, 0x02, 0x18, 0x02]));
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack
            .windows(needle.len())
            .any(|window| window == needle)
    }
}
