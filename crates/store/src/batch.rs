//! Batching of concurrent calls to PostgreSQL: callers queue their requests and one task
//! hands whatever is waiting to a handler as one batch, with a few batches in flight at a
//! time. Nothing waits for a timer: a request that finds a free slot is a batch of one and
//! goes at once; batches grow only while earlier ones are still running. A request is
//! queued before its caller first waits, so calls started together are seen together, and
//! the handler runs after the request was queued (a read sees what committed before the call).

use std::{future::Future, sync::Arc};

use tessera_kernel::DomainError;
use tokio::sync::{Semaphore, mpsc, oneshot};

/// A queued request and where its answer goes.
pub(crate) struct Pending<Q, R> {
    pub(crate) request: Q,
    pub(crate) reply: oneshot::Sender<Result<R, DomainError>>,
}

impl<Q, R> Pending<Q, R> {
    pub(crate) fn answer(self, outcome: Result<R, DomainError>) {
        // A caller that stopped waiting has nothing to be told.
        let _ = self.reply.send(outcome);
    }
}

/// How a batcher sizes its batches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Batches handled at the same time.
    pub(crate) in_flight: usize,
    /// The most a batch may weigh (a single heavier request is a batch of its own).
    pub(crate) max_weight: usize,
}

/// The queue to one batching task.
pub(crate) struct Batcher<Q, R> {
    queue: mpsc::UnboundedSender<Pending<Q, R>>,
}

impl<Q: Send + 'static, R: Send + 'static> Batcher<Q, R> {
    /// Starts the batching task on the current Tokio runtime; refused outside of one
    /// (callers then do their work directly). The task stops when the batcher is dropped.
    pub(crate) fn start<H, F>(
        limits: Limits,
        weight: fn(&Q) -> usize,
        handle: H,
    ) -> Result<Self, NotOnRuntime>
    where
        H: Fn(Vec<Pending<Q, R>>) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| NotOnRuntime)?;
        let (queue, waiting) = mpsc::unbounded_channel();
        runtime.spawn(run(limits, weight, handle, waiting));
        Ok(Self { queue })
    }

    /// Queues `request` and waits for its batch's answer.
    pub(crate) async fn call(&self, request: Q) -> Result<R, DomainError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Pending { request, reply })
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

impl<Q, R> Batcher<Q, R> {
    /// Whether the batching task still takes requests (it stops with its runtime).
    pub(crate) fn running(&self) -> bool {
        !self.queue.is_closed()
    }
}

/// A batching task needs a Tokio runtime on the calling thread, and there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotOnRuntime;

/// The batching task is gone (its runtime is shutting down): whether a request it had
/// taken was carried out is unknown.
fn stopped() -> DomainError {
    DomainError::Unavailable {
        message: "the database batching task has stopped".to_owned(),
    }
}

async fn run<Q, R, H, F>(
    limits: Limits,
    weight: fn(&Q) -> usize,
    handle: H,
    mut waiting: mpsc::UnboundedReceiver<Pending<Q, R>>,
) where
    H: Fn(Vec<Pending<Q, R>>) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(limits.in_flight.max(1)));
    let mut carried: Option<Pending<Q, R>> = None;
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let first = match carried.take() {
            Some(pending) => pending,
            None => match waiting.recv().await {
                Some(pending) => pending,
                None => return,
            },
        };
        let mut total = weight(&first.request);
        let mut batch = vec![first];
        while let Ok(next) = waiting.try_recv() {
            let next_weight = weight(&next.request);
            if total + next_weight > limits.max_weight {
                carried = Some(next);
                break;
            }
            total += next_weight;
            batch.push(next);
        }
        let work = handle(batch);
        tokio::spawn(async move {
            work.await;
            drop(slot);
        });
    }
}
