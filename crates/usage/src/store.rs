use async_trait::async_trait;
use tessera_kernel::DomainError;

use crate::{Aggregate, GroupQuery, UsageRecord};

/// Persistence and aggregation of usage records. Completions write their record through
/// the chats store, in the transaction that stores the answer; `record` is for writers
/// outside a chat's transaction.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait UsageStore: Send + Sync {
    /// Stores a record; a second record for the same message is a conflict.
    async fn record(&self, record: &UsageRecord) -> Result<(), DomainError>;

    /// Totals, group count and one page of groups of the records `query` selects, computed
    /// by the database.
    async fn aggregate(&self, query: &GroupQuery) -> Result<Aggregate, DomainError>;
}
