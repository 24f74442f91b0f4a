//! A chat service another team could write: it embeds `tessera-chats` (the completion
//! pipeline: validation, context window, generation, usage) with its own answers to the
//! domain's ports — one model on the embedded engine instead of Tessera's catalog, no
//! composed system prompts, no retrieval, and a credit budget of its own that refuses once
//! spent. No HTTP framework, no Tessera app. Chats are stored in SQL by `tessera-store`
//! with the chats part of its schema alone (`Part::Chats`: no usage, webhook or other
//! domains' tables); usage records go to the budget's own store, here in memory.
//!
//! Usage: `chat-service --model <file.gguf> [--database <url>] [--budget <credits>]
//! [question]` (`--database` defaults to `sqlite://chat-service.sqlite`; `postgres://…`
//! works too). It asks the question, prints the answer and its usage, then asks again: with
//! a budget smaller than what the first answer cost, the second completion is refused.
//! Exits non-zero if either does not happen.

mod budget;
mod one_model;

use std::{path::PathBuf, sync::Arc};

use anyhow::{Context, bail};
use futures_util::StreamExt;
use tessera_chats::{
    ChatError, ChatPorts, ChatService, CompletionRequest, GenerationEvent, NewMessage,
    NoAttachments, NoRetrieval, NoServerTools, NoSystemPrompts,
};
use tessera_kernel::{
    Caller, CursorCodec, OrganizationId, Principal, PrincipalKind, ScopeSet, SystemClock,
};
use tessera_llm_local::{LocalEngine, LocalEngineOptions};
use tessera_models::Role;
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_store::{Database, DatabaseUrl, Part, PoolOptions, SqlChatStore, SqlOrganizationStore};
use tessera_usage::memory::InMemoryUsageStore;

use crate::{budget::CreditBudget, one_model::OneModel};

struct Args {
    model: PathBuf,
    database: DatabaseUrl,
    budget: u64,
    question: String,
}

fn args() -> anyhow::Result<Args> {
    let mut model = None;
    let mut database = "sqlite://chat-service.sqlite".to_owned();
    let mut budget = 1;
    let mut question = "Say hello in three words.".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--model" => model = args.next().map(PathBuf::from),
            "--database" => database = args.next().context("--database needs a URL")?,
            "--budget" => {
                budget = args
                    .next()
                    .context("--budget needs a number of credits")?
                    .parse()
                    .context("--budget needs a number of credits")?;
            }
            _ if arg.starts_with("--") => bail!("unknown option {arg}"),
            _ => question = arg,
        }
    }
    Ok(Args {
        model: model.context("--model <file.gguf> is required (`just models` fetches one)")?,
        database: database.parse()?,
        budget,
        question,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let engine = LocalEngine::load(
        &args.model,
        LocalEngineOptions {
            default_max_tokens: 24,
            ..LocalEngineOptions::default()
        },
    )
    .with_context(|| format!("loading {}", args.model.display()))?;
    let organization: OrganizationId = "example".parse()?;
    let database = chats_database(&args.database, &organization).await?;
    // Usage records go to the budget's store: the database has no usage tables.
    let usage = Arc::new(InMemoryUsageStore::new());
    let chats_store = Arc::new(SqlChatStore::with_usage_store(database, usage.clone()));
    let chats = ChatService::new(ChatPorts {
        store: chats_store.clone(),
        leases: chats_store.clone(),
        models: Arc::new(OneModel::new(Arc::new(engine))?),
        prompts: Arc::new(NoSystemPrompts),
        retriever: Arc::new(NoRetrieval),
        attachments: Arc::new(NoAttachments),
        server_tools: Arc::new(NoServerTools),
        admission: Arc::new(CreditBudget::new(args.budget, usage.clone())),
        usage,
        clock: Arc::new(SystemClock),
        cursors: CursorCodec::new(*b"an example's own cursor key....."),
    });
    // A user who may chat and read their own chats: the scopes a token or API key would carry.
    let caller = Caller::of(Principal {
        organization_id: organization,
        subject: "someone".into(),
        kind: PrincipalKind::User,
        scopes: ScopeSet::parse_list("chats:invoke chats:read")?,
        origin: None,
    });

    let answer = ask(&chats, &caller, &args.question)
        .await
        .context("the first completion failed")?;
    println!("answer: {}", answer.content.trim());
    if let Some(usage) = &answer.usage {
        println!(
            "usage: {} input, {} output tokens",
            usage.usage.input_tokens, usage.usage.output_tokens
        );
    }
    match ask(&chats, &caller, &args.question).await {
        Err(ChatError::BudgetSpent(spent)) => {
            println!(
                "refused: {} of {} credits used",
                spent.used_credits, spent.monthly_credits
            );
            Ok(())
        }
        Err(other) => bail!("the second completion failed otherwise: {other}"),
        Ok(_) => bail!("the second completion was answered although the budget is spent"),
    }
}

/// The database at `url`, migrated with the chats part alone, holding `organization` (the
/// tenant every chat refers to).
async fn chats_database(
    url: &DatabaseUrl,
    organization: &OrganizationId,
) -> anyhow::Result<Database> {
    let applied = Database::migrate_parts(url, &[Part::Chats]).await?;
    eprintln!("{url}: {} migrations applied", applied.len());
    let database = Database::connect(url, PoolOptions::default()).await?;
    let organizations = SqlOrganizationStore::new(database.clone());
    if organizations.get(organization).await?.is_none() {
        let now = chrono::Utc::now();
        let tenant = Organization {
            id: organization.clone(),
            name: "Example".to_owned(),
            plan: Plan::Free,
            image_ocr: false,
            created_at: now,
            updated_at: now,
        };
        organizations.insert(&tenant, &[]).await?;
    }
    Ok(database)
}

/// One completion in a new chat, run to its end: the stored answer.
async fn ask(
    chats: &ChatService,
    caller: &Caller,
    question: &str,
) -> Result<tessera_chats::Message, ChatError> {
    let started = chats
        .start(
            caller,
            CompletionRequest {
                model_id: Some(one_model::MODEL_ID.into()),
                messages: vec![NewMessage {
                    role: Role::User,
                    content: question.into(),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                    attachments: Vec::new(),
                    images: Vec::new(),
                }],
                ..CompletionRequest::default()
            },
        )
        .await?;
    // The domain owns no runtime: the service runs the generation where it likes.
    tokio::spawn(started.generation);
    let mut events = started.events;
    while let Some(event) = events.next().await {
        match &*event {
            GenerationEvent::Finished(message) => return Ok((**message).clone()),
            GenerationEvent::Failed(error) => return Err(error.clone()),
            _ => {}
        }
    }
    Err(ChatError::Domain(tessera_kernel::DomainError::internal(
        "the generation ended without an answer",
    )))
}
