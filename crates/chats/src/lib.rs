//! Chats: conversations of one principal with a model, their stored messages, and the
//! orchestration of a completion: the model snapshot a chat keeps, message validation
//! (roles, tool-call round trips), attached files (documents inlined, images to vision
//! models, through the `AttachmentSource` port), the context window (oldest-first truncation
//! by exact token count), retrieval through the `Retriever` port (which passages the model
//! reads, and how much of its window they take, decided here), structured-output validation,
//! and generation as a background task whose events are replayed to any number of listeners
//! (`GenerationHub`), plans and credit budgets through the `Admission` port, stateless
//! completions that keep only their usage record, and the tool steps of a completion whose
//! model calls tools Tessera runs itself (the `ServerTools` port: MCP servers linked to the
//! model), each step stored and billed, and a chat's related objects for readers
//! (`ChatRelations`: its model now, its system prompt as composed at its creation), and the
//! guardrails of every completion (`GuardrailSource`: texts checked, masked or pseudonymised
//! before the provider reads them, answers restored and checked before the client does). Pure
//! domain on narrow ports: models through `ModelResolver`, system prompts through
//! `SystemPromptSource`, persistence through
//! `ChatStore`, generation liveness through `GenerationLeases`, generation through the models
//! domain's `ChatModel` port; the caller runs the generation future on its runtime. The
//! `memory` feature has the store ports' in-memory reference, the `contract` feature their
//! contract suite (`chat_store_contract!`) for any implementation.

mod admission;
mod artifact;
mod artifact_service;
mod artifacts;
mod attachment;
mod caller;
mod chat;
mod context;
#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
mod error;
mod guardrails;
mod hub;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod model_resolver;
mod related;
mod response_cache;
mod retriever;
mod satisfiable;
mod server_tools;
mod service;
mod store;
mod system_prompts;
mod validate;

pub use admission::{
    Admission, Admitted, CredentialLimits, CredentialLimitsSource, CreditQuotas, FixedPlan,
    PlanSource, PlansAndBudgets, Spends,
};
#[cfg(any(test, feature = "mocks"))]
pub use admission::{MockAdmission, MockPlanSource};
#[cfg(any(test, feature = "mocks"))]
pub use artifact::MockArtifactStore;
pub use artifact::{Artifact, ArtifactFilter, ArtifactId, ArtifactStore, versioned};
pub use artifact_service::ArtifactService;
pub use artifacts::{ArtifactKind, ExtractedArtifact, extract_artifacts};
#[cfg(any(test, feature = "mocks"))]
pub use attachment::MockAttachmentSource;
pub use attachment::{
    Attachment, AttachmentContent, AttachmentError, AttachmentKind, AttachmentSource,
    CHARS_PER_TOKEN_BOUND, MAX_ATTACHMENTS, NoAttachments, ResolvedAttachment, image,
};
pub use chat::{
    Chat, ChatId, ChatRecord, ChatStatus, Continuation, MAX_TITLE_CHARS, Message, MessageId,
    MessageUsage, ModelSnapshot, NewMessage, Source, SourceLocation, derive_title,
};
pub use context::{ContextOverflow, Fitted, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, fit};
pub use error::{BudgetSpent, CANCELLED, ChatError, CredentialBudgetSpent, INTERRUPTED};
pub use guardrails::{GuardrailSource, NoGuardrails};
pub use hub::{Attached, EventStream, GenerationEvent, GenerationHub, ToolResult, final_event};
#[cfg(any(test, feature = "mocks"))]
pub use model_resolver::MockModelResolver;
pub use model_resolver::ModelResolver;
pub use related::{ChatRelations, Compositions, Expansion, Related, RelatedModel, RelatedModels};
#[cfg(any(test, feature = "mocks"))]
pub use related::{MockCompositions, MockRelatedModels};
pub use response_cache::{CacheDirectives, CacheStatus, ResponseCache};
#[cfg(any(test, feature = "mocks"))]
pub use retriever::MockRetriever;
pub use retriever::{
    FileSearch, MAX_FILE_SEARCH_RESULTS, NoRetrieval, RAG_PASSAGES, RAG_SHARE_PERCENT,
    RetrievalQuery, Retrieved, Retriever, select, with_sources,
};
#[cfg(any(test, feature = "mocks"))]
pub use server_tools::MockServerTools;
pub use server_tools::{
    DEFAULT_TOOL_STEPS, MAX_TOOL_STEPS, NoServerTools, ServerToolbox, ServerTools, ToolRun,
};
pub use service::{
    AnswerCancellation, ChatPorts, ChatService, ChatStored, CompletionRequest, Started,
};
pub use store::{ChatFilter, ChatStore, FinishedTurn, GenerationLeases};
#[cfg(any(test, feature = "mocks"))]
pub use store::{MockChatStore, MockGenerationLeases};
#[cfg(any(test, feature = "mocks"))]
pub use system_prompts::MockSystemPromptSource;
pub use system_prompts::{NoSystemPrompts, SystemPromptSource};
pub use validate::{check_schema, conformance_errors};
