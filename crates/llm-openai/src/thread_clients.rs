//! HTTP clients, one per thread that calls the provider. A `reqwest::Client` keeps its
//! idle connections in one pool, and each connection's I/O runs as a task on the runtime
//! that opened it: shared by the service's workers (each a single-threaded runtime), a
//! request taking a connection another worker opened wakes that worker twice (to send, and
//! to hand the answer back). One client per thread keeps a request, its connection and its
//! answer on one thread.

use std::{
    sync::Mutex,
    thread::{self, ThreadId},
    time::Duration,
};

/// More threads than a process has workers: past this, the clients of threads that have
/// ended are dropped (every entry is, and live threads make theirs again).
const MOST_THREADS: usize = 64;

/// How every client is built.
#[derive(Clone)]
pub(crate) struct ClientSettings {
    pub(crate) connect_timeout: Duration,
    pub(crate) extra_roots: Vec<reqwest::Certificate>,
}

impl ClientSettings {
    pub(crate) fn build(&self) -> Result<reqwest::Client, reqwest::Error> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .pool_idle_timeout(Duration::from_secs(60))
            .user_agent(concat!("tessera/", env!("CARGO_PKG_VERSION")));
        for certificate in &self.extra_roots {
            builder = builder.add_root_certificate(certificate.clone());
        }
        builder.build()
    }
}

/// The clients of one upstream, by thread.
pub(crate) struct ThreadClients {
    settings: ClientSettings,
    made: Mutex<Vec<(ThreadId, reqwest::Client)>>,
}

impl ThreadClients {
    /// Builds the calling thread's client now, so that settings a client cannot be built
    /// with fail here, at configuration.
    pub(crate) fn new(settings: ClientSettings) -> Result<Self, reqwest::Error> {
        // reqwest's rustls backend needs a process-wide crypto provider; keep the one the
        // process installed, or install the same one the API does.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let first = settings.build()?;
        Ok(Self {
            settings,
            made: Mutex::new(vec![(thread::current().id(), first)]),
        })
    }

    /// This thread's client.
    pub(crate) fn here(&self) -> Result<reqwest::Client, reqwest::Error> {
        let thread = thread::current().id();
        let mut made = self
            .made
            .lock()
            // Updates are single pushes and clears: a panic elsewhere leaves it consistent.
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, client)) = made.iter().find(|(owner, _)| *owner == thread) {
            return Ok(client.clone());
        }
        if made.len() >= MOST_THREADS {
            made.clear();
        }
        let client = self.settings.build()?;
        made.push((thread, client.clone()));
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clients() -> ThreadClients {
        ThreadClients::new(ClientSettings {
            connect_timeout: Duration::from_secs(1),
            extra_roots: Vec::new(),
        })
        .unwrap()
    }

    #[test]
    fn a_thread_keeps_its_client_and_another_thread_gets_its_own() {
        let clients = clients();
        clients.here().unwrap();
        assert_eq!(
            clients.made.lock().unwrap().len(),
            1,
            "made at construction"
        );
        thread::scope(|scope| {
            scope.spawn(|| clients.here().unwrap());
        });
        assert_eq!(clients.made.lock().unwrap().len(), 2);
    }

    #[test]
    fn clients_of_many_threads_are_dropped_rather_than_kept_forever() {
        let clients = clients();
        for _ in 0..MOST_THREADS + 3 {
            thread::scope(|scope| {
                scope.spawn(|| clients.here().unwrap());
            });
        }
        assert!(clients.made.lock().unwrap().len() <= MOST_THREADS);
    }
}
