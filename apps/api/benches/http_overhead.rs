//! Per-request overhead of Tessera's HTTP stack (TLS, request-id/logging middleware, problem
//! error handling, routing) against a bare actix-web server measured in the same run.
//!
//! Targets, run one after another, each with one actix worker on 127.0.0.1:0 and the same
//! self-signed certificate (the one Tessera generates under `<data_dir>/tls`):
//!
//! 1. `baseline`: a bare `HttpServer` over rustls 0.23 serving `GET /v1/health` with the same
//!    handler (and so the same JSON body) as Tessera, and nothing else.
//! 2. `tessera /v1/health`: the real `Application` (embedded SQLite, `log = "warn"`, no
//!    tracing subscriber installed, so no log line is written).
//! 3. `tessera /v1/health/ready`: the same application; readiness pings SQLite.
//!
//! Each target is driven by `CLIENTS` concurrent keep-alive HTTP/1.1 clients (tokio tasks
//! sharing one `reqwest::Client`) for a warm-up second, then for `BENCH_SECONDS` (default 5)
//! measured seconds. Nothing here asserts on timings; it prints a table.
//!
//! Run with `cargo bench -p tessera-api --bench http_overhead`.

use std::{
    net::{SocketAddr, TcpListener},
    path::Path,
    time::{Duration, Instant},
};

use actix_web::{App, HttpServer, dev::ServerHandle};
use anyhow::{Context, bail};
use rustls::ServerConfig;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use tessera_api::{config::Settings, startup::Application, tls::dev_certificate_paths};

/// Concurrent keep-alive clients per target.
const CLIENTS: usize = 8;
/// Unmeasured time before each measurement (connections open, caches warm).
const WARM_UP: Duration = Duration::from_secs(1);
/// Measured time per target unless `BENCH_SECONDS` says otherwise.
const DEFAULT_SECONDS: f64 = 5.0;

/// What one target did during its measured window.
struct Measurement {
    target: &'static str,
    requests: usize,
    elapsed: Duration,
    /// Per-request durations, sorted ascending.
    latencies: Vec<Duration>,
}

impl Measurement {
    fn requests_per_second(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    /// Nearest-rank percentile, in milliseconds.
    fn percentile_ms(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        let rank = (p / 100.0 * self.latencies.len() as f64).ceil() as usize;
        let index = rank.clamp(1, self.latencies.len()) - 1;
        self.latencies[index].as_secs_f64() * 1e3
    }
}

fn measured_duration() -> anyhow::Result<Duration> {
    match std::env::var("BENCH_SECONDS") {
        Ok(text) => {
            let seconds: f64 = text.trim().parse().with_context(|| {
                format!("BENCH_SECONDS must be a number of seconds, got `{text}`")
            })?;
            if !(seconds.is_finite() && seconds > 0.0) {
                bail!("BENCH_SECONDS must be positive, got `{text}`");
            }
            Ok(Duration::from_secs_f64(seconds))
        }
        Err(_) => Ok(Duration::from_secs_f64(DEFAULT_SECONDS)),
    }
}

/// A keep-alive HTTP/1.1 client trusting `cert_pem`, with `localhost` pinned to `addr`.
fn client(cert_pem: &[u8], addr: SocketAddr) -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(cert_pem)?)
        .http1_only()
        .resolve("localhost", addr)
        .pool_max_idle_per_host(CLIENTS)
        .build()
        .context("cannot build the HTTPS client")
}

/// One GET, body read to the end; anything but 200 is an error (a benchmark of failures
/// would be meaningless). Returns the body's length.
async fn get(client: &reqwest::Client, url: &str) -> anyhow::Result<usize> {
    let response = client.get(url).send().await?;
    let status = response.status();
    let body = response.bytes().await?;
    if status != reqwest::StatusCode::OK {
        bail!(
            "GET {url} answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    Ok(body.len())
}

/// Drives `url` with `CLIENTS` concurrent clients: `WARM_UP`, then `measure` recorded.
async fn drive(
    target: &'static str,
    client: reqwest::Client,
    url: String,
    measure: Duration,
) -> anyhow::Result<Measurement> {
    let start = Instant::now() + WARM_UP;
    let end = start + measure;
    let mut tasks = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        let client = client.clone();
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(16 * 1024);
            let mut body_bytes = 0usize;
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                body_bytes += get(&client, &url).await?;
                if sent >= start {
                    latencies.push(sent.elapsed());
                }
            }
            anyhow::Ok((latencies, body_bytes, Instant::now()))
        }));
    }
    let mut latencies = Vec::new();
    let mut finished = end;
    for task in tasks {
        let (mine, body_bytes, done) = task.await.context("a client task stopped")??;
        std::hint::black_box(body_bytes);
        latencies.extend(mine);
        finished = finished.max(done);
    }
    latencies.sort_unstable();
    Ok(Measurement {
        target,
        requests: latencies.len(),
        elapsed: finished.saturating_duration_since(start),
        latencies,
    })
}

/// Starts (binds and runs) Tessera on 127.0.0.1:0 over `data_dir`.
async fn start_tessera(data_dir: &Path) -> anyhow::Result<(u16, ServerHandle)> {
    let mut settings = Settings {
        data_dir: data_dir.to_path_buf(),
        listen: "127.0.0.1:0".parse()?,
        log: "warn".to_owned(),
        ..Settings::default()
    };
    settings.metrics.listen = String::new();
    settings.http.workers = 1;
    settings.http.shutdown_timeout_secs = 1;
    let app = Application::build(settings)
        .await
        .context("Tessera does not start")?;
    let port = app.port();
    let handle = app.handle();
    tokio::spawn(app.run_until_stopped());
    Ok((port, handle))
}

/// The rustls configuration of the baseline: the certificate and key Tessera generated,
/// with the same ALPN list as Tessera's listener.
fn baseline_tls(data_dir: &Path) -> anyhow::Result<ServerConfig> {
    let (cert, key) = dev_certificate_paths(data_dir);
    let certs = CertificateDer::pem_file_iter(&cert)
        .with_context(|| format!("cannot read {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(&key)
        .with_context(|| format!("cannot read {}", key.display()))?;
    let mut config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Starts the bare baseline server (Tessera's own health handler, nothing else).
fn start_baseline(data_dir: &Path) -> anyhow::Result<(u16, ServerHandle)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let server = HttpServer::new(|| App::new().service(tessera_api::routes::health::health))
        .workers(1)
        .shutdown_timeout(1)
        .listen_rustls_0_23(listener, baseline_tls(data_dir)?)?
        .run();
    let handle = server.handle();
    tokio::spawn(server);
    Ok((port, handle))
}

fn localhost(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn print_table(results: &[Measurement], measure: Duration) {
    println!();
    println!(
        "HTTP stack overhead: {CLIENTS} keep-alive HTTP/1.1 clients, 1 server worker, \
         {:.1} s warm-up, {:.1} s measured per target",
        WARM_UP.as_secs_f64(),
        measure.as_secs_f64()
    );
    println!();
    println!(
        "| {:<26} | {:>9} | {:>8} | {:>8} | {:>8} | {:>14} | {:>11} |",
        "target", "requests", "req/s", "p50 ms", "p99 ms", "req/s vs base", "p50 vs base"
    );
    println!(
        "|{:-<28}|{:->11}|{:->10}|{:->10}|{:->10}|{:->16}|{:->13}|",
        ":", ":", ":", ":", ":", ":", ":"
    );
    let Some(base) = results.first() else {
        return;
    };
    let (base_rps, base_p50) = (base.requests_per_second(), base.percentile_ms(50.0));
    for m in results {
        let (rps, p50) = (m.requests_per_second(), m.percentile_ms(50.0));
        println!(
            "| {:<26} | {:>9} | {:>8.0} | {:>8.3} | {:>8.3} | {:>14.2} | {:>11.2} |",
            m.target,
            m.requests,
            rps,
            p50,
            m.percentile_ms(99.0),
            rps / base_rps,
            p50 / base_p50
        );
    }
    println!();
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let measure = measured_duration()?;
    let data_dir = tempfile::tempdir()?;

    // Build Tessera first: it installs the ring rustls provider (which the client uses
    // too) and generates the certificate the baseline reuses. Stop it while the baseline runs.
    let (_, handle) = start_tessera(data_dir.path()).await?;
    handle.stop(true).await;
    let (cert, _) = dev_certificate_paths(data_dir.path());
    let cert_pem =
        std::fs::read(&cert).with_context(|| format!("cannot read {}", cert.display()))?;

    let mut results = Vec::new();

    let (port, handle) = start_baseline(data_dir.path())?;
    let baseline_client = client(&cert_pem, localhost(port))?;
    let baseline_url = format!("https://localhost:{port}/v1/health");
    let baseline_body = baseline_client
        .get(&baseline_url)
        .send()
        .await?
        .text()
        .await?;
    eprintln!("baseline   GET /v1/health -> {baseline_body}");
    results.push(
        drive(
            "baseline /v1/health",
            baseline_client,
            baseline_url,
            measure,
        )
        .await?,
    );
    handle.stop(true).await;

    let (port, handle) = start_tessera(data_dir.path()).await?;
    let tessera_client = client(&cert_pem, localhost(port))?;
    let health_url = format!("https://localhost:{port}/v1/health");
    let ready_url = format!("https://localhost:{port}/v1/health/ready");
    let tessera_body = tessera_client.get(&health_url).send().await?.text().await?;
    eprintln!("tessera    GET /v1/health -> {tessera_body}");
    if tessera_body != baseline_body {
        bail!("the baseline and Tessera answer different bodies; the comparison would be unfair");
    }
    results.push(
        drive(
            "tessera /v1/health",
            tessera_client.clone(),
            health_url,
            measure,
        )
        .await?,
    );
    results.push(
        drive(
            "tessera /v1/health/ready",
            tessera_client,
            ready_url,
            measure,
        )
        .await?,
    );
    handle.stop(true).await;

    print_table(&results, measure);
    Ok(())
}
