//! MCP servers as the API offers them: register, read, list, change and delete within the
//! caller's organization, list their tools, link them to user models, and gather the
//! toolbox of a model for a completion.

use std::{sync::Arc, time::Duration};

use tessera_kernel::{
    Actor, Clock, CursorCodec, DomainError, FieldError, Limit, LocSegment, OrganizationId, Page,
    PageRequest, TargetPolicy, same_origin,
};

use crate::{
    DEFAULT_TIMEOUT_MS, Endpoint, HeaderSealer, LinkableModels, MAX_HEADERS, MAX_NAME_CHARS,
    MAX_SERVERS_PER_ORGANIZATION, MAX_TIMEOUT_MS, MAX_URL_CHARS, McpClient, McpServer, McpServerId,
    McpServerPatch, McpServerStore, NewMcpServer, RemoteTool, ToolLink, Toolbox, ToolsCache,
};

const SERVER_LIST: &str = "mcp-servers";
/// How often a change is applied again when other changes keep coming first.
const UPDATE_ATTEMPTS: usize = 8;
/// The longest header value.
const MAX_HEADER_VALUE_CHARS: usize = 8192;
/// Headers the transport sets itself.
const RESERVED_HEADERS: [&str; 9] = [
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "last-event-id",
    "mcp-protocol-version",
    "mcp-session-id",
    "transfer-encoding",
];

/// What the service is built from.
pub struct McpPorts {
    pub store: Arc<dyn McpServerStore>,
    /// The organizations' models, which tools are linked to.
    pub models: Arc<dyn LinkableModels>,
    pub client: Arc<dyn McpClient>,
    pub sealer: Arc<dyn HeaderSealer>,
    pub clock: Arc<dyn Clock>,
    pub cursors: CursorCodec,
    pub policy: TargetPolicy,
}

/// MCP servers of organizations.
#[derive(Clone)]
pub struct McpService {
    store: Arc<dyn McpServerStore>,
    models: Arc<dyn LinkableModels>,
    client: Arc<dyn McpClient>,
    sealer: Arc<dyn HeaderSealer>,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
    policy: TargetPolicy,
}

fn body(field: &str) -> Vec<LocSegment> {
    vec!["body".into(), field.into()]
}

impl McpService {
    pub fn new(ports: McpPorts) -> Self {
        Self {
            store: ports.store,
            models: ports.models,
            client: ports.client,
            sealer: ports.sealer,
            clock: ports.clock,
            cursors: ports.cursors,
            policy: ports.policy,
        }
    }

    /// Registers a server. Its tools are not asked for until they are listed or used.
    pub async fn create(
        &self,
        organization: &OrganizationId,
        actor: &Actor,
        new: NewMcpServer,
    ) -> Result<McpServer, DomainError> {
        let mut errors = Vec::new();
        let name = self.name(&new.name, &mut errors);
        let url = self.url(&new.url, &mut errors);
        let headers = headers(new.headers, &mut errors);
        let allowed_tools = new
            .allowed_tools
            .map(|tools| allow_list(tools, &mut errors));
        let timeout_ms = timeout(new.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS), &mut errors);
        if !errors.is_empty() {
            return Err(DomainError::Validation(errors));
        }
        if self.store.count(organization).await? >= MAX_SERVERS_PER_ORGANIZATION {
            return Err(DomainError::Conflict {
                code: "mcp_server_limit_reached",
                message: format!(
                    "an organization may have at most {MAX_SERVERS_PER_ORGANIZATION} MCP servers; delete one first"
                ),
            });
        }
        let now = self.clock.now();
        let server = McpServer {
            id: McpServerId::generate(),
            organization: organization.clone(),
            name,
            url,
            header_names: headers.iter().map(|(name, _)| name.clone()).collect(),
            headers: self.sealer.seal(&headers),
            allowed_tools,
            timeout_ms,
            tools: None,
            created_by: actor.name().to_owned(),
            created_at: now,
            updated_at: now,
        };
        let audit = actor.record(
            organization,
            "mcp_server.create",
            "mcp_server",
            server.id.as_str(),
            now,
        );
        self.store.insert(&server, &audit).await?;
        Ok(server)
    }

    pub async fn get(
        &self,
        organization: &OrganizationId,
        id: &McpServerId,
    ) -> Result<McpServer, DomainError> {
        self.store
            .get(organization, id)
            .await?
            .ok_or_else(|| DomainError::not_found("MCP server", id))
    }

    /// Newest first.
    pub async fn list(
        &self,
        organization: &OrganizationId,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<McpServer>, DomainError> {
        let after = cursor
            .map(|c| {
                self.cursors
                    .decode::<McpServerId>(SERVER_LIST, organization.as_str(), c)
            })
            .transpose()?;
        let rows = self
            .store
            .list(organization, &PageRequest { limit, after })
            .await?;
        let total = self.store.count(organization).await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |server| {
            self.cursors
                .encode(SERVER_LIST, organization.as_str(), &server.id)
        }))
    }

    /// Applies the change; a new URL or new headers forget the cached tools. A URL of
    /// another origin (scheme, host or port) also drops the stored headers, unless the same
    /// change gives headers again: header values are secrets meant for the origin they were
    /// given with, never shown back, so they do not follow the server to a new one. The
    /// change is applied to the stored server as it is when written (a conditional write
    /// on the `updated_at` read, read again and applied again when another change came
    /// first), so concurrent changes cannot undo one another or mix one's URL with
    /// another's headers.
    pub async fn update(
        &self,
        organization: &OrganizationId,
        actor: &Actor,
        id: &McpServerId,
        patch: McpServerPatch,
    ) -> Result<McpServer, DomainError> {
        let mut errors = Vec::new();
        let name = patch.name.map(|name| self.name(&name, &mut errors));
        let url = patch.url.map(|url| self.url(&url, &mut errors));
        let headers = patch.headers.map(|h| headers(h, &mut errors));
        let allowed_tools = patch
            .allowed_tools
            .map(|tools| tools.map(|tools| allow_list(tools, &mut errors)));
        let timeout_ms = patch.timeout_ms.map(|ms| timeout(ms, &mut errors));
        if !errors.is_empty() {
            return Err(DomainError::Validation(errors));
        }
        let sealed = headers.map(|headers| {
            (
                headers.iter().map(|(name, _)| name.clone()).collect(),
                self.sealer.seal(&headers),
            )
        });
        for _ in 0..UPDATE_ATTEMPTS {
            let read = self.get(organization, id).await?;
            let mut server = read.clone();
            if let Some(name) = &name {
                server.name.clone_from(name);
            }
            if let Some(url) = &url {
                if !same_origin(&server.url, url) && sealed.is_none() {
                    server.header_names = Vec::new();
                    server.headers = self.sealer.seal(&[]);
                }
                server.tools = server.tools.filter(|_| *url == server.url);
                server.url.clone_from(url);
            }
            if let Some((names, sealed)) = &sealed {
                server.header_names.clone_from(names);
                server.headers = sealed.clone();
                server.tools = None;
            }
            if let Some(allowed_tools) = &allowed_tools {
                server.allowed_tools.clone_from(allowed_tools);
            }
            if let Some(timeout_ms) = timeout_ms {
                server.timeout_ms = timeout_ms;
            }
            // Every write moves `updated_at` forward, so a write made on an older read
            // never matches.
            server.updated_at = self
                .clock
                .now()
                .max(read.updated_at + chrono::Duration::microseconds(1));
            let audit = actor.record(
                organization,
                "mcp_server.update",
                "mcp_server",
                id.as_str(),
                server.updated_at,
            );
            if self.store.update(&server, read.updated_at, &audit).await? {
                return Ok(server);
            }
        }
        Err(DomainError::Conflict {
            code: "mcp_server_changed",
            message: format!(
                "MCP server {id} kept changing while this change was applied; send it again"
            ),
        })
    }

    /// Deletes the server and unlinks it from every model.
    pub async fn delete(
        &self,
        organization: &OrganizationId,
        actor: &Actor,
        id: &McpServerId,
    ) -> Result<(), DomainError> {
        let audit = actor.record(
            organization,
            "mcp_server.delete",
            "mcp_server",
            id.as_str(),
            self.clock.now(),
        );
        if !self.store.delete(organization, id, &audit).await? {
            return Err(DomainError::not_found("MCP server", id));
        }
        Ok(())
    }

    /// The server's tools that models may be offered (the allow-list applied), from the
    /// cache unless `refresh` or never listed; the time they were listed.
    pub async fn tools(
        &self,
        organization: &OrganizationId,
        id: &McpServerId,
        refresh: bool,
    ) -> Result<ToolsCache, DomainError> {
        let server = self.get(organization, id).await?;
        let listed = match server.tools.clone() {
            Some(cached) if !refresh => cached,
            _ => self.fetch_tools(&server).await?,
        };
        Ok(ToolsCache {
            tools: listed
                .tools
                .into_iter()
                .filter(|tool| server.allows(&tool.name))
                .collect(),
            fetched_at: listed.fetched_at,
        })
    }

    /// Asks the server for its tools and keeps the answer.
    async fn fetch_tools(&self, server: &McpServer) -> Result<ToolsCache, DomainError> {
        let endpoint = self.endpoint(server)?;
        let tools =
            self.client
                .list_tools(&endpoint)
                .await
                .map_err(|error| DomainError::Unavailable {
                    message: format!("MCP server {}: {error}", server.id),
                })?;
        let fetched_at = self.clock.now();
        self.store
            .save_tools(&server.organization, &server.id, &tools, fetched_at)
            .await?;
        Ok(ToolsCache { tools, fetched_at })
    }

    fn endpoint(&self, server: &McpServer) -> Result<Endpoint, DomainError> {
        let headers = self
            .sealer
            .open(&server.headers)
            .map_err(|error| DomainError::internal(format!("MCP server {}: {error}", server.id)))?;
        Ok(Endpoint {
            url: server.url.clone(),
            headers,
            timeout: Duration::from_millis(server.timeout_ms.into()),
        })
    }

    /// Links the organization's server to its model (the caller has checked the model is
    /// one of the organization's user models); false when they were linked already.
    pub async fn link(
        &self,
        organization: &OrganizationId,
        actor: &Actor,
        model_id: &str,
        server: &McpServerId,
    ) -> Result<(ToolLink, bool), DomainError> {
        self.model(organization, model_id).await?;
        self.get(organization, server).await?;
        let link = ToolLink {
            model_id: model_id.to_owned(),
            server_id: server.clone(),
            created_at: self.clock.now(),
        };
        let audit = actor.record(
            organization,
            "model.tools.link",
            "model",
            model_id,
            link.created_at,
        );
        let created = self.store.link(organization, &link, &audit).await?;
        if created {
            return Ok((link, true));
        }
        let existing = self
            .store
            .links(organization, model_id)
            .await?
            .into_iter()
            .find(|l| &l.server_id == server)
            .unwrap_or(link);
        Ok((existing, false))
    }

    pub async fn unlink(
        &self,
        organization: &OrganizationId,
        actor: &Actor,
        model_id: &str,
        server: &McpServerId,
    ) -> Result<(), DomainError> {
        self.model(organization, model_id).await?;
        let audit = actor.record(
            organization,
            "model.tools.unlink",
            "model",
            model_id,
            self.clock.now(),
        );
        if !self
            .store
            .unlink(organization, model_id, server, &audit)
            .await?
        {
            return Err(DomainError::not_found("tool link", server));
        }
        Ok(())
    }

    /// The model's linked servers, oldest link first.
    pub async fn links(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Vec<ToolLink>, DomainError> {
        self.model(organization, model_id).await?;
        self.store.links(organization, model_id).await
    }

    /// Links name a model of the organization; any other is not found.
    async fn model(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<(), DomainError> {
        if self.models.exists(organization, model_id).await? {
            Ok(())
        } else {
            Err(DomainError::not_found("model", model_id))
        }
    }

    /// The tools the model's servers offer, for one completion. A server that cannot list
    /// its tools is left out (and logged): the completion goes on without them.
    pub async fn toolbox(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Toolbox, DomainError> {
        let mut toolbox = Toolbox::new(self.client.clone());
        for link in self.store.links(organization, model_id).await? {
            let Some(server) = self.store.get(organization, &link.server_id).await? else {
                continue;
            };
            let listed = match server.tools.clone() {
                Some(cached) => cached,
                None => match self.fetch_tools(&server).await {
                    Ok(listed) => listed,
                    Err(error) => {
                        tracing::warn!(server = %server.id, %error, "an MCP server linked to a model could not list its tools; they are not offered");
                        continue;
                    }
                },
            };
            let tools: Vec<RemoteTool> = listed
                .tools
                .into_iter()
                .filter(|tool| server.allows(&tool.name))
                .collect();
            toolbox.add(&server.name, self.endpoint(&server)?, tools);
        }
        Ok(toolbox)
    }

    fn name(&self, name: &str, errors: &mut Vec<FieldError>) -> String {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            errors.push(FieldError::new(
                body("name"),
                format!("1 to {MAX_NAME_CHARS} characters"),
                "value_error",
            ));
        }
        name.to_owned()
    }

    fn url(&self, url: &str, errors: &mut Vec<FieldError>) -> String {
        match self.policy.check(url.trim(), MAX_URL_CHARS) {
            Ok(url) => url.to_string(),
            Err(message) => {
                errors.push(FieldError::new(body("url"), message, "invalid_url"));
                String::new()
            }
        }
    }
}

/// Header names are HTTP tokens the transport does not set itself, each once; values are
/// visible ASCII (and spaces), no line breaks.
fn headers(headers: Vec<(String, String)>, errors: &mut Vec<FieldError>) -> Vec<(String, String)> {
    if headers.len() > MAX_HEADERS {
        errors.push(FieldError::new(
            body("headers"),
            format!("at most {MAX_HEADERS} headers"),
            "too_long",
        ));
    }
    let mut seen: Vec<String> = Vec::new();
    for (name, value) in &headers {
        let loc = || {
            let mut loc = body("headers");
            loc.push(name.as_str().into());
            loc
        };
        let token = !name.is_empty()
            && name.len() <= 100
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        let lower = name.to_ascii_lowercase();
        if !token {
            errors.push(FieldError::new(
                loc(),
                "not a valid header name",
                "value_error",
            ));
        } else if RESERVED_HEADERS.contains(&lower.as_str()) {
            errors.push(FieldError::new(
                loc(),
                "this header is set by the MCP transport itself",
                "value_error",
            ));
        } else if seen.contains(&lower) {
            errors.push(FieldError::new(loc(), "given twice", "value_error"));
        }
        seen.push(lower);
        if value.chars().count() > MAX_HEADER_VALUE_CHARS
            || !value
                .bytes()
                .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
        {
            errors.push(FieldError::new(
                loc(),
                format!(
                    "a header value is at most {MAX_HEADER_VALUE_CHARS} visible ASCII characters, without line breaks"
                ),
                "value_error",
            ));
        }
    }
    headers
}

fn allow_list(tools: Vec<String>, errors: &mut Vec<FieldError>) -> Vec<String> {
    let mut allowed: Vec<String> = Vec::with_capacity(tools.len());
    for (index, tool) in tools.into_iter().enumerate() {
        let tool = tool.trim().to_owned();
        if tool.is_empty() || tool.chars().count() > 128 {
            let mut loc = body("allowedTools");
            loc.push(index.into());
            errors.push(FieldError::new(loc, "1 to 128 characters", "value_error"));
        } else if !allowed.contains(&tool) {
            allowed.push(tool);
        }
    }
    allowed
}

fn timeout(ms: u32, errors: &mut Vec<FieldError>) -> u32 {
    if !(100..=MAX_TIMEOUT_MS).contains(&ms) {
        errors.push(FieldError::new(
            body("timeoutMs"),
            format!("between 100 and {MAX_TIMEOUT_MS} milliseconds"),
            "value_error",
        ));
    }
    ms
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use chrono::Utc;
    use tessera_kernel::ManualClock;

    use super::*;
    use crate::{
        CallError, MockLinkableModels, MockMcpClient, MockMcpServerStore, SealError, SealedHeaders,
    };

    /// Reversible, so tests can see what was sealed (the app seals with AES-GCM).
    struct Reversed;

    impl HeaderSealer for Reversed {
        fn seal(&self, headers: &[(String, String)]) -> SealedHeaders {
            let mut bytes = serde_json::to_vec(headers).unwrap();
            bytes.reverse();
            SealedHeaders(bytes)
        }

        fn open(&self, sealed: &SealedHeaders) -> Result<Vec<(String, String)>, SealError> {
            let mut bytes = sealed.0.clone();
            bytes.reverse();
            serde_json::from_slice(&bytes).map_err(|e| SealError(e.to_string()))
        }
    }

    fn org() -> OrganizationId {
        OrganizationId::generate()
    }

    fn actor() -> Actor {
        Actor::System
    }

    fn service(store: MockMcpServerStore, client: MockMcpClient) -> McpService {
        let mut models = MockLinkableModels::new();
        models
            .expect_exists()
            .returning(|_, model| Ok(model == "mdl_x"));
        McpService::new(McpPorts {
            store: Arc::new(store),
            models: Arc::new(models),
            client: Arc::new(client),
            sealer: Arc::new(Reversed),
            clock: Arc::new(ManualClock::new(Utc::now())),
            cursors: CursorCodec::new([1; 32]),
            policy: TargetPolicy::default(),
        })
    }

    fn tool(name: &str) -> RemoteTool {
        RemoteTool {
            name: name.into(),
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
        }
    }

    fn new_server() -> NewMcpServer {
        NewMcpServer {
            name: " Weather ".into(),
            url: "https://tools.example.com/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer s3cret".into())],
            allowed_tools: None,
            timeout_ms: None,
        }
    }

    fn service_over(store: Arc<dyn McpServerStore>) -> McpService {
        McpService::new(McpPorts {
            store,
            models: Arc::new(MockLinkableModels::new()),
            client: Arc::new(MockMcpClient::new()),
            sealer: Arc::new(Reversed),
            clock: Arc::new(ManualClock::new(Utc::now())),
            cursors: CursorCodec::new([1; 32]),
            policy: TargetPolicy::default(),
        })
    }

    fn url(url: &str) -> McpServerPatch {
        McpServerPatch {
            url: Some(url.into()),
            ..McpServerPatch::default()
        }
    }

    #[tokio::test]
    async fn a_url_of_another_origin_drops_the_headers_unless_they_come_again() {
        let store = Arc::new(crate::memory::InMemoryMcpServerStore::new());
        let service = service_over(store.clone());
        let organization = org();
        let server = service
            .create(&organization, &actor(), new_server())
            .await
            .unwrap();
        let opened = |server: &McpServer| Reversed.open(&server.headers).unwrap();
        let secret = vec![("Authorization".to_owned(), "Bearer s3cret".to_owned())];

        // Same origin (path, query, the scheme's default port written out): kept.
        for same in [
            "https://tools.example.com/v2/mcp",
            "https://TOOLS.example.com:443/mcp?team=a",
        ] {
            let changed = service
                .update(&organization, &actor(), &server.id, url(same))
                .await
                .unwrap();
            assert_eq!(opened(&changed), secret, "{same}");
            assert_eq!(changed.header_names, ["Authorization"]);
        }
        // Another origin with new headers in the same change: those are kept.
        let given = vec![("X-Key".to_owned(), "k2".to_owned())];
        let changed = service
            .update(
                &organization,
                &actor(),
                &server.id,
                McpServerPatch {
                    url: Some("https://other.example.com/mcp".into()),
                    headers: Some(given.clone()),
                    ..McpServerPatch::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(
            (opened(&changed), changed.header_names),
            (given, vec!["X-Key".to_owned()])
        );
        // Another scheme, host or port alone: the headers are gone, stored too.
        for other in [
            "http://other.example.com/mcp",
            "https://evil.example.net/mcp",
            "https://evil.example.net:8443/mcp",
        ] {
            let headers = vec![("Authorization".to_owned(), "Bearer again".to_owned())];
            service
                .update(
                    &organization,
                    &actor(),
                    &server.id,
                    McpServerPatch {
                        headers: Some(headers),
                        ..McpServerPatch::default()
                    },
                )
                .await
                .unwrap();
            let changed = service
                .update(&organization, &actor(), &server.id, url(other))
                .await
                .unwrap();
            assert!(opened(&changed).is_empty(), "{other}");
            assert!(changed.header_names.is_empty());
            let stored = service.get(&organization, &server.id).await.unwrap();
            assert_eq!(stored, changed);
        }
    }

    /// A store where another change lands between the service's read and its write.
    struct Overtaken {
        inner: crate::memory::InMemoryMcpServerStore,
        overtake: Mutex<Option<McpServer>>,
    }

    #[async_trait::async_trait]
    impl McpServerStore for Overtaken {
        async fn insert(
            &self,
            server: &McpServer,
            audit: &tessera_kernel::AuditRecord,
        ) -> Result<(), DomainError> {
            self.inner.insert(server, audit).await
        }
        async fn get(
            &self,
            organization: &OrganizationId,
            id: &McpServerId,
        ) -> Result<Option<McpServer>, DomainError> {
            self.inner.get(organization, id).await
        }
        async fn list(
            &self,
            organization: &OrganizationId,
            page: &PageRequest<McpServerId>,
        ) -> Result<Vec<McpServer>, DomainError> {
            self.inner.list(organization, page).await
        }
        async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
            self.inner.count(organization).await
        }
        async fn update(
            &self,
            server: &McpServer,
            read_at: chrono::DateTime<Utc>,
            audit: &tessera_kernel::AuditRecord,
        ) -> Result<bool, DomainError> {
            let other = self.overtake.lock().unwrap().take();
            if let Some(other) = other {
                assert!(self.inner.update(&other, read_at, audit).await?);
            }
            self.inner.update(server, read_at, audit).await
        }
        async fn save_tools(
            &self,
            organization: &OrganizationId,
            id: &McpServerId,
            tools: &[RemoteTool],
            fetched_at: chrono::DateTime<Utc>,
        ) -> Result<bool, DomainError> {
            self.inner
                .save_tools(organization, id, tools, fetched_at)
                .await
        }
        async fn delete(
            &self,
            organization: &OrganizationId,
            id: &McpServerId,
            audit: &tessera_kernel::AuditRecord,
        ) -> Result<bool, DomainError> {
            self.inner.delete(organization, id, audit).await
        }
        async fn link(
            &self,
            organization: &OrganizationId,
            link: &ToolLink,
            audit: &tessera_kernel::AuditRecord,
        ) -> Result<bool, DomainError> {
            self.inner.link(organization, link, audit).await
        }
        async fn unlink(
            &self,
            organization: &OrganizationId,
            model_id: &str,
            server: &McpServerId,
            audit: &tessera_kernel::AuditRecord,
        ) -> Result<bool, DomainError> {
            self.inner
                .unlink(organization, model_id, server, audit)
                .await
        }
        async fn links(
            &self,
            organization: &OrganizationId,
            model_id: &str,
        ) -> Result<Vec<ToolLink>, DomainError> {
            self.inner.links(organization, model_id).await
        }
    }

    #[tokio::test]
    async fn a_change_overtaken_by_another_is_applied_again_to_what_that_one_stored() {
        let store = Arc::new(Overtaken {
            inner: crate::memory::InMemoryMcpServerStore::new(),
            overtake: Mutex::new(None),
        });
        let service = service_over(store.clone());
        let organization = org();
        let server = service
            .create(&organization, &actor(), new_server())
            .await
            .unwrap();
        // Between this rename's read and its write, another request moved the server to
        // another origin and its headers were dropped.
        *store.overtake.lock().unwrap() = Some(McpServer {
            url: "https://elsewhere.example.net/mcp".into(),
            header_names: Vec::new(),
            headers: Reversed.seal(&[]),
            updated_at: server.updated_at + chrono::Duration::seconds(1),
            ..server.clone()
        });
        let renamed = service
            .update(
                &organization,
                &actor(),
                &server.id,
                McpServerPatch {
                    name: Some("Renamed".into()),
                    ..McpServerPatch::default()
                },
            )
            .await
            .unwrap();
        // Not the old URL and headers written back over the move: the rename on top of it.
        assert_eq!(
            (
                renamed.name.as_str(),
                renamed.url.as_str(),
                renamed.header_names.len()
            ),
            ("Renamed", "https://elsewhere.example.net/mcp", 0)
        );
        assert!(Reversed.open(&renamed.headers).unwrap().is_empty());
        assert_eq!(
            service.get(&organization, &server.id).await.unwrap(),
            renamed
        );
    }

    #[tokio::test]
    async fn registration_seals_header_values_and_keeps_their_names() {
        let mut store = MockMcpServerStore::new();
        store.expect_count().returning(|_| Ok(0));
        let inserted = Arc::new(Mutex::new(None));
        let keep = inserted.clone();
        store.expect_insert().returning(move |server, audit| {
            assert_eq!(audit.action, "mcp_server.create");
            *keep.lock().unwrap() = Some(server.clone());
            Ok(())
        });
        let server = service(store, MockMcpClient::new())
            .create(&org(), &actor(), new_server())
            .await
            .unwrap();
        assert_eq!(server.name, "Weather");
        assert_eq!(server.header_names, ["Authorization"]);
        assert_eq!(server.timeout_ms, DEFAULT_TIMEOUT_MS);
        let stored = inserted.lock().unwrap().clone().unwrap();
        assert!(!format!("{stored:?}").contains("s3cret"));
        assert_eq!(
            Reversed.open(&stored.headers).unwrap(),
            [("Authorization".to_owned(), "Bearer s3cret".to_owned())]
        );
    }

    #[tokio::test]
    async fn bad_registrations_are_located_and_private_targets_refused() {
        let error = service(MockMcpServerStore::new(), MockMcpClient::new())
            .create(
                &org(),
                &actor(),
                NewMcpServer {
                    name: String::new(),
                    url: "http://10.0.0.5/mcp".into(),
                    headers: vec![
                        ("Mcp-Session-Id".into(), "x".into()),
                        ("X-Key".into(), "a\r\nb".into()),
                    ],
                    allowed_tools: Some(vec![" ".into()]),
                    timeout_ms: Some(MAX_TIMEOUT_MS + 1),
                },
            )
            .await
            .unwrap_err();
        let DomainError::Validation(errors) = error else {
            panic!("{error:?}")
        };
        let locs: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        for expected in [
            "body.name",
            "body.url",
            "body.headers.Mcp-Session-Id",
            "body.headers.X-Key",
            "body.allowedTools.0",
            "body.timeoutMs",
        ] {
            assert!(
                locs.iter().any(|l| l.starts_with(&format!("{expected}:"))),
                "{expected} in {locs:?}"
            );
        }
    }

    fn stored(tools: Option<Vec<RemoteTool>>) -> McpServer {
        let now = Utc::now();
        McpServer {
            id: McpServerId::generate(),
            organization: org(),
            name: "Weather".into(),
            url: "https://tools.example.com/mcp".into(),
            header_names: vec!["Authorization".into()],
            headers: Reversed.seal(&[("Authorization".into(), "Bearer s3cret".into())]),
            allowed_tools: Some(vec!["weather".into()]),
            timeout_ms: 1000,
            tools: tools.map(|tools| ToolsCache {
                tools,
                fetched_at: now,
            }),
            created_by: "admin".into(),
            created_at: now,
            updated_at: now,
        }
    }

    #[tokio::test]
    async fn tools_come_from_the_cache_unless_refreshed_and_obey_the_allow_list() {
        let server = stored(Some(vec![tool("weather"), tool("shell")]));
        let id = server.id.clone();
        let mut store = MockMcpServerStore::new();
        let row = server.clone();
        store
            .expect_get()
            .returning(move |_, _| Ok(Some(row.clone())));
        store
            .expect_save_tools()
            .times(1)
            .returning(|_, _, _, _| Ok(true));
        let mut client = MockMcpClient::new();
        client
            .expect_list_tools()
            .times(1)
            .withf(|endpoint| {
                endpoint.headers == [("Authorization".to_owned(), "Bearer s3cret".to_owned())]
            })
            .returning(|_| Ok(vec![tool("weather"), tool("shell"), tool("more")]));
        let service = service(store, client);
        let cached = service.tools(&org(), &id, false).await.unwrap();
        assert_eq!(cached.tools, [tool("weather")]);
        let fresh = service.tools(&org(), &id, true).await.unwrap();
        assert_eq!(fresh.tools, [tool("weather")]);
    }

    #[tokio::test]
    async fn a_server_that_cannot_be_reached_is_unavailable_and_left_out_of_toolboxes() {
        let server = stored(None);
        let id = server.id.clone();
        let mut store = MockMcpServerStore::new();
        let row = server.clone();
        store
            .expect_get()
            .returning(move |_, _| Ok(Some(row.clone())));
        let link = ToolLink {
            model_id: "mdl_x".into(),
            server_id: id.clone(),
            created_at: Utc::now(),
        };
        store
            .expect_links()
            .returning(move |_, _| Ok(vec![link.clone()]));
        let mut client = MockMcpClient::new();
        client
            .expect_list_tools()
            .returning(|_| Err(CallError::Unreachable("connection refused".into())));
        let service = service(store, client);
        let error = service.tools(&org(), &id, false).await.unwrap_err();
        assert!(
            matches!(error, DomainError::Unavailable { .. }),
            "{error:?}"
        );
        assert!(service.toolbox(&org(), "mdl_x").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn links_name_a_model_of_the_organization() {
        // No store call is expected: an unknown model is refused first.
        let service = service(MockMcpServerStore::new(), MockMcpClient::new());
        let server = McpServerId::generate();
        for error in [
            service
                .link(&org(), &actor(), "mdl_gone", &server)
                .await
                .map(|_| ())
                .unwrap_err(),
            service
                .unlink(&org(), &actor(), "mdl_gone", &server)
                .await
                .unwrap_err(),
            service
                .links(&org(), "mdl_gone")
                .await
                .map(|_| ())
                .unwrap_err(),
        ] {
            assert!(
                matches!(
                    error,
                    DomainError::NotFound {
                        resource: "model",
                        ..
                    }
                ),
                "{error:?}"
            );
        }
    }
}
