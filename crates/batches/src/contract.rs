//! The `BatchStore` contract, for anyone implementing the port: each function checks
//! promises of the trait against a fresh, empty store (a [`BatchStores`]), and
//! [`batch_store_contract!`](crate::batch_store_contract) turns them into tests. Batches stay
//! within their organization; a claim takes an active batch once, under a lease that only
//! its holder renews; an answer is kept and counted once; and a [`BatchRunner`] over the
//! store survives a runner that stopped midway, with nothing lost or repeated.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value, json};
use tessera_kernel::{
    AuditRecord, Clock, Limit, ManualClock, Metadata, OrganizationId, PageRequest, Principal,
    PrincipalKind, Scope,
};

use crate::{
    Batch, BatchEnd, BatchEndpoint, BatchFiles, BatchId, BatchRunner, BatchService, BatchStatus,
    BatchStore, InputFileError, LineExecutor, LineResponse, LineResult, NewBatch, RunnerSettings,
};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own store made by `$factory`: an expression that, called with no argument, gives a
/// future of `(stores, guard)`, `stores` a [`BatchStores`](crate::contract::BatchStores).
#[macro_export]
macro_rules! batch_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            batches_read_back_within_their_organization,
            cancelling_marks_active_batches_and_leaves_ended_ones,
            a_claim_takes_a_batch_once_under_a_lease_only_its_holder_renews,
            answers_are_kept_and_counted_once,
            a_runner_takes_over_a_stopped_one_without_losing_or_repeating_a_line,
            a_cancel_stops_the_runner_between_lines,
        );
    };
}

/// What the checks run on: a batch store over one empty state, and a way to make an
/// organization exist before batches refer to it.
#[async_trait]
pub trait BatchStores: Send + Sync {
    fn store(&self) -> Arc<dyn BatchStore>;

    /// Makes the organization `id` (named `name`) exist where batches refer to it. Panics
    /// if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);
}

fn start() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-06-01T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn owner(organization: &OrganizationId) -> Principal {
    Principal {
        organization_id: organization.clone(),
        subject: "key_batch_owner".into(),
        kind: PrincipalKind::ApiKey,
        scopes: ["chats:invoke".parse::<Scope>().unwrap()]
            .into_iter()
            .collect(),
        origin: None,
    }
}

async fn organization(stores: &impl BatchStores) -> OrganizationId {
    let id = OrganizationId::generate();
    stores.organization_exists(&id, "Batch org").await;
    id
}

fn batch(organization: &OrganizationId, created_at: DateTime<Utc>, total: u32) -> Batch {
    let mut pairs = std::collections::BTreeMap::new();
    pairs.insert("job".to_owned(), "nightly".to_owned());
    Batch {
        id: BatchId::generate(),
        organization: organization.clone(),
        owner: owner(organization),
        endpoint: BatchEndpoint::ChatCompletions,
        input_file_id: "file_input".into(),
        completion_window: "24h".into(),
        metadata: Metadata::trusted(pairs),
        status: BatchStatus::InProgress,
        errors: Vec::new(),
        output_file_id: None,
        error_file_id: None,
        counts: crate::RequestCounts {
            total,
            completed: 0,
            failed: 0,
        },
        created_at,
        in_progress_at: Some(created_at),
        expires_at: created_at + Duration::hours(24),
        finalizing_at: None,
        completed_at: None,
        failed_at: None,
        expired_at: None,
        cancelling_at: None,
        cancelled_at: None,
    }
}

fn audit(batch: &Batch, action: &str) -> AuditRecord {
    AuditRecord::of(
        &batch.owner,
        action,
        "batch",
        batch.id.as_str(),
        batch.created_at,
    )
}

fn answer(line: u32, status: u16) -> LineResult {
    LineResult {
        line,
        custom_id: format!("req-{line}"),
        request_id: format!("batch_req_{line}"),
        status_code: Some(status),
        body: json!({"line": line}),
    }
}

pub async fn batches_read_back_within_their_organization(stores: &impl BatchStores) {
    let store = stores.store();
    let (acme, other) = (organization(stores).await, organization(stores).await);
    let mut saved = Vec::new();
    for minute in 0..3 {
        let one = batch(&acme, start() + Duration::minutes(minute), 2);
        store
            .insert(&one, &audit(&one, "batch.create"))
            .await
            .unwrap();
        saved.push(one);
    }
    assert_eq!(
        store.get(&acme, &saved[0].id).await.unwrap().as_ref(),
        Some(&saved[0])
    );
    assert_eq!(store.get(&other, &saved[0].id).await.unwrap(), None);

    let first = PageRequest::first(Limit::new(2).unwrap());
    let page = store.list(&acme, &first).await.unwrap();
    let ids: Vec<&BatchId> = page.iter().map(|batch| &batch.id).collect();
    // Newest first, one more than the page to tell that more exist.
    assert_eq!(ids, vec![&saved[2].id, &saved[1].id, &saved[0].id]);
    let after = PageRequest {
        limit: Limit::new(2).unwrap(),
        after: Some(saved[1].id.clone()),
    };
    let rest = store.list(&acme, &after).await.unwrap();
    assert_eq!(rest, vec![saved[0].clone()]);
    assert!(store.list(&other, &first).await.unwrap().is_empty());
}

pub async fn cancelling_marks_active_batches_and_leaves_ended_ones(stores: &impl BatchStores) {
    let store = stores.store();
    let (acme, other) = (organization(stores).await, organization(stores).await);
    let running = batch(&acme, start(), 1);
    store
        .insert(&running, &audit(&running, "batch.create"))
        .await
        .unwrap();
    let at = start() + Duration::minutes(1);
    assert_eq!(
        store
            .request_cancel(&other, &running.id, at, &audit(&running, "batch.cancel"))
            .await
            .unwrap(),
        None,
        "another organization's batch is not found"
    );
    let cancelling = store
        .request_cancel(&acme, &running.id, at, &audit(&running, "batch.cancel"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cancelling.status, BatchStatus::Cancelling);
    assert_eq!(cancelling.cancelling_at, Some(at));

    let mut failed = batch(&acme, start(), 0);
    failed.status = BatchStatus::Failed;
    failed.failed_at = Some(start());
    failed.errors = vec![crate::BatchProblem::at_line(
        3,
        "invalid_json_line",
        "not JSON",
    )];
    store
        .insert(&failed, &audit(&failed, "batch.create"))
        .await
        .unwrap();
    let unchanged = store
        .request_cancel(&acme, &failed.id, at, &audit(&failed, "batch.cancel"))
        .await
        .unwrap();
    assert_eq!(
        unchanged,
        Some(failed.clone()),
        "an ended batch stays as it is"
    );
    // An ended batch is never claimed; the cancelling one is (its runner ends it).
    let claimed = store
        .claim("run_a", at, at + Duration::minutes(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.id, running.id);
    assert_eq!(claimed.status, BatchStatus::Cancelling);
    // Its runner cannot move it on to finalizing: the cancel is never overwritten.
    let moved = store
        .advance(&running.id, "run_a", BatchStatus::Finalizing, 3, at)
        .await
        .unwrap();
    assert!(!moved, "a cancelling batch does not move to finalizing");
}

pub async fn a_claim_takes_a_batch_once_under_a_lease_only_its_holder_renews(
    stores: &impl BatchStores,
) {
    let store = stores.store();
    let acme = organization(stores).await;
    let older = batch(&acme, start(), 3);
    let newer = batch(&acme, start() + Duration::seconds(1), 3);
    store
        .insert(&older, &audit(&older, "batch.create"))
        .await
        .unwrap();
    store
        .insert(&newer, &audit(&newer, "batch.create"))
        .await
        .unwrap();
    let now = start() + Duration::minutes(1);
    let lease = Duration::minutes(5);

    let a = store
        .claim("run_a", now, now + lease)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a.id, older.id, "the oldest active batch first");
    let b = store
        .claim("run_b", now, now + lease)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b.id, newer.id);
    assert_eq!(store.claim("run_c", now, now + lease).await.unwrap(), None);

    assert_eq!(
        store
            .renew(&older.id, "run_a", now + lease * 2)
            .await
            .unwrap(),
        Some(BatchStatus::InProgress)
    );
    assert_eq!(
        store.renew(&older.id, "run_b", now + lease).await.unwrap(),
        None
    );
    // run_b's lease lapses without a renewal: run_c takes the batch over.
    let later = now + lease + Duration::seconds(1);
    let c = store
        .claim("run_c", later, later + lease)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.id, newer.id);
    assert_eq!(
        store
            .renew(&newer.id, "run_b", later + lease)
            .await
            .unwrap(),
        None
    );
    assert!(
        !store
            .record(&newer.id, "run_b", &answer(0, 200))
            .await
            .unwrap()
    );
    assert!(
        !store
            .advance(&newer.id, "run_b", BatchStatus::Finalizing, 3, later)
            .await
            .unwrap()
    );
    assert!(store.results(&newer.id).await.unwrap().is_empty());
}

pub async fn answers_are_kept_and_counted_once(stores: &impl BatchStores) {
    let store = stores.store();
    let acme = organization(stores).await;
    let one = batch(&acme, start(), 3);
    store
        .insert(&one, &audit(&one, "batch.create"))
        .await
        .unwrap();
    let now = start() + Duration::minutes(1);
    store
        .claim("run_a", now, now + Duration::minutes(5))
        .await
        .unwrap()
        .unwrap();

    assert!(
        store
            .record(&one.id, "run_a", &answer(0, 200))
            .await
            .unwrap()
    );
    assert!(
        store
            .record(&one.id, "run_a", &answer(1, 400))
            .await
            .unwrap()
    );
    // The same line again (a runner that took over) is neither kept twice nor counted.
    let mut again = answer(0, 500);
    again.request_id = "batch_req_other".into();
    assert!(store.record(&one.id, "run_a", &again).await.unwrap());
    let mut kept = store.results(&one.id).await.unwrap();
    kept.sort_by_key(|result| result.line);
    assert_eq!(kept, vec![answer(0, 200), answer(1, 400)]);
    let counts = store.get(&acme, &one.id).await.unwrap().unwrap().counts;
    assert_eq!((counts.total, counts.completed, counts.failed), (3, 1, 1));

    let at = now + Duration::minutes(2);
    assert!(
        store
            .advance(&one.id, "run_a", BatchStatus::Finalizing, 3, at)
            .await
            .unwrap()
    );
    let finalizing = store.get(&acme, &one.id).await.unwrap().unwrap();
    assert_eq!(
        (finalizing.status, finalizing.finalizing_at),
        (BatchStatus::Finalizing, Some(at))
    );
    let end = BatchEnd {
        status: BatchStatus::Completed,
        output_file_id: Some("file_out".into()),
        error_file_id: Some("file_err".into()),
        errors: Vec::new(),
        at,
    };
    assert!(!store.finish(&one.id, "run_b", &end).await.unwrap());
    assert!(store.finish(&one.id, "run_a", &end).await.unwrap());
    let done = store.get(&acme, &one.id).await.unwrap().unwrap();
    assert_eq!(done.status, BatchStatus::Completed);
    assert_eq!(done.completed_at, Some(at));
    assert_eq!(done.output_file_id.as_deref(), Some("file_out"));
    assert_eq!(done.error_file_id.as_deref(), Some("file_err"));
    assert!(
        store.results(&one.id).await.unwrap().is_empty(),
        "the files hold them now"
    );
    let later = at + Duration::hours(1);
    assert_eq!(store.claim("run_a", later, later).await.unwrap(), None);
}

/// Batch files in memory: inputs by id, outputs as they are written.
#[derive(Default)]
struct MemoryFiles {
    inputs: Mutex<HashMap<String, Vec<u8>>>,
    outputs: Mutex<Vec<(String, String)>>,
}

#[async_trait]
impl BatchFiles for MemoryFiles {
    async fn input(&self, _owner: &Principal, file_id: &str) -> Result<Vec<u8>, InputFileError> {
        self.inputs
            .lock()
            .unwrap()
            .get(file_id)
            .cloned()
            .ok_or(InputFileError::NotFound)
    }

    async fn store_output(
        &self,
        _owner: &Principal,
        name: &str,
        content: Vec<u8>,
    ) -> Result<String, tessera_kernel::DomainError> {
        let mut outputs = self.outputs.lock().unwrap();
        outputs.push((name.to_owned(), String::from_utf8(content).unwrap()));
        Ok(format!("file_{}", outputs.len()))
    }
}

/// What runs before an answer, given the call's number from 1.
type Hook = Box<dyn FnMut(usize) -> Option<futures_util::future::BoxFuture<'static, ()>> + Send>;

/// Answers each line with its `n` doubled (400 when `n` is odd), counting its calls; a
/// hook runs before each answer.
struct Doubler {
    calls: Mutex<Vec<i64>>,
    hook: Mutex<Option<Hook>>,
}

impl Doubler {
    fn new() -> Self {
        Self {
            calls: Mutex::new(Vec::new()),
            hook: Mutex::new(None),
        }
    }
}

#[async_trait]
impl LineExecutor for Doubler {
    async fn execute(
        &self,
        _owner: &Principal,
        _endpoint: BatchEndpoint,
        body: Map<String, Value>,
    ) -> Option<LineResponse> {
        let n = body["n"].as_i64().unwrap();
        let call = {
            let mut calls = self.calls.lock().unwrap();
            calls.push(n);
            calls.len()
        };
        let pending = self
            .hook
            .lock()
            .unwrap()
            .as_mut()
            .and_then(|hook| hook(call));
        if let Some(pending) = pending {
            pending.await;
        }
        Some(if n % 2 == 1 {
            LineResponse {
                status_code: 400,
                body: json!({"error": {"message": "odd"}}),
            }
        } else {
            LineResponse {
                status_code: 200,
                body: json!({"doubled": n * 2}),
            }
        })
    }
}

fn input(lines: i64) -> Vec<u8> {
    (0..lines)
        .map(|n| {
            format!(
                r#"{{"custom_id":"req-{n}","method":"POST","url":"/v1/chat/completions","body":{{"model":"m","n":{n}}}}}"#
            ) + "\n"
        })
        .collect::<String>()
        .into_bytes()
}

struct Harness {
    store: Arc<dyn BatchStore>,
    files: Arc<MemoryFiles>,
    executor: Arc<Doubler>,
    clock: Arc<ManualClock>,
    service: BatchService,
}

impl Harness {
    fn new(store: Arc<dyn BatchStore>) -> Self {
        let files = Arc::new(MemoryFiles::default());
        let clock = Arc::new(ManualClock::new(start()));
        let service = BatchService::new(store.clone(), files.clone(), clock.clone());
        Self {
            store,
            files,
            executor: Arc::new(Doubler::new()),
            clock,
            service,
        }
    }

    fn runner(&self, name: &str) -> BatchRunner {
        BatchRunner::new(
            self.store.clone(),
            self.files.clone(),
            self.executor.clone(),
            self.clock.clone(),
            name.to_owned(),
            RunnerSettings::default(),
        )
    }

    async fn create(&self, owner: &Principal, lines: i64) -> Batch {
        self.files
            .inputs
            .lock()
            .unwrap()
            .insert("file_input".into(), input(lines));
        self.service
            .create(
                owner,
                NewBatch {
                    input_file_id: "file_input".into(),
                    endpoint: BatchEndpoint::ChatCompletions,
                    metadata: Metadata::default(),
                },
            )
            .await
            .unwrap()
    }
}

/// The custom ids of a JSON-lines file, in order.
fn custom_ids(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["custom_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

pub async fn a_runner_takes_over_a_stopped_one_without_losing_or_repeating_a_line(
    stores: &impl BatchStores,
) {
    let harness = Harness::new(stores.store());
    let acme = organization(stores).await;
    let owner = owner(&acme);
    let created = harness.create(&owner, 5).await;
    assert_eq!(
        (created.status, created.counts.total),
        (BatchStatus::InProgress, 5)
    );

    // A runner that claimed the batch and kept two answers, then stopped (killed).
    let now = harness.clock.now();
    let lease = RunnerSettings::default().lease;
    harness
        .store
        .claim("run_dead", now, now + lease)
        .await
        .unwrap()
        .unwrap();
    for line in [0, 3] {
        let mut kept = answer(line, if line % 2 == 1 { 400 } else { 200 });
        kept.custom_id = format!("req-{line}");
        assert!(
            harness
                .store
                .record(&created.id, "run_dead", &kept)
                .await
                .unwrap()
        );
    }
    let runner = harness.runner("run_next");
    assert!(!runner.run_one().await.unwrap(), "the lease still holds");
    harness.clock.advance(lease + Duration::seconds(1));
    assert!(runner.run_one().await.unwrap());

    let mut calls = harness.executor.calls.lock().unwrap().clone();
    calls.sort_unstable();
    assert_eq!(calls, vec![1, 2, 4], "only the lines without an answer ran");
    let done = harness.service.get(&owner, &created.id).await.unwrap();
    assert_eq!(done.status, BatchStatus::Completed);
    assert_eq!(
        (done.counts.total, done.counts.completed, done.counts.failed),
        (5, 3, 2)
    );
    assert!(done.finalizing_at.is_some() && done.completed_at.is_some());
    let outputs = harness.files.outputs.lock().unwrap().clone();
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs[0].0, format!("{}_output.jsonl", created.id));
    assert_eq!(custom_ids(&outputs[0].1), vec!["req-0", "req-2", "req-4"]);
    assert_eq!(custom_ids(&outputs[1].1), vec!["req-1", "req-3"]);
    assert_eq!(done.output_file_id.as_deref(), Some("file_1"));
    assert_eq!(done.error_file_id.as_deref(), Some("file_2"));
    assert!(!runner.run_one().await.unwrap(), "nothing is left to claim");
}

pub async fn a_cancel_stops_the_runner_between_lines(stores: &impl BatchStores) {
    let harness = Harness::new(stores.store());
    let acme = organization(stores).await;
    let owner = owner(&acme);
    let created = harness.create(&owner, 4).await;
    // The second line's call cancels the batch, as a client would while it runs.
    let (service, cancel_owner, id) = (harness.service.clone(), owner.clone(), created.id.clone());
    *harness.executor.hook.lock().unwrap() = Some(Box::new(move |call| {
        (call == 2).then(|| {
            let (service, owner, id) = (service.clone(), cancel_owner.clone(), id.clone());
            Box::pin(async move {
                let cancelling = service.cancel(&owner, &id).await.unwrap();
                assert_eq!(cancelling.status, BatchStatus::Cancelling);
            }) as futures_util::future::BoxFuture<'static, ()>
        })
    }));
    assert!(harness.runner("run_a").run_one().await.unwrap());

    assert_eq!(
        harness.executor.calls.lock().unwrap().len(),
        2,
        "no line after the cancel"
    );
    let done = harness.service.get(&owner, &created.id).await.unwrap();
    assert_eq!(done.status, BatchStatus::Cancelled);
    assert!(done.cancelling_at.is_some() && done.cancelled_at.is_some());
    assert_eq!((done.counts.completed, done.counts.failed), (1, 1));
    let outputs = harness.files.outputs.lock().unwrap().clone();
    assert_eq!(
        custom_ids(&outputs[0].1),
        vec!["req-0"],
        "the answers so far are kept"
    );
    assert_eq!(custom_ids(&outputs[1].1), vec!["req-1"]);

    // A batch cancelled before any runner took it ends without running a line.
    let second = harness.create(&owner, 2).await;
    harness.service.cancel(&owner, &second.id).await.unwrap();
    assert!(harness.runner("run_b").run_one().await.unwrap());
    assert_eq!(harness.executor.calls.lock().unwrap().len(), 2);
    let cancelled = harness.service.get(&owner, &second.id).await.unwrap();
    assert_eq!(cancelled.status, BatchStatus::Cancelled);
    assert_eq!(
        (cancelled.output_file_id, cancelled.error_file_id),
        (None, None)
    );
}
