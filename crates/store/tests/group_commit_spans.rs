//! What PostgreSQL's group commit traces: one span per batch statement, a root of its own
//! with the batch's size, not one per waiting write (issue 32: tracing's cost per completion).
#![cfg(feature = "chats")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    io,
    sync::{Arc, Mutex},
};

use tessera_kernel::OrganizationId;
use tessera_store::{
    Backend, SqlUsageStore,
    testing::{TestDatabase, store_organization},
};
use tessera_usage::{UsageStore, contract::record};
use tracing_subscriber::fmt::{MakeWriter, format::FmtSpan};

/// The log lines written, shared with the subscriber that writes them.
#[derive(Clone, Default)]
struct Written(Arc<Mutex<Vec<u8>>>);

impl io::Write for Written {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl MakeWriter<'_> for Written {
    type Writer = Self;

    fn make_writer(&self) -> Self {
        self.clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_batch_is_one_span_with_its_size() {
    // The writers run on the runtime's threads: the subscriber must be the process's.
    let written = Written::default();
    tracing_subscriber::fmt()
        .with_writer(written.clone())
        .with_ansi(false)
        .with_span_events(FmtSpan::CLOSE)
        .init();
    let db = TestDatabase::of(Backend::Postgres).await;
    let acme = OrganizationId::generate();
    store_organization(&db.database, &acme, "Acme").await;
    let store = SqlUsageStore::new(db.database.clone());
    let records: Vec<_> = (0..40)
        .map(|i| record(&acme, "2026-09-01T10:00:00Z", 10 + i))
        .collect();
    let written_records =
        futures_util::future::join_all(records.iter().map(|record| store.record(record))).await;
    assert!(
        written_records.iter().all(Result::is_ok),
        "{written_records:?}"
    );
    let stats = store.group_commit_stats().unwrap();
    assert!(stats.batched_writes >= 2, "{stats:?}");

    let logged = String::from_utf8(written.0.lock().unwrap().clone()).unwrap();
    let spans: Vec<&str> = logged
        .lines()
        .filter(|line| line.contains("group commit{") && line.contains("close"))
        .collect();
    assert!(
        spans
            .iter()
            .all(|line| line.contains(r#"otel.name="insert usage""#)),
        "{logged}"
    );
    let sized = spans
        .iter()
        .filter(|line| line.contains("db.operation.batch.size="))
        .count();
    // A span per statement: the batches of several writes carry their size, a write that
    // went alone does not; together they account for every write exactly once.
    assert_eq!(sized as u64, stats.batches, "{logged}");
    let alone = spans.len() as u64 - stats.batches;
    assert_eq!(
        alone + stats.batched_writes,
        records.len() as u64,
        "{logged}"
    );
}
