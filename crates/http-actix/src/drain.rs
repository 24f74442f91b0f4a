//! Graceful stop. Chat generations run as tasks on the HTTP workers' runtimes and outlive
//! their requests, so stopping the server first would cancel a generation whose client had
//! left, and its answer would be lost (its chat is marked interrupted once its lease lapses).
//! On SIGTERM the service therefore first drains: new completions get 503 and readiness
//! reports `shutting_down` (so load balancers move traffic away), the generations running in
//! this process finish and store their answers, the process's generation runner is retired
//! (other processes' lease sweeps need not carry it), and only then does the HTTP server
//! stop, letting in-flight requests finish. Each wait is bounded by
//! `http.shutdown_timeout_secs`.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use actix_web::dev::ServerHandle;
use tessera_chats::ChatService;

/// Whether this process is draining before it stops. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Draining(Arc<AtomicBool>);

impl Draining {
    pub fn start(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// How often the drain looks whether generations are still running.
const POLL: Duration = Duration::from_millis(50);

/// Stops the service gracefully: drain, then stop the server.
pub struct Stopper {
    server: ServerHandle,
    chats: ChatService,
    draining: Draining,
    timeout: Duration,
}

impl Stopper {
    /// Drains `chats`' generations (setting `draining` first), then stops `server`; each
    /// wait is bounded by `timeout`.
    pub fn new(
        server: ServerHandle,
        chats: ChatService,
        draining: Draining,
        timeout: Duration,
    ) -> Self {
        Self {
            server,
            chats,
            draining,
            timeout,
        }
    }

    pub async fn stop(self) {
        self.draining.start();
        let started = Instant::now();
        let generations = self.chats.hub();
        let mut running = generations.running();
        if running > 0 {
            tracing::info!(
                generations = running,
                "waiting for running generations to finish"
            );
        }
        while running > 0 && started.elapsed() < self.timeout {
            tokio::time::sleep(POLL).await;
            running = generations.running();
        }
        if running > 0 {
            tracing::warn!(
                generations = running,
                "stopping with generations still running; their chats will be marked \
                 interrupted at the next start"
            );
        } else {
            // Before the server stops, while the runtimes the database pool's connections
            // were opened on still run.
            match self.chats.retire().await {
                Ok(true) => tracing::info!("generation runner retired"),
                // Nothing runs here any more, so a lease still held is one a failed write
                // left behind (the next process's sweep fails its chat), or the runner is
                // already gone.
                Ok(false) => tracing::warn!(
                    "generation runner kept: a lease outlived its generation, or the runner \
                     was already forgotten"
                ),
                Err(error) => tracing::warn!(%error, "generation runner not retired"),
            }
        }
        tracing::info!("stopping the HTTP server: finishing in-flight requests");
        self.server.stop(true).await;
    }
}
