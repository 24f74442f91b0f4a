//! Graceful stop. Chat generations run as tasks on the HTTP workers' runtimes and outlive
//! their requests, so stopping the server first would cancel a generation whose client had
//! left, and its answer would be lost (its chat is marked interrupted once its lease lapses).
//! On SIGTERM the service therefore first drains: new completions get 503 and readiness
//! reports `shutting_down` (so load balancers move traffic away), the generations running in
//! this process finish and store their answers, and only then does the HTTP server stop,
//! letting in-flight requests finish. Each wait is bounded by `http.shutdown_timeout_secs`.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use actix_web::dev::ServerHandle;
use tessera_chats::GenerationHub;

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
    pub(crate) server: ServerHandle,
    pub(crate) generations: GenerationHub,
    pub(crate) draining: Draining,
    pub(crate) timeout: Duration,
}

impl Stopper {
    pub async fn stop(self) {
        self.draining.start();
        let started = Instant::now();
        let mut running = self.generations.running();
        if running > 0 {
            tracing::info!(
                generations = running,
                "waiting for running generations to finish"
            );
        }
        while running > 0 && started.elapsed() < self.timeout {
            tokio::time::sleep(POLL).await;
            running = self.generations.running();
        }
        if running > 0 {
            tracing::warn!(
                generations = running,
                "stopping with generations still running; their chats will be marked \
                 interrupted at the next start"
            );
        }
        tracing::info!("stopping the HTTP server: finishing in-flight requests");
        self.server.stop(true).await;
    }
}
