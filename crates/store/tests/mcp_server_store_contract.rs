//! The `McpServerStore` contract on SQLite and PostgreSQL: servers read back exactly (the
//! sealed header bytes included) within their organization only, newest first in pages;
//! updates and cached tools; links to user models, once each, oldest first, gone with their
//! server or their model; and audit records that commit with the changes they record.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{Map, json};
use tessera_kernel::{ActorKind, AuditRecord, Limit, OrganizationId, PageRequest};
use tessera_mcp::{
    McpServer, McpServerId, McpServerStore, RemoteTool, SealedHeaders, ToolLink, ToolsCache,
};
use tessera_models::{ModelId, ModelStore, UserModel};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_store::{
    Backend, SqlMcpServerStore, SqlModelStore, SqlOrganizationStore,
    testing::{TestDatabase, text_rows},
};

struct Fixture {
    servers: SqlMcpServerStore,
    models: SqlModelStore,
    db: TestDatabase,
}

/// Microsecond precision, as the domain's clock produces; `at(s)` is `s` seconds later.
fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 27, 1, 2, 3).unwrap()
        + Duration::microseconds(123_456)
        + Duration::seconds(seconds)
}

fn page(limit: i64, after: Option<McpServerId>) -> PageRequest<McpServerId> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after,
    }
}

/// The audit record of `action` on `resource` of `organization`.
fn audit(organization: &OrganizationId, action: &str, resource: &str) -> AuditRecord {
    let resource_type = if action.starts_with("model.") {
        "model"
    } else {
        "mcp_server"
    };
    AuditRecord::by_operator(
        organization,
        ActorKind::Operator,
        "ops",
        action,
        resource_type,
        resource,
        at(0),
    )
}

/// Every byte value, NULs and bytes that are not UTF-8 included.
fn sealed() -> SealedHeaders {
    SealedHeaders((0..=255u8).rev().chain([0, 0, 0xff, 0xfe]).collect())
}

fn tools() -> Vec<RemoteTool> {
    vec![
        RemoteTool {
            name: "search".into(),
            description: Some("Searches the wiki — «quoted» \"text\"".into()),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what to find\nor not"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                    "ratio": {"type": "number", "default": 0.1},
                },
                "required": ["query"],
            }),
        },
        RemoteTool {
            name: "ping".into(),
            description: None,
            input_schema: json!({"type": "object"}),
        },
    ]
}

/// A server with every optional field set.
fn rich(organization: &OrganizationId) -> McpServer {
    McpServer {
        id: McpServerId::generate(),
        organization: organization.clone(),
        name: "Wiki — ünïcode".into(),
        url: "https://mcp.example.com/mcp?team=a&x=%20".into(),
        header_names: vec!["Authorization".into(), "X-Api-Key".into()],
        headers: sealed(),
        allowed_tools: Some(vec!["search".into(), "ping".into()]),
        timeout_ms: 300_000,
        tools: Some(ToolsCache {
            tools: tools(),
            fetched_at: at(5),
        }),
        created_by: "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".into(),
        created_at: at(1),
        updated_at: at(2),
    }
}

/// A server with no headers, no allow-list and no tools listed yet.
fn plain(organization: &OrganizationId, name: &str) -> McpServer {
    McpServer {
        id: McpServerId::generate(),
        organization: organization.clone(),
        name: name.into(),
        url: "https://tools.example.org/mcp".into(),
        header_names: Vec::new(),
        headers: SealedHeaders(Vec::new()),
        allowed_tools: None,
        timeout_ms: 30_000,
        tools: None,
        created_by: "alice".into(),
        created_at: at(0),
        updated_at: at(0),
    }
}

impl Fixture {
    async fn new(backend: Backend) -> Self {
        let db = TestDatabase::of(backend).await;
        Self {
            servers: SqlMcpServerStore::new(db.database.clone()),
            models: SqlModelStore::new(db.database.clone()),
            db,
        }
    }

    async fn organization(&self) -> OrganizationId {
        let org = Organization {
            id: OrganizationId::generate(),
            name: "Acme".into(),
            plan: Plan::Pro,
            created_at: at(0),
            updated_at: at(0),
        };
        SqlOrganizationStore::new(self.db.database.clone())
            .insert(&org, &[])
            .await
            .unwrap();
        org.id
    }

    async fn insert(&self, server: &McpServer) {
        self.servers
            .insert(
                server,
                &audit(
                    &server.organization,
                    "mcp_server.create",
                    server.id.as_str(),
                ),
            )
            .await
            .unwrap();
    }

    /// A user model of `organization`.
    async fn model(&self, organization: &OrganizationId, name: &str) -> ModelId {
        let model = UserModel {
            id: ModelId::generate(),
            organization_id: organization.clone(),
            parent_model_id: "local/smollm2-135m".to_owned(),
            display_name: name.to_owned(),
            description: None,
            system_prompt_id: None,
            system_prompt: None,
            metadata: Map::new(),
            enabled: true,
            created_at: at(0),
            updated_at: at(0),
        };
        self.models
            .insert(
                &model,
                &audit(organization, "model.create", model.id.as_str()),
            )
            .await
            .unwrap();
        model.id
    }

    async fn link(
        &self,
        organization: &OrganizationId,
        model: &ModelId,
        server: &McpServerId,
        seconds: i64,
    ) -> (ToolLink, bool) {
        let link = ToolLink {
            model_id: model.to_string(),
            server_id: server.clone(),
            created_at: at(seconds),
        };
        let created = self
            .servers
            .link(
                organization,
                &link,
                &audit(organization, "model.tools.link", model.as_str()),
            )
            .await
            .unwrap();
        (link, created)
    }

    /// `<action> <resource id>` of every audit event, oldest first.
    async fn events(&self) -> Vec<String> {
        text_rows(
            &self.db.database,
            "SELECT action || ' ' || resource_id AS value FROM audit_events ORDER BY id",
        )
        .await
    }
}

async fn servers_read_back_exactly_within_their_organization(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (acme, other) = (f.organization().await, f.organization().await);
    let first = rich(&acme);
    f.insert(&first).await;
    let second = plain(&acme, "second");
    f.insert(&second).await;
    let third = plain(&acme, "third");
    f.insert(&third).await;
    let foreign = plain(&other, "foreign");
    f.insert(&foreign).await;

    let read = f.servers.get(&acme, &first.id).await.unwrap().unwrap();
    assert_eq!(read, first);
    assert_eq!(read.headers.0, sealed().0, "the sealed bytes, exactly");
    assert_eq!(
        f.servers.get(&acme, &second.id).await.unwrap(),
        Some(second.clone())
    );
    assert_eq!(f.servers.get(&acme, &foreign.id).await.unwrap(), None);
    assert_eq!(f.servers.get(&other, &first.id).await.unwrap(), None);
    assert_eq!(
        f.servers
            .get(&acme, &McpServerId::generate())
            .await
            .unwrap(),
        None
    );

    assert_eq!(
        f.servers.list(&acme, &page(2, None)).await.unwrap(),
        vec![third.clone(), second.clone(), first.clone()],
        "one over the limit, newest first"
    );
    assert_eq!(
        f.servers
            .list(&acme, &page(2, Some(second.id.clone())))
            .await
            .unwrap(),
        vec![first.clone()]
    );
    assert!(
        f.servers
            .list(&acme, &page(2, Some(first.id.clone())))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        f.servers.list(&other, &page(10, None)).await.unwrap(),
        vec![foreign.clone()]
    );
    assert_eq!(f.servers.count(&acme).await.unwrap(), 3);
    assert_eq!(f.servers.count(&other).await.unwrap(), 1);
    assert_eq!(
        f.servers.count(&OrganizationId::generate()).await.unwrap(),
        0
    );

    // The same id twice is refused, and records nothing.
    let before = f.events().await;
    let mut twin = plain(&acme, "twin");
    twin.id = first.id.clone();
    assert!(
        f.servers
            .insert(&twin, &audit(&acme, "mcp_server.create", twin.id.as_str()))
            .await
            .is_err()
    );
    assert_eq!(f.events().await, before);
    f.db.destroy().await;
}

async fn update_replaces_every_mutable_field(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (acme, other) = (f.organization().await, f.organization().await);
    let server = rich(&acme);
    f.insert(&server).await;

    let changed = McpServer {
        name: "Renamed".into(),
        url: "https://other.example.com/mcp".into(),
        header_names: vec!["X-Token".into()],
        headers: SealedHeaders(vec![9, 0, 8, 0xff]),
        allowed_tools: None,
        timeout_ms: 100,
        tools: None,
        updated_at: at(60),
        ..server.clone()
    };
    assert!(
        f.servers
            .update(
                &changed,
                &audit(&acme, "mcp_server.update", server.id.as_str())
            )
            .await
            .unwrap()
    );
    assert_eq!(
        f.servers.get(&acme, &server.id).await.unwrap(),
        Some(changed.clone())
    );

    // The creator and creation time stay; an allow-list and tools come back.
    let again = McpServer {
        allowed_tools: Some(Vec::new()),
        tools: Some(ToolsCache {
            tools: Vec::new(),
            fetched_at: at(61),
        }),
        created_by: "mallory".into(),
        created_at: at(999),
        updated_at: at(62),
        ..changed.clone()
    };
    assert!(
        f.servers
            .update(
                &again,
                &audit(&acme, "mcp_server.update", server.id.as_str())
            )
            .await
            .unwrap()
    );
    assert_eq!(
        f.servers.get(&acme, &server.id).await.unwrap(),
        Some(McpServer {
            created_by: server.created_by.clone(),
            created_at: server.created_at,
            ..again.clone()
        })
    );

    // Another organization cannot change it, nor can an unknown server be changed.
    let stored = f.servers.get(&acme, &server.id).await.unwrap();
    let hijacked = McpServer {
        organization: other.clone(),
        name: "Hijacked".into(),
        ..changed.clone()
    };
    assert!(
        !f.servers
            .update(
                &hijacked,
                &audit(&other, "mcp_server.update", server.id.as_str())
            )
            .await
            .unwrap()
    );
    let unknown = plain(&acme, "unknown");
    assert!(
        !f.servers
            .update(
                &unknown,
                &audit(&acme, "mcp_server.update", unknown.id.as_str())
            )
            .await
            .unwrap()
    );
    assert_eq!(f.servers.get(&acme, &server.id).await.unwrap(), stored);
    assert_eq!(f.servers.get(&acme, &unknown.id).await.unwrap(), None);
    f.db.destroy().await;
}

async fn tools_are_kept_with_the_time_they_were_listed(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (acme, other) = (f.organization().await, f.organization().await);
    let server = plain(&acme, "wiki");
    f.insert(&server).await;

    assert!(
        f.servers
            .save_tools(&acme, &server.id, &tools(), at(30))
            .await
            .unwrap()
    );
    let read = f.servers.get(&acme, &server.id).await.unwrap().unwrap();
    assert_eq!(
        read.tools,
        Some(ToolsCache {
            tools: tools(),
            fetched_at: at(30)
        })
    );
    assert_eq!(
        read,
        McpServer {
            tools: read.tools.clone(),
            ..server.clone()
        },
        "nothing else changes, not even the update time"
    );
    // Listed again: the new answer replaces the old one (even an empty one).
    assert!(
        f.servers
            .save_tools(&acme, &server.id, &[], at(31))
            .await
            .unwrap()
    );
    assert_eq!(
        f.servers
            .get(&acme, &server.id)
            .await
            .unwrap()
            .unwrap()
            .tools,
        Some(ToolsCache {
            tools: Vec::new(),
            fetched_at: at(31)
        })
    );
    assert!(
        !f.servers
            .save_tools(&other, &server.id, &tools(), at(32))
            .await
            .unwrap()
    );
    assert!(
        !f.servers
            .save_tools(&acme, &McpServerId::generate(), &tools(), at(32))
            .await
            .unwrap()
    );
    assert_eq!(
        f.servers
            .get(&acme, &server.id)
            .await
            .unwrap()
            .unwrap()
            .tools
            .map(|cache| cache.fetched_at),
        Some(at(31))
    );
    f.db.destroy().await;
}

async fn links_are_made_once_and_listed_oldest_first(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (acme, other) = (f.organization().await, f.organization().await);
    let (bot, helper) = (f.model(&acme, "bot").await, f.model(&acme, "helper").await);
    let (wiki, jira) = (plain(&acme, "wiki"), plain(&acme, "jira"));
    f.insert(&wiki).await;
    f.insert(&jira).await;

    let (second, created) = f.link(&acme, &bot, &jira.id, 2).await;
    assert!(created);
    let (first, created) = f.link(&acme, &bot, &wiki.id, 1).await;
    assert!(created);
    let (_, created) = f.link(&acme, &bot, &jira.id, 9).await;
    assert!(!created, "linked already");
    let (helper_link, created) = f.link(&acme, &helper, &wiki.id, 3).await;
    assert!(created);

    assert_eq!(
        f.servers.links(&acme, bot.as_str()).await.unwrap(),
        vec![first.clone(), second.clone()],
        "oldest first, each once, with its first creation time"
    );
    assert_eq!(
        f.servers.links(&acme, helper.as_str()).await.unwrap(),
        vec![helper_link]
    );
    assert!(
        f.servers
            .links(&other, bot.as_str())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        f.servers
            .links(&acme, ModelId::generate().as_str())
            .await
            .unwrap()
            .is_empty()
    );

    // Another organization cannot unlink; nothing unlinks twice.
    let unlink = |organization: &OrganizationId, server: &McpServerId| {
        let organization = organization.clone();
        let server = server.clone();
        let servers = f.servers.clone();
        let bot = bot.clone();
        async move {
            servers
                .unlink(
                    &organization,
                    bot.as_str(),
                    &server,
                    &audit(&organization, "model.tools.unlink", bot.as_str()),
                )
                .await
                .unwrap()
        }
    };
    assert!(!unlink(&other, &jira.id).await);
    assert!(unlink(&acme, &jira.id).await);
    assert!(!unlink(&acme, &jira.id).await);
    assert_eq!(
        f.servers.links(&acme, bot.as_str()).await.unwrap(),
        vec![first]
    );
    // Unlinked, it may be linked again.
    let (relinked, created) = f.link(&acme, &bot, &jira.id, 10).await;
    assert!(created);
    assert_eq!(
        f.servers.links(&acme, bot.as_str()).await.unwrap().last(),
        Some(&relinked)
    );

    // A link may not name a model or a server that does not exist.
    let ghost = ToolLink {
        model_id: ModelId::generate().to_string(),
        server_id: wiki.id.clone(),
        created_at: at(11),
    };
    assert!(
        f.servers
            .link(
                &acme,
                &ghost,
                &audit(&acme, "model.tools.link", &ghost.model_id)
            )
            .await
            .is_err()
    );
    let nowhere = ToolLink {
        model_id: bot.to_string(),
        server_id: McpServerId::generate(),
        created_at: at(11),
    };
    assert!(
        f.servers
            .link(
                &acme,
                &nowhere,
                &audit(&acme, "model.tools.link", bot.as_str())
            )
            .await
            .is_err()
    );
    f.db.destroy().await;
}

async fn links_go_with_their_server_or_their_model(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (acme, other) = (f.organization().await, f.organization().await);
    let (bot, helper) = (f.model(&acme, "bot").await, f.model(&acme, "helper").await);
    let (wiki, jira) = (plain(&acme, "wiki"), plain(&acme, "jira"));
    f.insert(&wiki).await;
    f.insert(&jira).await;
    let (jira_for_bot, _) = f.link(&acme, &bot, &jira.id, 1).await;
    f.link(&acme, &bot, &wiki.id, 2).await;
    f.link(&acme, &helper, &wiki.id, 3).await;
    let (jira_for_helper, _) = f.link(&acme, &helper, &jira.id, 4).await;

    // Another organization cannot delete the server.
    assert!(
        !f.servers
            .delete(
                &other,
                &wiki.id,
                &audit(&other, "mcp_server.delete", wiki.id.as_str())
            )
            .await
            .unwrap()
    );
    assert_eq!(f.servers.links(&acme, bot.as_str()).await.unwrap().len(), 2);
    assert!(
        f.servers
            .delete(
                &acme,
                &wiki.id,
                &audit(&acme, "mcp_server.delete", wiki.id.as_str())
            )
            .await
            .unwrap()
    );
    assert_eq!(f.servers.get(&acme, &wiki.id).await.unwrap(), None);
    assert_eq!(f.servers.count(&acme).await.unwrap(), 1);
    assert_eq!(
        f.servers.links(&acme, bot.as_str()).await.unwrap(),
        vec![jira_for_bot]
    );
    assert_eq!(
        f.servers.links(&acme, helper.as_str()).await.unwrap(),
        vec![jira_for_helper.clone()]
    );
    assert!(
        !f.servers
            .delete(
                &acme,
                &wiki.id,
                &audit(&acme, "mcp_server.delete", wiki.id.as_str())
            )
            .await
            .unwrap(),
        "deleted once"
    );

    // A deleted model takes its links along; the server and other models' links stay.
    assert!(
        f.models
            .delete(&acme, &bot, &audit(&acme, "model.delete", bot.as_str()))
            .await
            .unwrap()
    );
    assert!(
        f.servers
            .links(&acme, bot.as_str())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        f.servers.links(&acme, helper.as_str()).await.unwrap(),
        vec![jira_for_helper]
    );
    assert!(f.servers.get(&acme, &jira.id).await.unwrap().is_some());
    let rows = text_rows(
        &f.db.database,
        "SELECT model_id AS value FROM model_mcp_servers",
    )
    .await;
    assert_eq!(rows, vec![helper.to_string()]);
    f.db.destroy().await;
}

async fn changes_and_their_audit_records_commit_together(backend: Backend) {
    let f = Fixture::new(backend).await;
    let acme = f.organization().await;
    let bot = f.model(&acme, "bot").await;
    let server = plain(&acme, "wiki");
    f.insert(&server).await;
    let id = server.id.as_str();
    let mut expected = vec![
        format!("model.create {bot}"),
        format!("mcp_server.create {id}"),
    ];
    assert_eq!(f.events().await, expected);

    let changed = McpServer {
        name: "Wiki".into(),
        ..server.clone()
    };
    f.servers
        .update(&changed, &audit(&acme, "mcp_server.update", id))
        .await
        .unwrap();
    expected.push(format!("mcp_server.update {id}"));
    // Caching tools is not a change anyone made: no record.
    f.servers
        .save_tools(&acme, &server.id, &tools(), at(3))
        .await
        .unwrap();
    f.link(&acme, &bot, &server.id, 4).await;
    expected.push(format!("model.tools.link {bot}"));
    // Linked already, unlinking nothing, deleting nothing: no record.
    f.link(&acme, &bot, &server.id, 5).await;
    assert!(
        !f.servers
            .unlink(
                &acme,
                ModelId::generate().as_str(),
                &server.id,
                &audit(&acme, "model.tools.unlink", bot.as_str()),
            )
            .await
            .unwrap()
    );
    assert!(
        !f.servers
            .delete(
                &acme,
                &McpServerId::generate(),
                &audit(&acme, "mcp_server.delete", id)
            )
            .await
            .unwrap()
    );
    assert_eq!(f.events().await, expected);
    assert!(
        f.servers
            .unlink(
                &acme,
                bot.as_str(),
                &server.id,
                &audit(&acme, "model.tools.unlink", bot.as_str()),
            )
            .await
            .unwrap()
    );
    expected.push(format!("model.tools.unlink {bot}"));
    assert_eq!(f.events().await, expected);

    // A record that cannot be written (its organization does not exist) undoes its change.
    let nowhere = OrganizationId::generate();
    let stray = |action: &str, resource: &str| audit(&nowhere, action, resource);
    let refused = plain(&acme, "refused");
    assert!(
        f.servers
            .insert(&refused, &stray("mcp_server.create", refused.id.as_str()))
            .await
            .is_err()
    );
    assert_eq!(f.servers.get(&acme, &refused.id).await.unwrap(), None);
    let renamed = McpServer {
        name: "Renamed".into(),
        ..changed.clone()
    };
    assert!(
        f.servers
            .update(&renamed, &stray("mcp_server.update", id))
            .await
            .is_err()
    );
    let link = ToolLink {
        model_id: bot.to_string(),
        server_id: server.id.clone(),
        created_at: at(6),
    };
    assert!(
        f.servers
            .link(&acme, &link, &stray("model.tools.link", bot.as_str()))
            .await
            .is_err()
    );
    assert!(
        f.servers
            .links(&acme, bot.as_str())
            .await
            .unwrap()
            .is_empty()
    );
    f.link(&acme, &bot, &server.id, 7).await;
    expected.push(format!("model.tools.link {bot}"));
    assert!(
        f.servers
            .unlink(
                &acme,
                bot.as_str(),
                &server.id,
                &stray("model.tools.unlink", bot.as_str())
            )
            .await
            .is_err()
    );
    assert!(
        f.servers
            .delete(&acme, &server.id, &stray("mcp_server.delete", id))
            .await
            .is_err()
    );
    let kept = f.servers.get(&acme, &server.id).await.unwrap().unwrap();
    assert_eq!(kept.name, "Wiki");
    assert_eq!(f.servers.links(&acme, bot.as_str()).await.unwrap().len(), 1);
    assert_eq!(f.events().await, expected);

    assert!(
        f.servers
            .delete(&acme, &server.id, &audit(&acme, "mcp_server.delete", id))
            .await
            .unwrap()
    );
    expected.push(format!("mcp_server.delete {id}"));
    assert_eq!(f.events().await, expected);
    f.db.destroy().await;
}

tessera_store::on_both_databases!(
    servers_read_back_exactly_within_their_organization,
    update_replaces_every_mutable_field,
    tools_are_kept_with_the_time_they_were_listed,
    links_are_made_once_and_listed_oldest_first,
    links_go_with_their_server_or_their_model,
    changes_and_their_audit_records_commit_together,
);
