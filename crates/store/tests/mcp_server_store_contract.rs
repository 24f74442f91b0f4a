//! The `McpServerStore` contract (`tessera_mcp::contract`, also run against the in-memory
//! reference) on SQLite and PostgreSQL, and what only a database can show: the foreign keys
//! that refuse a link to a model that does not exist and take a deleted model's links along
//! (the rows really gone), and audit records that cannot be written (their organization
//! does not exist) undoing the changes they record.
#![cfg(all(feature = "mcp", feature = "audit"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Map;
use tessera_audit::{AuditEventStore, AuditFilter, AuditScope};
use tessera_kernel::{AuditRecord, Limit, OrganizationId, PageRequest};
use tessera_mcp::{
    McpServer, McpServerStore, ToolLink,
    contract::{Fixture, McpServerStores, actions, at, audit, plain},
};
use tessera_models::{ModelId, ModelStore, UserModel};
use tessera_store::{
    Backend, Database, SqlAuditStore, SqlMcpServerStore, SqlModelStore,
    testing::{TestDatabase, store_organization, text_rows},
};

/// An MCP server store over one database, which stores the organizations and user models
/// servers and links refer to, and keeps the audit records in its audit log.
struct SqlStores {
    servers: Arc<SqlMcpServerStore>,
    models: SqlModelStore,
    audit: SqlAuditStore,
    database: Database,
}

#[async_trait]
impl McpServerStores for SqlStores {
    fn store(&self) -> Arc<dyn McpServerStore> {
        self.servers.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }

    async fn model_exists(&self, organization: &OrganizationId, name: &str) -> String {
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
        model.id.to_string()
    }

    async fn recorded_audit(&self) -> Vec<AuditRecord> {
        // The audit log lists newest first, in pages; the hook gives oldest first.
        let limit = Limit::new(100).unwrap();
        let mut records = Vec::new();
        let mut after = None;
        loop {
            let page = PageRequest { limit, after };
            let mut listed = self
                .audit
                .list(&AuditScope::All, &AuditFilter::default(), &page)
                .await
                .unwrap();
            let more = listed.len() > limit.get() as usize;
            listed.truncate(limit.get() as usize);
            after = listed.last().map(|record| record.id.clone());
            records.extend(listed);
            if !more {
                break;
            }
        }
        records.reverse();
        records
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        servers: Arc::new(SqlMcpServerStore::new(db.database.clone())),
        models: SqlModelStore::new(db.database.clone()),
        audit: SqlAuditStore::new(db.database.clone()),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_mcp::mcp_server_store_contract!(|| super::sql_store(tessera_store::Backend::Sqlite));
}

mod contract_postgres {
    tessera_mcp::mcp_server_store_contract!(|| super::sql_store(tessera_store::Backend::Postgres));
}

/// `<action> <resource id>` of every audit event, oldest first, read with SQL.
async fn events(database: &Database) -> Vec<String> {
    text_rows(
        database,
        "SELECT action || ' ' || resource_id AS value FROM audit_events ORDER BY id",
    )
    .await
}

async fn links_name_stored_models(backend: Backend) {
    let (stores, _db) = sql_store(backend).await;
    let f = Fixture::new(&stores);
    let acme = f.organization().await;
    let wiki = plain(&acme, "wiki");
    f.insert(&wiki).await;
    let ghost = ToolLink {
        model_id: ModelId::generate().to_string(),
        server_id: wiki.id.clone(),
        created_at: at(11),
    };
    assert!(
        stores
            .servers
            .link(
                &acme,
                &ghost,
                &audit(&acme, "model.tools.link", &ghost.model_id)
            )
            .await
            .is_err()
    );
    assert!(
        stores
            .servers
            .links(&acme, &ghost.model_id)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn links_go_with_their_model(backend: Backend) {
    let (stores, db) = sql_store(backend).await;
    let f = Fixture::new(&stores);
    let acme = f.organization().await;
    let bot = stores.model_exists(&acme, "bot").await;
    let helper = stores.model_exists(&acme, "helper").await;
    let (wiki, jira) = (plain(&acme, "wiki"), plain(&acme, "jira"));
    f.insert(&wiki).await;
    f.insert(&jira).await;
    assert!(f.link(&acme, &bot, &jira.id, 1).await.1);
    assert!(f.link(&acme, &bot, &wiki.id, 2).await.1);
    assert!(f.link(&acme, &helper, &wiki.id, 3).await.1);
    let (jira_for_helper, created) = f.link(&acme, &helper, &jira.id, 4).await;
    assert!(created);
    assert!(
        stores
            .servers
            .delete(
                &acme,
                &wiki.id,
                &audit(&acme, "mcp_server.delete", wiki.id.as_str())
            )
            .await
            .unwrap()
    );

    // A deleted model takes its links along; the server and other models' links stay.
    let bot_id: ModelId = bot.parse().unwrap();
    assert!(
        stores
            .models
            .delete(&acme, &bot_id, &audit(&acme, "model.delete", &bot))
            .await
            .unwrap()
    );
    assert!(stores.servers.links(&acme, &bot).await.unwrap().is_empty());
    assert_eq!(
        stores.servers.links(&acme, &helper).await.unwrap(),
        vec![jira_for_helper]
    );
    assert!(stores.servers.get(&acme, &jira.id).await.unwrap().is_some());
    // The rows are gone, the deleted server's and the deleted model's.
    let rows = text_rows(
        &db.database,
        "SELECT model_id AS value FROM model_mcp_servers",
    )
    .await;
    assert_eq!(rows, vec![helper.clone()]);
}

async fn a_record_that_cannot_be_written_undoes_its_change(backend: Backend) {
    let (stores, db) = sql_store(backend).await;
    let f = Fixture::new(&stores);
    let acme = f.organization().await;
    let bot = stores.model_exists(&acme, "bot").await;
    let server = plain(&acme, "wiki");
    f.insert(&server).await;
    let id = server.id.as_str();
    let changed = McpServer {
        name: "Wiki".into(),
        ..server.clone()
    };
    assert!(
        stores
            .servers
            .update(
                &changed,
                server.updated_at,
                &audit(&acme, "mcp_server.update", id)
            )
            .await
            .unwrap()
    );
    let mut expected = vec![
        format!("model.create {bot}"),
        format!("mcp_server.create {id}"),
        format!("mcp_server.update {id}"),
    ];
    assert_eq!(events(&db.database).await, expected);
    // The hook the contract reads the records with agrees with SQL.
    assert_eq!(actions(&stores.recorded_audit().await), expected);

    // Its organization does not exist: the audit log's foreign key refuses the record.
    let nowhere = OrganizationId::generate();
    let stray = |action: &str, resource: &str| audit(&nowhere, action, resource);
    let refused = plain(&acme, "refused");
    assert!(
        stores
            .servers
            .insert(&refused, &stray("mcp_server.create", refused.id.as_str()))
            .await
            .is_err()
    );
    assert_eq!(stores.servers.get(&acme, &refused.id).await.unwrap(), None);
    let renamed = McpServer {
        name: "Renamed".into(),
        ..changed.clone()
    };
    assert!(
        stores
            .servers
            .update(
                &renamed,
                changed.updated_at,
                &stray("mcp_server.update", id)
            )
            .await
            .is_err()
    );
    let unmade = ToolLink {
        model_id: bot.clone(),
        server_id: server.id.clone(),
        created_at: at(6),
    };
    assert!(
        stores
            .servers
            .link(&acme, &unmade, &stray("model.tools.link", &bot))
            .await
            .is_err()
    );
    assert!(stores.servers.links(&acme, &bot).await.unwrap().is_empty());
    assert!(f.link(&acme, &bot, &server.id, 7).await.1);
    expected.push(format!("model.tools.link {bot}"));
    assert!(
        stores
            .servers
            .unlink(&acme, &bot, &server.id, &stray("model.tools.unlink", &bot))
            .await
            .is_err()
    );
    assert!(
        stores
            .servers
            .delete(&acme, &server.id, &stray("mcp_server.delete", id))
            .await
            .is_err()
    );
    let kept = stores
        .servers
        .get(&acme, &server.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.name, "Wiki");
    assert_eq!(stores.servers.links(&acme, &bot).await.unwrap().len(), 1);
    assert_eq!(events(&db.database).await, expected);

    assert!(
        stores
            .servers
            .delete(&acme, &server.id, &audit(&acme, "mcp_server.delete", id))
            .await
            .unwrap()
    );
    expected.push(format!("mcp_server.delete {id}"));
    assert_eq!(events(&db.database).await, expected);
}

tessera_store::on_both_databases!(
    links_name_stored_models,
    links_go_with_their_model,
    a_record_that_cannot_be_written_undoes_its_change,
);
