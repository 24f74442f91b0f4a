//! The in-memory [`McpServerStore`]: the port's reference implementation (the contract suite
//! runs against it as against the SQL stores), for tests. It keeps no organizations and no
//! models, so unlike the SQL stores' foreign keys it cannot refuse a link to a model that
//! does not exist nor an audit record of an organization that does not exist; a link must
//! still name a stored server.

use std::{
    collections::BTreeMap,
    ops::Bound,
    sync::{Mutex, PoisonError},
};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{McpServer, McpServerId, McpServerStore, RemoteTool, ToolLink, ToolsCache};

/// A link's key: organization, model, server (as the SQL stores' primary key).
type LinkKey = (OrganizationId, String, McpServerId);

#[derive(Default)]
struct State {
    /// By id, so newest first (by id) is the map in reverse.
    servers: BTreeMap<McpServerId, McpServer>,
    links: BTreeMap<LinkKey, ToolLink>,
    audit: Vec<AuditRecord>,
}

#[derive(Default)]
pub struct InMemoryMcpServerStore {
    state: Mutex<State>,
}

impl InMemoryMcpServerStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The audit records written with the changes made, in order.
    pub fn audit_records(&self) -> Vec<AuditRecord> {
        self.with(|state| state.audit.clone())
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl State {
    /// The server `id` when it is `organization`'s.
    fn owned(&mut self, organization: &OrganizationId, id: &McpServerId) -> Option<&mut McpServer> {
        self.servers
            .get_mut(id)
            .filter(|server| &server.organization == organization)
    }
}

#[async_trait]
impl McpServerStore for InMemoryMcpServerStore {
    async fn insert(&self, server: &McpServer, audit: &AuditRecord) -> Result<(), DomainError> {
        self.with(|state| {
            // Ids are unique across organizations, as the SQL stores' primary key.
            if state.servers.contains_key(&server.id) {
                return Err(DomainError::Conflict {
                    code: "already_exists",
                    message: format!("MCP server {} already exists", server.id),
                });
            }
            state.servers.insert(server.id.clone(), server.clone());
            state.audit.push(audit.clone());
            Ok(())
        })
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &McpServerId,
    ) -> Result<Option<McpServer>, DomainError> {
        Ok(self.with(|state| state.owned(organization, id).map(|server| server.clone())))
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<McpServerId>,
    ) -> Result<Vec<McpServer>, DomainError> {
        Ok(self.with(|state| {
            // Keyset pagination: the ids below the last one of the previous page.
            let below = page
                .after
                .as_ref()
                .map_or(Bound::Unbounded, Bound::Excluded);
            state
                .servers
                .range((Bound::Unbounded, below))
                .rev()
                .map(|(_, server)| server)
                .filter(|server| &server.organization == organization)
                .take(usize::try_from(page.limit.overfetch()).unwrap_or(usize::MAX))
                .cloned()
                .collect()
        }))
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        Ok(self.with(|state| {
            state
                .servers
                .values()
                .filter(|server| &server.organization == organization)
                .count() as u64
        }))
    }

    async fn update(
        &self,
        server: &McpServer,
        read_at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let Some(stored) = state
                .owned(&server.organization, &server.id)
                .filter(|stored| stored.updated_at == read_at)
            else {
                return false;
            };
            *stored = McpServer {
                id: stored.id.clone(),
                organization: stored.organization.clone(),
                created_by: stored.created_by.clone(),
                created_at: stored.created_at,
                ..server.clone()
            };
            state.audit.push(audit.clone());
            true
        }))
    }

    async fn save_tools(
        &self,
        organization: &OrganizationId,
        id: &McpServerId,
        tools: &[RemoteTool],
        fetched_at: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let Some(stored) = state.owned(organization, id) else {
                return false;
            };
            stored.tools = Some(ToolsCache {
                tools: tools.to_vec(),
                fetched_at,
            });
            true
        }))
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &McpServerId,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            if state.owned(organization, id).is_none() {
                return false;
            }
            state.servers.remove(id);
            state.links.retain(|(_, _, server), _| server != id);
            state.audit.push(audit.clone());
            true
        }))
    }

    async fn link(
        &self,
        organization: &OrganizationId,
        link: &ToolLink,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        self.with(|state| {
            // As the SQL stores' foreign key: a link names a stored server.
            if !state.servers.contains_key(&link.server_id) {
                return Err(DomainError::Conflict {
                    code: "missing_reference",
                    message: format!("MCP server {} does not exist", link.server_id),
                });
            }
            let key = (
                organization.clone(),
                link.model_id.clone(),
                link.server_id.clone(),
            );
            if state.links.contains_key(&key) {
                return Ok(false);
            }
            state.links.insert(key, link.clone());
            state.audit.push(audit.clone());
            Ok(true)
        })
    }

    async fn unlink(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        server: &McpServerId,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let key = (organization.clone(), model_id.to_owned(), server.clone());
            if state.links.remove(&key).is_none() {
                return false;
            }
            state.audit.push(audit.clone());
            true
        }))
    }

    async fn links(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Vec<ToolLink>, DomainError> {
        Ok(self.with(|state| {
            let mut links: Vec<ToolLink> = state
                .links
                .iter()
                .filter(|((owner, model, _), _)| owner == organization && model == model_id)
                .map(|(_, link)| link.clone())
                .collect();
            // Oldest first; links made at the same instant by server id, as the SQL stores.
            links.sort_by(|a, b| (a.created_at, &a.server_id).cmp(&(b.created_at, &b.server_id)));
            links
        }))
    }
}
