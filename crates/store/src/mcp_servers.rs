//! `McpServerStore` on PostgreSQL or SQLite: organizations' MCP servers (`mcp_servers`: header
//! names, allow-list and cached tools as JSON text, the sealed headers as bytes) and their
//! links to user models (`model_mcp_servers`, removed with their server or their model).

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};
use tessera_mcp::{
    McpServer, McpServerId, McpServerStore, RemoteTool, SealedHeaders, ToolLink, ToolsCache,
};

use crate::time::utc;
use crate::{
    Database,
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::{mcp_servers, model_mcp_servers},
};

/// `McpServerStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlMcpServerStore {
    db: Database,
}

impl SqlMcpServerStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

/// Names (of headers or tools) as a JSON array.
fn names_json(names: &[String]) -> Result<String, DomainError> {
    serde_json::to_string(names).map_err(|e| DomainError::internal(format!("names as JSON: {e}")))
}

/// Tools as a JSON array.
fn tools_json(tools: &[RemoteTool]) -> Result<String, DomainError> {
    serde_json::to_string(tools).map_err(|e| DomainError::internal(format!("tools as JSON: {e}")))
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = mcp_servers, treat_none_as_default_value = false)]
struct ServerRow {
    id: String,
    organization_id: String,
    name: String,
    url: String,
    header_names: String,
    headers: Vec<u8>,
    allowed_tools: Option<String>,
    timeout_ms: i32,
    tools: Option<String>,
    tools_fetched_at: Option<NaiveDateTime>,
    created_by: String,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

impl ServerRow {
    fn of(server: &McpServer) -> Result<Self, DomainError> {
        Ok(Self {
            id: server.id.to_string(),
            organization_id: server.organization.as_str().to_owned(),
            name: server.name.clone(),
            url: server.url.clone(),
            header_names: names_json(&server.header_names)?,
            headers: server.headers.0.clone(),
            allowed_tools: server
                .allowed_tools
                .as_deref()
                .map(names_json)
                .transpose()?,
            timeout_ms: i32::try_from(server.timeout_ms).map_err(|_| {
                DomainError::internal(format!(
                    "MCP server {}: timeout {} ms out of range",
                    server.id, server.timeout_ms
                ))
            })?,
            tools: server
                .tools
                .as_ref()
                .map(|cache| tools_json(&cache.tools))
                .transpose()?,
            tools_fetched_at: server
                .tools
                .as_ref()
                .map(|cache| cache.fetched_at.naive_utc()),
            created_by: server.created_by.clone(),
            created_at: server.created_at.naive_utc(),
            updated_at: server.updated_at.naive_utc(),
        })
    }
}

/// What `update` replaces: everything but the id, organization, creator and creation time.
#[derive(AsChangeset)]
#[diesel(table_name = mcp_servers, treat_none_as_null = true)]
struct ServerChange {
    name: String,
    url: String,
    header_names: String,
    headers: Vec<u8>,
    allowed_tools: Option<String>,
    timeout_ms: i32,
    tools: Option<String>,
    tools_fetched_at: Option<NaiveDateTime>,
    updated_at: NaiveDateTime,
}

impl From<ServerRow> for ServerChange {
    fn from(row: ServerRow) -> Self {
        Self {
            name: row.name,
            url: row.url,
            header_names: row.header_names,
            headers: row.headers,
            allowed_tools: row.allowed_tools,
            timeout_ms: row.timeout_ms,
            tools: row.tools,
            tools_fetched_at: row.tools_fetched_at,
            updated_at: row.updated_at,
        }
    }
}

impl TryFrom<ServerRow> for McpServer {
    type Error = DomainError;

    fn try_from(row: ServerRow) -> Result<Self, Self::Error> {
        let corrupt =
            |what: String| DomainError::internal(format!("mcp_servers row {}: {what}", row.id));
        let header_names: Vec<String> = serde_json::from_str(&row.header_names)
            .map_err(|e| corrupt(format!("header_names: {e}")))?;
        let allowed_tools: Option<Vec<String>> = row
            .allowed_tools
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| corrupt(format!("allowed_tools: {e}")))?;
        let tools = match (row.tools.as_deref(), row.tools_fetched_at) {
            (None, None) => None,
            (Some(tools), Some(fetched_at)) => Some(ToolsCache {
                tools: serde_json::from_str::<Vec<RemoteTool>>(tools)
                    .map_err(|e| corrupt(format!("tools: {e}")))?,
                fetched_at: utc(fetched_at),
            }),
            _ => return Err(corrupt("tools without tools_fetched_at, or back".into())),
        };
        Ok(McpServer {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            organization: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            timeout_ms: u32::try_from(row.timeout_ms).map_err(|e| corrupt(format!("{e}")))?,
            name: row.name,
            url: row.url,
            header_names,
            headers: SealedHeaders(row.headers),
            allowed_tools,
            tools,
            created_by: row.created_by,
            created_at: utc(row.created_at),
            updated_at: utc(row.updated_at),
        })
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = model_mcp_servers)]
struct LinkRow {
    organization_id: String,
    model_id: String,
    server_id: String,
    created_at: NaiveDateTime,
}

impl LinkRow {
    fn into_link(self) -> Result<ToolLink, DomainError> {
        Ok(ToolLink {
            server_id: self.server_id.parse().map_err(|e| {
                DomainError::internal(format!(
                    "model_mcp_servers row {}/{}: {e}",
                    self.model_id, self.server_id
                ))
            })?,
            model_id: self.model_id,
            created_at: utc(self.created_at),
        })
    }
}

macro_rules! one_server {
    ($organization:expr, $id:expr) => {
        mcp_servers::table
            .filter(mcp_servers::organization_id.eq($organization.as_str()))
            .filter(mcp_servers::id.eq($id.as_str()))
    };
}

#[async_trait]
impl McpServerStore for SqlMcpServerStore {
    async fn insert(&self, server: &McpServer, audit: &AuditRecord) -> Result<(), DomainError> {
        let row = ServerRow::of(server)?;
        with_transaction!(&self.db, conn => {
            diesel::insert_into(mcp_servers::table)
                .values(&row)
                .execute(conn)
                .await?;
            record_audit!(conn, audit);
            Ok(())
        })
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &McpServerId,
    ) -> Result<Option<McpServer>, DomainError> {
        let row: Option<ServerRow> = with_connection!(&self.db, conn => {
            one_server!(organization, id)
                .select(ServerRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(McpServer::try_from).transpose()
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<McpServerId>,
    ) -> Result<Vec<McpServer>, DomainError> {
        let rows: Vec<ServerRow> = with_connection!(&self.db, conn => {
            let mut query = mcp_servers::table
                .filter(mcp_servers::organization_id.eq(organization.as_str()))
                .into_boxed();
            if let Some(after) = &page.after {
                query = query.filter(mcp_servers::id.lt(after.as_str().to_owned()));
            }
            query
                .order(mcp_servers::id.desc())
                .limit(page.limit.overfetch())
                .select(ServerRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(McpServer::try_from).collect()
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            mcp_servers::table
                .filter(mcp_servers::organization_id.eq(organization.as_str()))
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn update(
        &self,
        server: &McpServer,
        read_at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        let change = ServerChange::from(ServerRow::of(server)?);
        // One conditional UPDATE: the row changes only if no other change came since it was
        // read (compare-and-set on updated_at, which every change moves forward).
        with_transaction!(&self.db, conn => {
            let changed = diesel::update(
                one_server!(server.organization, server.id)
                    .filter(mcp_servers::updated_at.eq(read_at.naive_utc())),
            )
                .set(&change)
                .execute(conn)
                .await?;
            if changed > 0 {
                record_audit!(conn, audit);
            }
            Ok(changed > 0)
        })
    }

    async fn save_tools(
        &self,
        organization: &OrganizationId,
        id: &McpServerId,
        tools: &[RemoteTool],
        fetched_at: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        let tools = tools_json(tools)?;
        let changed: usize = with_connection!(&self.db, conn => {
            diesel::update(one_server!(organization, id))
                .set((
                    mcp_servers::tools.eq(Some(tools)),
                    mcp_servers::tools_fetched_at.eq(Some(fetched_at.naive_utc())),
                ))
                .execute(conn)
                .await
                .map_err(query_error)?
        });
        Ok(changed > 0)
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &McpServerId,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        with_transaction!(&self.db, conn => {
            let owned: i64 = one_server!(organization, id).count().get_result(conn).await?;
            if owned == 0 {
                return Ok(false);
            }
            // Explicit, not only the foreign key's cascade: SQLite enforces it per connection.
            diesel::delete(model_mcp_servers::table.filter(model_mcp_servers::server_id.eq(id.as_str())))
                .execute(conn)
                .await?;
            diesel::delete(mcp_servers::table.filter(mcp_servers::id.eq(id.as_str())))
                .execute(conn)
                .await?;
            record_audit!(conn, audit);
            Ok(true)
        })
    }

    async fn link(
        &self,
        organization: &OrganizationId,
        link: &ToolLink,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        let row = LinkRow {
            organization_id: organization.as_str().to_owned(),
            model_id: link.model_id.clone(),
            server_id: link.server_id.to_string(),
            created_at: link.created_at.naive_utc(),
        };
        with_transaction!(&self.db, conn => {
            let inserted = diesel::insert_into(model_mcp_servers::table)
                .values(&row)
                .on_conflict_do_nothing()
                .execute(conn)
                .await?;
            if inserted > 0 {
                record_audit!(conn, audit);
            }
            Ok(inserted > 0)
        })
    }

    async fn unlink(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        server: &McpServerId,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        with_transaction!(&self.db, conn => {
            let deleted = diesel::delete(
                model_mcp_servers::table
                    .filter(model_mcp_servers::organization_id.eq(organization.as_str()))
                    .filter(model_mcp_servers::model_id.eq(model_id))
                    .filter(model_mcp_servers::server_id.eq(server.as_str())),
            )
            .execute(conn)
            .await?;
            if deleted > 0 {
                record_audit!(conn, audit);
            }
            Ok(deleted > 0)
        })
    }

    async fn links(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Vec<ToolLink>, DomainError> {
        let rows: Vec<LinkRow> = with_connection!(&self.db, conn => {
            model_mcp_servers::table
                .filter(model_mcp_servers::organization_id.eq(organization.as_str()))
                .filter(model_mcp_servers::model_id.eq(model_id))
                .order((model_mcp_servers::created_at.asc(), model_mcp_servers::server_id.asc()))
                .select(LinkRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(LinkRow::into_link).collect()
    }
}
