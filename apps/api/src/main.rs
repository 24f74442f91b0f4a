//! `tessera-api`: serves the Tessera REST API over HTTPS.

use std::{path::PathBuf, process::ExitCode};

use clap::Parser;
use tessera_api::{config::Settings, startup::Application, telemetry};

/// Tessera's REST API server. Configuration: `--config <file>` and `TESSERA_*` variables.
#[derive(Debug, Parser)]
#[command(name = "tessera-api", version)]
struct Args {
    /// TOML configuration file; environment variables override its keys.
    #[arg(long, env = "TESSERA_CONFIG_FILE")]
    config: Option<PathBuf>,
}

#[actix_web::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let settings = match Settings::load_without(args.config.as_deref(), &["TESSERA_CONFIG_FILE"]) {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    telemetry::init(&settings);
    let app = match Application::build(settings).await {
        Ok(app) => app,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(1);
        }
    };
    if let Some(org) = &app.created_organization {
        println!(
            "First run: created organization \"{}\" with id {}",
            org.name, org.id
        );
    }
    match app.run_until_stopped().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(1)
        }
    }
}
