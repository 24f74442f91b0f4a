//! `tessera-admin`: the operator's CLI. It reads the same configuration as `tessera-api`
//! (`--config <file>` and `TESSERA_*`/`DATABASE_URL` variables), prints human text by
//! default and exactly one JSON object with `--json`.

use std::{path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};

mod api_keys;
mod audit;
mod clients;
mod knowledge;
use serde_json::json;
use tessera_kernel::{DomainError, Limit};
use tessera_organizations::{
    NewOrganization, Organization, OrganizationChange, OrganizationName, Plan,
};
use tessera_setup::{Tenancy, config::Settings};
use tessera_store::Database;

#[derive(Debug, Parser)]
#[command(
    name = "tessera-admin",
    version,
    about = "Operate a Tessera deployment"
)]
struct Cli {
    /// TOML configuration file (the one tessera-api uses).
    #[arg(long, global = true, env = "TESSERA_CONFIG_FILE")]
    config: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Apply pending database migrations.
    Migrate {
        /// Only these parts of the schema and the parts they need (repeatable: `tenants`,
        /// `identity`, `prompts`, `idempotency`, `webhooks`, `knowledge`, `models`, `mcp`,
        /// `chats`, `usage`, `guardrails`, `response_cache`), for a service that embeds some
        /// domains' stores. Default: all, as the API needs.
        #[arg(long = "part", value_name = "PART", value_parser = clap::builder::ValueParser::new(|name: &str| name.parse::<tessera_store::Part>()))]
        parts: Vec<tessera_store::Part>,
    },
    /// Manage organizations (tenants).
    #[command(subcommand)]
    Org(OrgCommand),
    /// Manage API clients (OAuth 2.0 client credentials) of an organization.
    #[command(subcommand)]
    Client(clients::ClientCommand),
    /// Manage long-lived API keys (`tsk_…`) of an organization.
    #[command(subcommand)]
    Key(api_keys::KeyCommand),
    /// Manage the keys that sign access tokens.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Read the audit log.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// Change the embedding model of the knowledge index, and follow it.
    #[command(subcommand)]
    Knowledge(knowledge::KnowledgeCommand),
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Add a new signing key. Replicas sign with it after their next start; every key in the
    /// directory keeps verifying, so remove an old key file only after the token lifetime.
    Rotate,
    /// List the keys (kid) in the key directory; the last one signs.
    List,
}

#[derive(Debug, Subcommand)]
enum OrgCommand {
    /// Create an organization.
    Create {
        /// Display name, 1-255 characters.
        #[arg(long)]
        name: String,
        /// Subscription plan.
        #[arg(long, default_value = "free", value_parser = parse_plan)]
        plan: Plan,
    },
    /// List organizations, oldest first.
    List {
        /// Page size, 1-100.
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// `nextCursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Change an organization's settings (audited as `organization.update`).
    Set {
        /// The organization's id.
        #[arg(long)]
        org: String,
        /// Read its uploaded images by OCR (where the server has OCR), so their text is
        /// searchable: `true` or `false`. Applies to images uploaded from now on.
        #[arg(long, value_name = "true|false", required = true, action = clap::ArgAction::Set, value_parser = clap::value_parser!(bool))]
        image_ocr: bool,
    },
}

fn parse_plan(text: &str) -> Result<Plan, String> {
    text.parse()
        .map_err(|e: tessera_organizations::PlanError| e.to_string())
}

/// Who the audit log names for changes made here.
pub(crate) const OPERATOR: &str = "tessera-admin";

/// The actor of this CLI's changes.
pub(crate) fn operator() -> tessera_kernel::Actor {
    tessera_kernel::Actor::Operator(OPERATOR.to_owned())
}

/// A failure, reported as one line (and as `{"error": …}` with `--json`).
pub(crate) struct Failure(pub(crate) String);

impl From<DomainError> for Failure {
    fn from(error: DomainError) -> Self {
        match error {
            DomainError::Validation(errors) => Failure(
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            other => Failure(other.to_string()),
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.json;
    match run(cli).await {
        Ok(output) => {
            println!("{output}");
            ExitCode::SUCCESS
        }
        Err(Failure(message)) => {
            if json {
                println!("{}", json!({ "error": message }));
            }
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<String, Failure> {
    let settings = Settings::load_without(cli.config.as_deref(), &["TESSERA_CONFIG_FILE"])
        .map_err(|e| Failure(e.to_string()))?;
    std::fs::create_dir_all(&settings.data_dir).map_err(|e| {
        Failure(format!(
            "cannot create {}: {e}",
            settings.data_dir.display()
        ))
    })?;
    let url = settings.database();
    match cli.command {
        Command::Migrate { parts } => {
            let parts = if parts.is_empty() {
                tessera_store::Part::ALL.to_vec()
            } else {
                parts
            };
            let applied = Database::migrate_parts(&url, &parts)
                .await
                .map_err(|e| Failure(e.to_string()))?;
            Ok(if cli.json {
                json!({ "database": url.to_string(), "applied": applied }).to_string()
            } else if applied.is_empty() {
                format!("{url}: up to date")
            } else {
                format!("{url}: applied {}", applied.join(", "))
            })
        }
        Command::Keys(command) => {
            let dir = settings.keys_dir();
            let rules = tessera_auth::TokenRules {
                issuer: settings.issuer(settings.listen.port()),
                audience: settings.auth.audience.clone(),
                leeway_secs: 0,
            };
            if matches!(command, KeysCommand::Rotate) {
                // Make sure a first key exists, so the new one is not the only one.
                tessera_auth::JwtKeys::load_or_create(&dir, rules.clone())
                    .map_err(|e| Failure(e.to_string()))?;
                tessera_auth::JwtKeys::create_key(&dir).map_err(|e| Failure(e.to_string()))?;
            }
            let keys = tessera_auth::JwtKeys::load_or_create(&dir, rules)
                .map_err(|e| Failure(e.to_string()))?;
            let kids: Vec<String> = keys.jwks()["keys"]
                .as_array()
                .map(|k| {
                    k.iter()
                        .filter_map(|key| key["kid"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            Ok(if cli.json {
                json!({ "directory": dir.display().to_string(), "signingKid": keys.signing_kid(), "kids": kids }).to_string()
            } else {
                format!("{}\nsigning with {}", kids.join("\n"), keys.signing_kid())
            })
        }
        Command::Client(command) => {
            let state = open_state(&settings).await?;
            clients::run(&state, command, cli.json).await
        }
        Command::Key(command) => {
            let state = open_state(&settings).await?;
            api_keys::run(&state, command, cli.json).await
        }
        Command::Audit(command) => {
            let state = open_state(&settings).await?;
            audit::run(&state, command, cli.json).await
        }
        Command::Knowledge(command) => {
            let database = tessera_setup::open_database(&settings)
                .await
                .map_err(|e| Failure(e.to_string()))?;
            knowledge::run(&settings, &database, command, cli.json).await
        }
        Command::Org(command) => {
            let state = open_state(&settings).await?;
            match command {
                OrgCommand::Create { name, plan } => {
                    let name = OrganizationName::parse(&name)
                        .map_err(|e| Failure(format!("--name: {e}")))?;
                    let org = state
                        .organizations
                        .create(NewOrganization { name, plan }, &operator())
                        .await
                        .map_err(DomainError::from)?;
                    Ok(if cli.json {
                        organization_json(&org).to_string()
                    } else {
                        format!(
                            "created organization \"{}\" ({}, plan {})",
                            org.name, org.id, org.plan
                        )
                    })
                }
                OrgCommand::List { limit, cursor } => {
                    let limit = Limit::new(limit).map_err(|e| Failure(format!("--limit: {e}")))?;
                    let page = state
                        .organizations
                        .list(limit, cursor.as_deref())
                        .await
                        .map_err(DomainError::from)?;
                    if cli.json {
                        let items: Vec<_> = page.items.iter().map(organization_json).collect();
                        return Ok(json!({ "items": items, "nextCursor": page.next_cursor, "hasMore": page.has_more, "totalCount": page.total_count }).to_string());
                    }
                    let mut lines: Vec<String> = page
                        .items
                        .iter()
                        .map(|o| format!("{}  {:<10}  {}", o.id, o.plan, o.name))
                        .collect();
                    if let Some(cursor) = page.next_cursor {
                        lines.push(format!("(more: --cursor {})", cursor.as_str()));
                    }
                    if lines.is_empty() {
                        lines.push("no organizations".to_owned());
                    }
                    Ok(lines.join("\n"))
                }
                OrgCommand::Set { org, image_ocr } => {
                    let id: tessera_kernel::OrganizationId =
                        org.parse().map_err(|e| Failure(format!("--org: {e}")))?;
                    let change = OrganizationChange {
                        image_ocr: Some(image_ocr),
                    };
                    let org = state
                        .organizations
                        .update(&id, change, &operator())
                        .await
                        .map_err(|e| Failure(format!("--org: {}", DomainError::from(e))))?;
                    Ok(if cli.json {
                        organization_json(&org).to_string()
                    } else {
                        format!(
                            "organization \"{}\" ({}): image OCR {}",
                            org.name,
                            org.id,
                            if org.image_ocr { "on" } else { "off" }
                        )
                    })
                }
            }
        }
    }
}

/// Opens (and migrates) the database and builds the tenancy services, as the API does; only
/// those: the vector index, the models and the workers stay closed, so the commands work while
/// a server holds them.
async fn open_state(settings: &Settings) -> Result<Tenancy, Failure> {
    let database = tessera_setup::open_database(settings)
        .await
        .map_err(|e| Failure(e.to_string()))?;
    tessera_setup::tenancy(
        settings,
        &database,
        &settings.issuer(settings.listen.port()),
    )
    .map_err(|e| Failure(e.to_string()))
}

fn organization_json(org: &Organization) -> serde_json::Value {
    serde_json::to_value(org).unwrap_or_default()
}
