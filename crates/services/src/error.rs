//! Why the service graph could not be built; each message is one line naming what to fix.

use tessera_kernel::DomainError;
use tessera_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ServicesError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Setup(#[from] tessera_setup::SetupError),
    #[error("cannot create the default organization: {0}")]
    Bootstrap(DomainError),
    #[error("{0}")]
    Knowledge(String),
    #[error("config section `webhooks`: {0}")]
    Webhooks(String),
    #[error("config section `mcp`: {0}")]
    Mcp(String),
    #[error("config section `guardrails`: {0}")]
    Guardrails(String),
    #[error("config key `redis_url`: {0}")]
    Redis(String),
    #[error("config key `redis_ca_file`: {0}")]
    RedisCa(String),
    #[error("cannot load the token counter: {0}")]
    Tokenizer(#[from] tessera_tokenizer::LoadError),
    #[error("cannot seed the system profiles: {0}")]
    Profiles(String),
    #[error("config key `models.catalog_file`: {0}")]
    Catalog(String),
    #[error("cannot recover chats interrupted by the last stop: {0}")]
    Recovery(String),
}
