//! The system prompts models name by id: the port through which a new chat takes the text
//! of its model's prompt, and its implementation over the prompts domain's service.

use async_trait::async_trait;
use tessera_kernel::{DomainError, OrganizationId};
use tessera_prompts::{PromptService, SystemPromptId};

/// Gives the text of a system prompt as of now. A service without composed prompts may
/// implement it over its own texts, or use [`NoSystemPrompts`] when models carry their
/// prompt inline.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait SystemPromptSource: Send + Sync {
    /// The prompt's text; `None` when it composes to nothing.
    async fn text(
        &self,
        organization: &OrganizationId,
        id: &SystemPromptId,
    ) -> Result<Option<String>, DomainError>;
}

#[async_trait]
impl SystemPromptSource for PromptService {
    async fn text(
        &self,
        organization: &OrganizationId,
        id: &SystemPromptId,
    ) -> Result<Option<String>, DomainError> {
        let composition = self.compose(organization, id, None).await?;
        Ok(Some(composition.text).filter(|text| !text.is_empty()))
    }
}

/// For services whose models never name a system prompt by id: one that does is refused
/// as not found rather than answered without its prompt.
#[derive(Debug, Clone, Copy)]
pub struct NoSystemPrompts;

#[async_trait]
impl SystemPromptSource for NoSystemPrompts {
    async fn text(
        &self,
        _: &OrganizationId,
        id: &SystemPromptId,
    ) -> Result<Option<String>, DomainError> {
        Err(DomainError::not_found("system prompt", id))
    }
}
