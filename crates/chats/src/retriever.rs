use async_trait::async_trait;
use tessera_kernel::{DomainError, OrganizationId};

use crate::Source;

/// Finds passages relevant to a question in the datasets linked to a model (RAG). The
/// knowledge domain implements it; without datasets nothing is retrieved.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Retriever: Send + Sync {
    /// Passages for `query`, best first, from what `model_id` is linked to.
    async fn retrieve(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        query: &str,
    ) -> Result<Vec<Source>, DomainError>;
}

/// Retrieval for deployments (and models) without datasets.
pub struct NoRetrieval;

#[async_trait]
impl Retriever for NoRetrieval {
    async fn retrieve(
        &self,
        _: &OrganizationId,
        _: &str,
        _: &str,
    ) -> Result<Vec<Source>, DomainError> {
        Ok(Vec::new())
    }
}

/// The system prompt with retrieved passages appended as numbered context.
pub fn with_sources(system: Option<String>, sources: &[Source]) -> Option<String> {
    if sources.is_empty() {
        return system;
    }
    let mut text = system.unwrap_or_default();
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str("Answer using the following context passages when they are relevant.\n");
    for (index, source) in sources.iter().enumerate() {
        let title = source.title.as_deref().unwrap_or(&source.file_id);
        text.push_str(&format!(
            "\n[{}] {}\n{}\n",
            index + 1,
            title,
            source.text.trim()
        ));
    }
    Some(text)
}
