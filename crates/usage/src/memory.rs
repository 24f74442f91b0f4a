//! The in-memory reference `UsageStore`: the executable statement of the port's contract
//! (the SQL adapters are tested against the same suite).

use std::sync::Mutex;

use async_trait::async_trait;
use chrono::Duration;
use std::collections::BTreeMap;
use tessera_kernel::DomainError;

use crate::{Aggregate, GroupKey, GroupQuery, UsageGroup, UsageRecord, UsageStore, UsageTotals};

#[derive(Default)]
pub struct InMemoryUsageStore {
    records: Mutex<Vec<UsageRecord>>,
}

impl InMemoryUsageStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every record kept, in the order they came.
    pub fn all(&self) -> Vec<UsageRecord> {
        self.records().clone()
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Vec<UsageRecord>> {
        self.records
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The sums one record contributes.
pub fn totals_of(record: &UsageRecord) -> UsageTotals {
    UsageTotals {
        input_tokens: record.tokens.input,
        output_tokens: record.tokens.output,
        reasoning_tokens: record.tokens.reasoning,
        cached_input_tokens: record.tokens.cached_input,
        total_tokens: record.tokens.total(),
        credits: record.credits,
        requests: 1,
        cached_requests: u64::from(record.cached),
    }
}

#[async_trait]
impl UsageStore for InMemoryUsageStore {
    async fn record(&self, record: &UsageRecord) -> Result<(), DomainError> {
        let mut records = self.records();
        if records
            .iter()
            .any(|r| r.id == record.id || r.message_id == record.message_id)
        {
            return Err(DomainError::Conflict {
                code: "already_exists",
                message: format!("usage of message {} is already recorded", record.message_id),
            });
        }
        records.push(record.clone());
        Ok(())
    }

    async fn aggregate(&self, query: &GroupQuery) -> Result<Aggregate, DomainError> {
        let filter = &query.filter;
        let mut groups: BTreeMap<GroupKey, UsageTotals> = BTreeMap::new();
        for record in self.records().iter().filter(|r| {
            r.organization_id == filter.organization
                && r.created_at >= filter.from
                && r.created_at < filter.to
                && filter.model_id.as_ref().is_none_or(|m| *m == r.model_id)
                && filter.user_id.as_ref().is_none_or(|u| *u == r.principal)
                && filter.chat_id.as_ref().is_none_or(|c| *c == r.chat_id)
        }) {
            let offset = query
                .offsets
                .iter()
                .rev()
                .find(|span| span.since <= record.created_at)
                .map_or(0, |span| span.offset_seconds);
            let local = record.created_at.naive_utc() + Duration::seconds(offset.into());
            let key = GroupKey {
                period: query.grouping.period.map(|period| period.start(local)),
                model_id: query.grouping.model.then(|| record.model_id.clone()),
                user_id: query.grouping.user.then(|| record.principal.clone()),
            };
            groups.entry(key).or_default().add(&totals_of(record));
        }
        let mut totals = UsageTotals::default();
        groups.values().for_each(|group| totals.add(group));
        Ok(Aggregate {
            totals,
            group_count: groups.len() as u64,
            groups: groups
                .into_iter()
                .filter(|(key, _)| query.after.as_ref().is_none_or(|after| key > after))
                .take(query.limit as usize)
                .map(|(key, totals)| UsageGroup { key, totals })
                .collect(),
        })
    }
}
