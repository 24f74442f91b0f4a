//! Tools Tessera runs itself during a completion (those of the MCP servers linked to a
//! model), as the chats domain needs them: their specs, to offer the model, and the running
//! of one call, whose every failure is a result the model reads.

use std::sync::Arc;

use async_trait::async_trait;
use tessera_kernel::{DomainError, OrganizationId};
use tessera_models::{ToolCall, ToolSpec};

/// The longest run of tool steps a completion may ask for (`maxToolSteps`).
pub const MAX_TOOL_STEPS: u32 = 32;
/// How many tool steps a completion takes unless it says otherwise.
pub const DEFAULT_TOOL_STEPS: u32 = 8;

/// What one server-run call produced: the text the model is fed back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRun {
    pub content: String,
    /// The tool failed, timed out or could not be called; `content` says why.
    pub is_error: bool,
}

/// The tools one model's servers offer for one completion.
#[async_trait]
pub trait ServerToolbox: Send + Sync {
    fn specs(&self) -> Vec<ToolSpec>;

    /// Runs the call; never fails (a failure is a [`ToolRun`] with `is_error`).
    async fn run(&self, call: &ToolCall) -> ToolRun;
}

/// Where a completion finds the server-run tools of its model.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ServerTools: Send + Sync {
    /// The tools of the servers linked to `model_id` (a user model of the organization, or a
    /// base model, which links none); `None` when there are none.
    async fn toolbox(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<Arc<dyn ServerToolbox>>, DomainError>;
}

/// For deployments without server-run tools.
pub struct NoServerTools;

#[async_trait]
impl ServerTools for NoServerTools {
    async fn toolbox(
        &self,
        _: &OrganizationId,
        _: &str,
    ) -> Result<Option<Arc<dyn ServerToolbox>>, DomainError> {
        Ok(None)
    }
}
