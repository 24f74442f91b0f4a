//! Models: the catalog of base models (declared in a TOML file: provider, provider model
//! name, context window, capabilities, credit multiplier, tier, lifecycle), organizations'
//! user models derived from a base model (own name, system prompt, metadata), the one
//! lifecycle rule both the model endpoints and chats apply, the datasets linked to user models
//! (`rag` or `context`), the `ChatModel` provider port that chats generate through, and the
//! routing of a model over its deployments (retries, fallbacks, timeouts, circuits). Pure domain: persistence through `ModelStore`,
//! system prompts checked through the prompts domain. The `contract` feature exports the
//! `ModelStore` and `DatasetLinkStore` contract suite (`model_store_contract!`) and the
//! `ChatModel` one (`contract::chat_model`).

mod catalog;
#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
mod dataset_links;
mod error;
mod lifecycle;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod model;
mod model_id;
mod provider;
mod providers;
mod resolution;
mod routing;
mod service;
mod store;

pub use catalog::{
    BaseModel, Catalog, CatalogError, DeploymentSettings, JsonSchemaStyle, ModelTier,
    ProviderSettings, TimeoutSettings,
};
pub use dataset_links::{
    CONTEXT_SHARE_PERCENT, DatasetDirectory, DatasetLink, DatasetLinkStore, DatasetLinks,
    DatasetUsage,
};
#[cfg(any(test, feature = "mocks"))]
pub use dataset_links::{MockDatasetDirectory, MockDatasetLinkStore};
pub use error::ModelError;
pub use lifecycle::{LifecycleState, Usability, deprecation_notice, lifecycle_state, usability};
pub use model::{ModelChanges, ModelView, NewUserModel, UserModel};
pub use model_id::ModelId;
#[cfg(any(test, feature = "mocks"))]
pub use provider::MockChatModel;
pub use provider::{
    Capabilities, ChatEvent, ChatMessage, ChatModel, ChatRequest, ChatStream, Completion,
    FinishReason, ImageInput, JsonSchemaFormat, ProviderError, ReasoningEffort, Role, ToolCall,
    ToolChoice, ToolSpec, Usage, complete,
};
pub use providers::{DeploymentHealth, Providers};
pub use resolution::ResolvedModel;
pub use routing::{
    CircuitBoard, CircuitPhase, CircuitPolicy, CircuitState, Deployment, FailedAttempt,
    InProcessCircuits, RetryPolicy, Route, RoutedChatModel, Timeouts,
};
pub use service::{ModelService, NameableModels};
#[cfg(any(test, feature = "mocks"))]
pub use store::MockModelStore;
pub use store::ModelStore;
