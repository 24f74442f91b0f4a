//! Usage accounting: one `UsageRecord` per completion (who, which model and base model,
//! which provider, tokens, credits, latency, finish reason) and reports over them: totals
//! and groups by period (hour, day or month in any IANA time zone), model and principal,
//! paged by group key. Pure domain: records are written through the chats store in the
//! transaction that stores the answer, and aggregated by a `UsageStore`, which computes
//! local periods from the UTC offset spans this crate derives (`zone`). `BudgetGuard`
//! compares an organization's spend this month with its monthly credit budget, and a
//! credential's spend in its budget's day, week or month with that budget. The `memory`
//! feature has the store port's in-memory reference, the `contract` feature its contract
//! suite (`usage_store_contract!`) for any implementation.

mod budget;
#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod query;
mod record;
mod service;
mod store;
pub mod zone;

pub use budget::{BudgetGuard, BudgetPeriod, BudgetStatus, Spender, utc_month};
pub use query::{
    Aggregate, GroupKey, GroupQuery, Grouping, OffsetSpan, Period, UsageFilter, UsageGroup,
    UsageTotals,
};
pub use record::{FAILED, Tokens, UsageId, UsageRecord};
pub use service::{MAX_RANGE_DAYS, ReportGroup, UsageReport, UsageRequest, UsageService};
#[cfg(any(test, feature = "mocks"))]
pub use store::MockUsageStore;
pub use store::UsageStore;
