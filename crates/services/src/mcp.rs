//! MCP servers wired into the service: the header sealer (AES-256-GCM under the configured
//! key), the MCP client, the organizations' models that links name, and the bridge that lets
//! completions run the tools of the servers linked to their model.

use std::sync::Arc;

use async_trait::async_trait;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use tessera_chats::{ServerToolbox, ServerTools, ToolRun};
use tessera_kernel::{Clock, CursorCodec, DomainError, OrganizationId, TargetPolicy};
use tessera_mcp::{
    HeaderSealer, LinkableModels, McpPorts, McpService, SealError, SealedHeaders, ServerCall,
    Toolbox,
};
use tessera_models::{ModelError, ModelId, ModelService, ToolCall, ToolSpec};
use tessera_setup::config::Settings;
use tessera_store::Database;

/// Seals header values with AES-256-GCM: a random nonce, then the ciphertext of their JSON
/// with its tag.
pub struct AeadSealer {
    key: LessSafeKey,
}

impl AeadSealer {
    pub fn new(key: [u8; 32]) -> Self {
        let key = UnboundKey::new(&AES_256_GCM, &key)
            .unwrap_or_else(|_| unreachable!("a 32-byte key is always an AES-256 key"));
        Self {
            key: LessSafeKey::new(key),
        }
    }
}

impl HeaderSealer for AeadSealer {
    fn seal(&self, headers: &[(String, String)]) -> SealedHeaders {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let mut sealed = serde_json::to_vec(headers).unwrap_or_default();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::empty(),
                &mut sealed,
            )
            .unwrap_or_else(|_| unreachable!("AES-GCM seals any input of this size"));
        let mut out = nonce.to_vec();
        out.extend(sealed);
        SealedHeaders(out)
    }

    fn open(&self, sealed: &SealedHeaders) -> Result<Vec<(String, String)>, SealError> {
        if sealed.0.len() < NONCE_LEN {
            return Err(SealError("too short".into()));
        }
        let (nonce, data) = sealed.0.split_at(NONCE_LEN);
        let nonce =
            Nonce::try_assume_unique_for_key(nonce).map_err(|_| SealError("bad nonce".into()))?;
        let mut data = data.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::empty(), &mut data)
            .map_err(|_| SealError("another key sealed them, or they were altered".into()))?;
        serde_json::from_slice(plain).map_err(|e| SealError(e.to_string()))
    }
}

/// The MCP servers service for these settings; tools are linked to `models`.
pub fn build(
    settings: &Settings,
    database: &Database,
    models: ModelService,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
) -> Result<McpService, String> {
    let policy = TargetPolicy {
        allow_private_targets: settings.mcp.allow_private_targets,
    };
    let client = tessera_mcp_http::HttpMcpClient::new(policy).map_err(|e| e.to_string())?;
    Ok(McpService::new(McpPorts {
        store: Arc::new(tessera_store::SqlMcpServerStore::new(database.clone())),
        models: Arc::new(OrganizationModels(models)),
        client: Arc::new(client),
        sealer: Arc::new(AeadSealer::new(tessera_setup::secrets::mcp_header_key(
            settings,
        )?)),
        clock,
        cursors,
        policy,
    }))
}

/// The organizations' own models, as the MCP domain links tools to them.
struct OrganizationModels(ModelService);

#[async_trait]
impl LinkableModels for OrganizationModels {
    async fn exists(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<bool, DomainError> {
        let Ok(id) = model_id.parse::<ModelId>() else {
            return Ok(false);
        };
        match self.0.get(organization, &id).await {
            Ok(_) => Ok(true),
            Err(ModelError::NotFound(_)) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }
}

/// Completions run the tools of the MCP servers linked to their (user) model.
pub struct LinkedServerTools(pub McpService);

#[async_trait]
impl ServerTools for LinkedServerTools {
    async fn toolbox(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<Arc<dyn ServerToolbox>>, DomainError> {
        // Base models link nothing: no query for them.
        if model_id.parse::<ModelId>().is_err() {
            return Ok(None);
        }
        let toolbox = self.0.toolbox(organization, model_id).await?;
        Ok((!toolbox.is_empty()).then(|| Arc::new(McpToolbox(toolbox)) as Arc<dyn ServerToolbox>))
    }
}

struct McpToolbox(Toolbox);

#[async_trait]
impl ServerToolbox for McpToolbox {
    fn specs(&self) -> Vec<ToolSpec> {
        self.0
            .tools()
            .map(|tool| ToolSpec {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: tool.input_schema.clone(),
            })
            .collect()
    }

    async fn run(&self, call: &ToolCall) -> ToolRun {
        let result = self
            .0
            .run(&ServerCall {
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            })
            .await;
        ToolRun {
            content: result.content,
            is_error: result.is_error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_headers_open_only_under_their_key() {
        let headers = vec![("Authorization".to_owned(), "Bearer s3cret".to_owned())];
        let sealer = AeadSealer::new([7; 32]);
        let sealed = sealer.seal(&headers);
        assert!(!sealed.0.windows(6).any(|w| w == b"s3cret"));
        assert_eq!(sealer.open(&sealed).unwrap(), headers);
        assert_ne!(sealer.seal(&headers), sealed, "a fresh nonce each time");
        assert!(AeadSealer::new([8; 32]).open(&sealed).is_err());
        let mut altered = sealed.clone();
        *altered.0.last_mut().unwrap() ^= 1;
        assert!(sealer.open(&altered).is_err());
    }
}
