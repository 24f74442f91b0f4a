//! Prometheus metrics (`tessera-metrics-prometheus`) on a listener of their own
//! (`metrics.listen`, plain HTTP, `GET /metrics`), apart from the API's TLS listener so that
//! scrapers need neither a certificate nor a token (bind it to an address only they reach).
//! With `metrics.listen = ""` the recorder is never installed and recording costs nothing.
//! What cannot be counted as it happens (the pool's occupancy, the work queued in the
//! database, the deployments' circuits) is read here when Prometheus scrapes.

use std::net::{SocketAddr, TcpListener};

use actix_web::{App, HttpResponse, dev::ServerHandle, web};
use tessera_metrics_prometheus::{PrometheusHandle, names};
use tessera_models::{CircuitPhase, ModelService};
use tessera_store::Database;

/// What a scrape reads besides the recorded metrics.
#[derive(Clone)]
struct Scrape {
    handle: PrometheusHandle,
    database: Database,
    /// The API's models, whose deployments' circuits are read (none in a worker).
    models: Option<ModelService>,
}

/// The bound metrics listener, not yet serving.
pub struct MetricsListener {
    listener: TcpListener,
    address: SocketAddr,
}

impl MetricsListener {
    /// Binds `address` (port 0 picks a free one).
    pub fn bind(address: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(address)?;
        let address = listener.local_addr()?;
        Ok(Self { listener, address })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Installs the recorder and serves scrapes on one worker thread until stopped.
    pub fn serve(
        self,
        database: Database,
        models: Option<ModelService>,
    ) -> std::io::Result<MetricsServer> {
        let scrape = Scrape {
            handle: tessera_metrics_prometheus::install().map_err(std::io::Error::other)?,
            database,
            models,
        };
        let server = actix_web::HttpServer::new(move || {
            App::new()
                .app_data(web::Data::new(scrape.clone()))
                .route("/metrics", web::get().to(render))
        })
        .workers(1)
        .disable_signals()
        .shutdown_timeout(1)
        .listen(self.listener)?
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        tracing::info!(address = %self.address, "metrics listening (plain HTTP, GET /metrics)");
        Ok(MetricsServer {
            address: self.address,
            handle,
        })
    }
}

/// A serving metrics listener.
pub struct MetricsServer {
    pub address: SocketAddr,
    handle: ServerHandle,
}

impl MetricsServer {
    pub async fn stop(&self) {
        self.handle.stop(true).await;
    }
}

async fn render(scrape: web::Data<Scrape>) -> HttpResponse {
    sample(&scrape.database).await;
    if let Some(models) = &scrape.models {
        circuits(models).await;
    }
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(scrape.handle.render())
}

/// Each routed deployment's circuit: open (1) or not (0), and its failures in a row. Labels
/// are catalog names, a bounded set.
async fn circuits(models: &ModelService) {
    for (model, deployments) in models.deployment_health().await {
        for deployment in deployments {
            let labels = [
                ("gen_ai_request_model", model.clone()),
                ("deployment", deployment.name.clone()),
            ];
            metrics::gauge!(names::DEPLOYMENT_CIRCUIT_OPEN, &labels).set(f64::from(u8::from(
                matches!(deployment.phase, CircuitPhase::Open { .. }),
            )));
            metrics::gauge!(names::DEPLOYMENT_FAILURES, &labels)
                .set(f64::from(deployment.circuit.failures));
        }
    }
}

/// Reads the gauges that are states rather than events: the pool's occupancy and the work
/// waiting in the database. A failed read keeps the last values (and says so in the log).
async fn sample(database: &Database) {
    let pool = database.pool_status();
    let gauge = |name: &'static str, state: Option<&'static str>, value: usize| {
        let handle = match state {
            Some(state) => {
                metrics::gauge!(name, "db_client_connection_pool_name" => pool.pool, "db_client_connection_state" => state)
            }
            None => metrics::gauge!(name, "db_client_connection_pool_name" => pool.pool),
        };
        handle.set(value as f64);
    };
    gauge(
        names::DB_CONNECTIONS,
        Some("used"),
        pool.open.saturating_sub(pool.idle),
    );
    gauge(names::DB_CONNECTIONS, Some("idle"), pool.idle);
    gauge(names::DB_CONNECTIONS_MAX, None, pool.max);
    gauge(names::DB_PENDING_REQUESTS, None, pool.pending);
    match database.backlog().await {
        Ok(backlog) => {
            metrics::gauge!(names::FILE_JOBS_WAITING, "state" => "queued")
                .set(backlog.file_jobs_queued as f64);
            metrics::gauge!(names::FILE_JOBS_WAITING, "state" => "processing")
                .set(backlog.file_jobs_processing as f64);
            metrics::gauge!(names::WEBHOOK_OUTBOX_DEPTH)
                .set(backlog.webhook_deliveries_pending as f64);
        }
        Err(error) => tracing::warn!(%error, "metrics: the database backlog could not be read"),
    }
}

#[cfg(test)]
mod tests {
    use tessera_metrics_prometheus::names;

    #[test]
    fn the_pool_wait_is_declared_under_the_name_the_store_records() {
        assert_eq!(names::DB_WAIT_TIME, tessera_store::CONNECTION_WAIT_TIME);
    }
}
