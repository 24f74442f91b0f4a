//! The `McpServerStore` contract, for anyone implementing the port: each function checks
//! promises of the trait against a fresh, empty store (an [`McpServerStores`]), and
//! [`mcp_server_store_contract!`](crate::mcp_server_store_contract) turns them into tests:
//! servers read back exactly (the sealed header bytes included) within their organization
//! only, newest first in pages; updates and cached tools; links to user models, once each,
//! oldest first, gone with their server; and audit records kept exactly with the changes
//! they record. Tessera runs it against the in-memory reference (`crate::memory`) and both
//! SQL stores. The builders are public, for an adapter's own checks beyond the contract.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::json;
use tessera_kernel::{ActorKind, AuditRecord, Limit, OrganizationId, PageRequest};

use crate::{
    McpServer, McpServerId, McpServerStore, RemoteTool, SealedHeaders, ToolLink, ToolsCache,
    memory::InMemoryMcpServerStore,
};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own store made by `$factory`: an expression that, called with no argument, gives a
/// future of `(stores, guard)`, `stores` an
/// [`McpServerStores`](crate::contract::McpServerStores) (the guard, e.g. a throwaway
/// database, lives until the test ends).
#[macro_export]
macro_rules! mcp_server_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            servers_read_back_exactly_within_their_organization,
            update_replaces_every_mutable_field,
            an_update_made_from_an_older_read_is_refused,
            tools_are_kept_with_the_time_they_were_listed,
            links_are_made_once_and_listed_oldest_first,
            links_go_with_their_server,
            changes_and_their_audit_records_commit_together,
        );
    };
}

/// What the checks run on: an MCP server store over one empty state, ways to make what
/// servers and links refer to exist first (organizations and user models live in other
/// domains' stores), and the audit records written.
#[async_trait]
pub trait McpServerStores: Send + Sync {
    fn store(&self) -> Arc<dyn McpServerStore>;

    /// Makes the organization `id` (named `name`) exist, e.g. stores it where servers refer
    /// to it; nothing for stores that keep no organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);

    /// Makes a user model of `organization` named `name` exist, e.g. stores it where links
    /// refer to it, and gives its id (a fresh one for stores that keep no models). Panics if
    /// it cannot.
    async fn model_exists(&self, organization: &OrganizationId, name: &str) -> String;

    /// Every audit record written so far, oldest first: the store's, and any the hooks
    /// wrote.
    async fn recorded_audit(&self) -> Vec<AuditRecord>;
}

/// The in-memory reference, which keeps no organizations and no models.
#[async_trait]
impl McpServerStores for Arc<InMemoryMcpServerStore> {
    fn store(&self) -> Arc<dyn McpServerStore> {
        self.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}

    async fn model_exists(&self, _organization: &OrganizationId, _name: &str) -> String {
        fresh_model_id()
    }

    async fn recorded_audit(&self) -> Vec<AuditRecord> {
        self.audit_records()
    }
}

/// A user model id no store has yet, shaped as one (`mdl_` and a time-ordered UUID).
pub fn fresh_model_id() -> String {
    McpServerId::generate().as_str().replacen("mcp_", "mdl_", 1)
}

/// Microsecond precision, as the domain's clock produces; `at(s)` is `s` seconds later.
pub fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 27, 1, 2, 3).unwrap()
        + Duration::microseconds(123_456)
        + Duration::seconds(seconds)
}

/// A page of `limit` servers, after `after` when set.
pub fn page(limit: i64, after: Option<McpServerId>) -> PageRequest<McpServerId> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after,
    }
}

/// The audit record of `action` on `resource` of `organization`.
pub fn audit(organization: &OrganizationId, action: &str, resource: &str) -> AuditRecord {
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
pub fn sealed() -> SealedHeaders {
    SealedHeaders((0..=255u8).rev().chain([0, 0, 0xff, 0xfe]).collect())
}

pub fn tools() -> Vec<RemoteTool> {
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
pub fn rich(organization: &OrganizationId) -> McpServer {
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
pub fn plain(organization: &OrganizationId, name: &str) -> McpServer {
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

/// `<action> <resource id>` of each record.
pub fn actions(records: &[AuditRecord]) -> Vec<String> {
    records
        .iter()
        .map(|record| {
            format!(
                "{} {}",
                record.action,
                record.resource_id.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

/// The stores of one check, and the steps the checks share (public, for an adapter's own
/// checks beyond the contract).
pub struct Fixture<'a> {
    stores: &'a dyn McpServerStores,
    pub servers: Arc<dyn McpServerStore>,
}

impl<'a> Fixture<'a> {
    pub fn new(stores: &'a impl McpServerStores) -> Self {
        Self {
            stores,
            servers: stores.store(),
        }
    }

    /// A fresh organization, made to exist first.
    pub async fn organization(&self) -> OrganizationId {
        let id = OrganizationId::generate();
        self.stores.organization_exists(&id, "Acme").await;
        id
    }

    /// A user model of `organization`, made to exist first.
    pub async fn model(&self, organization: &OrganizationId, name: &str) -> String {
        self.stores.model_exists(organization, name).await
    }

    pub async fn insert(&self, server: &McpServer) {
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

    pub async fn link(
        &self,
        organization: &OrganizationId,
        model: &str,
        server: &McpServerId,
        seconds: i64,
    ) -> (ToolLink, bool) {
        let link = ToolLink {
            model_id: model.to_owned(),
            server_id: server.clone(),
            created_at: at(seconds),
        };
        let created = self
            .servers
            .link(
                organization,
                &link,
                &audit(organization, "model.tools.link", model),
            )
            .await
            .unwrap();
        (link, created)
    }

    pub async fn unlink(
        &self,
        organization: &OrganizationId,
        model: &str,
        server: &McpServerId,
    ) -> bool {
        self.servers
            .unlink(
                organization,
                model,
                server,
                &audit(organization, "model.tools.unlink", model),
            )
            .await
            .unwrap()
    }

    /// `<action> <resource id>` of every audit record, oldest first.
    pub async fn events(&self) -> Vec<String> {
        actions(&self.stores.recorded_audit().await)
    }
}

pub async fn servers_read_back_exactly_within_their_organization(stores: &impl McpServerStores) {
    let f = Fixture::new(stores);
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
    assert_eq!(f.servers.get(&acme, &first.id).await.unwrap(), Some(first));
}

pub async fn update_replaces_every_mutable_field(stores: &impl McpServerStores) {
    let f = Fixture::new(stores);
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
                server.updated_at,
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
                changed.updated_at,
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
                again.updated_at,
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
                unknown.updated_at,
                &audit(&acme, "mcp_server.update", unknown.id.as_str())
            )
            .await
            .unwrap()
    );
    assert_eq!(f.servers.get(&acme, &server.id).await.unwrap(), stored);
    assert_eq!(f.servers.get(&acme, &unknown.id).await.unwrap(), None);
    assert_eq!(f.servers.get(&other, &server.id).await.unwrap(), None);
}

/// Two changes made from the same read: the first is written, the second (whose read is
/// no longer the stored version) is refused and changes nothing, so no change undoes
/// another or mixes its fields with another's.
pub async fn an_update_made_from_an_older_read_is_refused(stores: &impl McpServerStores) {
    let f = Fixture::new(stores);
    let acme = f.organization().await;
    let server = rich(&acme);
    f.insert(&server).await;
    let read = f.servers.get(&acme, &server.id).await.unwrap().unwrap();

    let moved = McpServer {
        url: "https://elsewhere.example.net/mcp".into(),
        header_names: Vec::new(),
        headers: SealedHeaders(Vec::new()),
        tools: None,
        updated_at: at(70),
        ..read.clone()
    };
    let renamed = McpServer {
        name: "Renamed".into(),
        updated_at: at(70),
        ..read.clone()
    };
    let change = audit(&acme, "mcp_server.update", server.id.as_str());
    let before = f.events().await;
    assert!(
        f.servers
            .update(&moved, read.updated_at, &change)
            .await
            .unwrap()
    );
    assert!(
        !f.servers
            .update(&renamed, read.updated_at, &change)
            .await
            .unwrap(),
        "written over a change it never saw"
    );
    assert_eq!(
        f.servers.get(&acme, &server.id).await.unwrap(),
        Some(moved.clone())
    );
    assert_eq!(
        f.events().await.len(),
        before.len() + 1,
        "one record, of the change made"
    );
    // Made again from what is stored now, it is written.
    let renamed = McpServer {
        name: "Renamed".into(),
        updated_at: at(71),
        ..moved.clone()
    };
    assert!(
        f.servers
            .update(
                &renamed,
                moved.updated_at,
                &audit(&acme, "mcp_server.update", server.id.as_str())
            )
            .await
            .unwrap()
    );
    assert_eq!(
        f.servers.get(&acme, &server.id).await.unwrap(),
        Some(renamed)
    );
}

pub async fn tools_are_kept_with_the_time_they_were_listed(stores: &impl McpServerStores) {
    let f = Fixture::new(stores);
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
}

/// Links to a model are made once each and listed oldest first, within their organization;
/// a link must name a stored server (that it names a stored model the SQL stores' foreign
/// key checks: the caller has, and stores that keep no models cannot).
pub async fn links_are_made_once_and_listed_oldest_first(stores: &impl McpServerStores) {
    let f = Fixture::new(stores);
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
        f.servers.links(&acme, &bot).await.unwrap(),
        vec![first.clone(), second.clone()],
        "oldest first, each once, with its first creation time"
    );
    assert_eq!(
        f.servers.links(&acme, &helper).await.unwrap(),
        vec![helper_link]
    );
    assert!(f.servers.links(&other, &bot).await.unwrap().is_empty());
    assert!(
        f.servers
            .links(&acme, &fresh_model_id())
            .await
            .unwrap()
            .is_empty()
    );

    // Another organization cannot unlink; nothing unlinks twice.
    assert!(!f.unlink(&other, &bot, &jira.id).await);
    assert!(f.unlink(&acme, &bot, &jira.id).await);
    assert!(!f.unlink(&acme, &bot, &jira.id).await);
    assert_eq!(f.servers.links(&acme, &bot).await.unwrap(), vec![first]);
    // Unlinked, it may be linked again.
    let (relinked, created) = f.link(&acme, &bot, &jira.id, 10).await;
    assert!(created);
    assert_eq!(
        f.servers.links(&acme, &bot).await.unwrap().last(),
        Some(&relinked)
    );

    // A link may not name a server that does not exist.
    let nowhere = ToolLink {
        model_id: bot.clone(),
        server_id: McpServerId::generate(),
        created_at: at(11),
    };
    let before = f.events().await;
    assert!(
        f.servers
            .link(&acme, &nowhere, &audit(&acme, "model.tools.link", &bot))
            .await
            .is_err()
    );
    assert_eq!(f.servers.links(&acme, &bot).await.unwrap().len(), 2);
    assert_eq!(f.events().await, before, "a refused link records nothing");
}

/// Deleting a server takes its links along, within its organization only, once.
pub async fn links_go_with_their_server(stores: &impl McpServerStores) {
    let f = Fixture::new(stores);
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
    assert_eq!(f.servers.links(&acme, &bot).await.unwrap().len(), 2);
    assert!(f.servers.get(&acme, &wiki.id).await.unwrap().is_some());
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
        f.servers.links(&acme, &bot).await.unwrap(),
        vec![jira_for_bot]
    );
    assert_eq!(
        f.servers.links(&acme, &helper).await.unwrap(),
        vec![jira_for_helper]
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
}

/// Each change keeps its audit record; what changes nothing keeps none.
pub async fn changes_and_their_audit_records_commit_together(stores: &impl McpServerStores) {
    let f = Fixture::new(stores);
    let acme = f.organization().await;
    let bot = f.model(&acme, "bot").await;
    // Whatever making the model exist recorded (the SQL models store's own record).
    let mut expected = f.events().await;
    let server = plain(&acme, "wiki");
    f.insert(&server).await;
    let id = server.id.as_str();
    expected.push(format!("mcp_server.create {id}"));
    assert_eq!(f.events().await, expected);

    let changed = McpServer {
        name: "Wiki".into(),
        ..server.clone()
    };
    f.servers
        .update(
            &changed,
            server.updated_at,
            &audit(&acme, "mcp_server.update", id),
        )
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
    // Linked already, unlinking nothing, deleting nothing, updating nothing: no record.
    f.link(&acme, &bot, &server.id, 5).await;
    assert!(
        !f.servers
            .unlink(
                &acme,
                &fresh_model_id(),
                &server.id,
                &audit(&acme, "model.tools.unlink", &bot),
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
    let unknown = plain(&acme, "unknown");
    assert!(
        !f.servers
            .update(
                &unknown,
                unknown.updated_at,
                &audit(&acme, "mcp_server.update", unknown.id.as_str())
            )
            .await
            .unwrap()
    );
    // A change made from an older read: refused, no record.
    let stale = McpServer {
        name: "Stale".into(),
        updated_at: at(9),
        ..server.clone()
    };
    assert!(
        !f.servers
            .update(
                &stale,
                server.updated_at - chrono::Duration::seconds(1),
                &audit(&acme, "mcp_server.update", id)
            )
            .await
            .unwrap()
    );
    assert_eq!(f.events().await, expected);
    assert!(f.unlink(&acme, &bot, &server.id).await);
    expected.push(format!("model.tools.unlink {bot}"));
    assert_eq!(f.events().await, expected);

    assert!(
        f.servers
            .delete(&acme, &server.id, &audit(&acme, "mcp_server.delete", id))
            .await
            .unwrap()
    );
    expected.push(format!("mcp_server.delete {id}"));
    assert_eq!(f.events().await, expected);
}
