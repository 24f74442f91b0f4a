//! `tessera-api`: serves the Tessera REST API over HTTPS, or (`tessera-api worker`) runs its
//! background work alone.

use std::{path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use tessera_api::{
    config::Settings, drain::Stopper, startup::Application, telemetry, worker::Worker,
};

/// Freed memory is kept for reuse: with glibc's allocator every large block (the embedding
/// model's activations, tens of MB per batch) went back to the kernel when freed and was
/// page-faulted in again on the next batch, which halved embedding throughput (decision 0021).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Tessera's REST API server. Configuration: `--config <file>` and `TESSERA_*` variables.
#[derive(Debug, Parser)]
#[command(name = "tessera-api", version)]
struct Args {
    /// TOML configuration file; environment variables override its keys.
    #[arg(long, env = "TESSERA_CONFIG_FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    mode: Option<Mode>,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Serve the REST API, with file processing and webhook delivery in the same process
    /// (the default).
    Serve,
    /// Process files and deliver webhooks without serving the API, beside API replicas that
    /// share its database, uploaded content and Qdrant index (`knowledge.qdrant_url`).
    Worker,
}

/// Waits for SIGTERM or SIGINT on a thread of its own (with its own small runtime, so it does
/// not depend on the server's runtimes), then stops the service gracefully: running chat
/// generations finish, then in-flight requests (see `tessera_api::drain`). The handlers are
/// registered before this returns, so a signal that arrives during start-up is not lost.
fn watch_for_shutdown() -> std::io::Result<std::sync::mpsc::Sender<Stopper>> {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut terminate, mut interrupt) = runtime.block_on(async {
        Ok::<_, std::io::Error>((
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
        ))
    })?;
    let (sender, receiver) = std::sync::mpsc::channel::<Stopper>();
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let name = tokio::select! {
                _ = terminate.recv() => "SIGTERM",
                _ = interrupt.recv() => "SIGINT",
            };
            // No stopper means start-up failed and main is returning on its own.
            if let Ok(stopper) = receiver.recv() {
                tracing::info!(signal = name, "shutting down");
                stopper.stop().await;
            }
        });
    });
    Ok(sender)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let shutdown = match watch_for_shutdown() {
        Ok(sender) => sender,
        Err(error) => {
            eprintln!("error: cannot install signal handlers: {error}");
            return ExitCode::from(1);
        }
    };
    actix_web::rt::System::new().block_on(async move {
        let settings =
            match Settings::load_without(args.config.as_deref(), &["TESSERA_CONFIG_FILE"]) {
                Ok(settings) => settings,
                Err(error) => {
                    eprintln!("error: {error}");
                    return ExitCode::from(2);
                }
            };
        let mut telemetry = match telemetry::init(&settings) {
            Ok(telemetry) => telemetry,
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::from(2);
            }
        };
        let code = match args.mode {
            None | Some(Mode::Serve) => serve(settings, shutdown).await,
            Some(Mode::Worker) => {
                // The worker waits for its own signals; the watcher is not needed.
                drop(shutdown);
                work(settings).await
            }
        };
        // The spans still queued go out before the process ends (blocking: off the runtime).
        let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
        code
    })
}

/// Worker mode: runs until SIGTERM or SIGINT. Jobs in progress then are taken over by
/// another worker (or this one, restarted) when their leases expire.
async fn work(settings: Settings) -> ExitCode {
    use tokio::signal::unix::{SignalKind, signal};
    let signals = signal(SignalKind::terminate()).and_then(|terminate| {
        signal(SignalKind::interrupt()).map(|interrupt| (terminate, interrupt))
    });
    let (mut terminate, mut interrupt) = match signals {
        Ok(signals) => signals,
        Err(error) => {
            eprintln!("error: cannot install signal handlers: {error}");
            return ExitCode::from(1);
        }
    };
    let worker = match Worker::build(&settings).await {
        Ok(worker) => worker,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(1);
        }
    };
    worker.start();
    let name = tokio::select! {
        _ = terminate.recv() => "SIGTERM",
        _ = interrupt.recv() => "SIGINT",
    };
    tracing::info!(
        signal = name,
        "worker stopping; jobs in progress resume when their leases expire"
    );
    ExitCode::SUCCESS
}

async fn serve(settings: Settings, shutdown: std::sync::mpsc::Sender<Stopper>) -> ExitCode {
    let app = match Application::build(settings).await {
        Ok(app) => app,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(1);
        }
    };
    if let Some(first) = &app.bootstrap {
        // Shown once: the secret is stored only as a hash.
        println!(
            "First run: created organization \"{}\" with id {}",
            first.organization.name, first.organization.id
        );
        println!(
            "Bootstrap client (scope org:admin); store the secret now, it is not shown again:"
        );
        println!("  client_id:     {}", first.client_id);
        println!("  client_secret: {}", first.client_secret.expose());
    }
    // The watcher needs the stopper only once a signal arrives; it lives as long as the process.
    let _ = shutdown.send(app.stopper());
    match app.run_until_stopped().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(1)
        }
    }
}
