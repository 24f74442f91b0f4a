//! HTTP clients, one per thread that calls the provider. A `reqwest::Client` keeps its
//! idle connections in one pool, and each connection's I/O runs as a task on the runtime
//! that opened it: shared by the service's workers (each a single-threaded runtime), a
//! request taking a connection another worker opened wakes that worker twice (to send, and
//! to hand the answer back). One client per thread keeps a request, its connection and its
//! answer on one thread.

use std::time::Duration;

use tessera_kernel::PerThread;

/// The clients of one upstream, by thread.
pub(crate) type ThreadClients = PerThread<reqwest::Client, reqwest::Error>;

/// How every client is built.
#[derive(Clone)]
pub(crate) struct ClientSettings {
    pub(crate) connect_timeout: Duration,
    pub(crate) extra_roots: Vec<reqwest::Certificate>,
}

impl ClientSettings {
    fn build(&self) -> Result<reqwest::Client, reqwest::Error> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .pool_idle_timeout(Duration::from_secs(60))
            .user_agent(concat!("tessera/", env!("CARGO_PKG_VERSION")));
        for certificate in &self.extra_roots {
            builder = builder.add_root_certificate(certificate.clone());
        }
        builder.build()
    }

    /// The clients, the calling thread's built now, so that settings a client cannot be
    /// built with fail here, at configuration.
    pub(crate) fn clients(self) -> Result<ThreadClients, reqwest::Error> {
        // reqwest's rustls backend needs a process-wide crypto provider; keep the one the
        // process installed, or install the same one the API does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let clients = PerThread::new(move || self.build());
        clients.get()?;
        Ok(clients)
    }
}

#[cfg(test)]
mod tests {
    use std::thread;

    use super::*;

    fn settings() -> ClientSettings {
        ClientSettings {
            connect_timeout: Duration::from_secs(1),
            extra_roots: Vec::new(),
        }
    }

    #[test]
    fn the_configuring_thread_has_a_client_and_another_thread_gets_its_own() {
        let clients = settings().clients().unwrap();
        assert_eq!(clients.threads(), 1, "made at configuration");
        clients.get().unwrap();
        assert_eq!(clients.threads(), 1);
        thread::scope(|scope| {
            scope.spawn(|| clients.get().unwrap());
        });
        assert_eq!(clients.threads(), 2);
    }
}
