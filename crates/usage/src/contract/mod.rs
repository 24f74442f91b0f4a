//! The `UsageStore` contract, for anyone implementing the port: each function checks
//! promises of the trait against a fresh, empty store (a [`UsageStores`]), and
//! [`usage_store_contract!`](crate::usage_store_contract) turns them into tests. Every check
//! also writes its records to an in-memory reference store (`crate::memory`) and compares
//! each answer with the reference's, so a store that strays from the executable contract
//! fails with both answers side by side. Tessera runs it against the in-memory reference
//! (checking the suite against the behaviour it stands for) and both SQL stores.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cached;
mod groups;
mod periods;
mod recording;
mod reference;
mod totals;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use tessera_kernel::{DomainError, OrganizationId, PrincipalKind};

pub use self::{cached::*, groups::*, periods::*, recording::*, reference::*, totals::*};
use crate::{
    Aggregate, GroupKey, GroupQuery, Grouping, OffsetSpan, Period, Tokens, UsageFilter, UsageGroup,
    UsageId, UsageRecord, UsageStore, UsageTotals, memory::InMemoryUsageStore,
};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own store made by `$factory`: an expression that, called with no argument, gives a
/// future of `(stores, guard)`, `stores` a [`UsageStores`](crate::contract::UsageStores)
/// (the guard, e.g. a throwaway database, lives until the test ends).
#[macro_export]
macro_rules! usage_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            totals_are_exact_sums_over_the_filtered_range,
            ungrouped_queries_form_one_group,
            periods_follow_the_time_zone_into_summer_time,
            periods_follow_the_time_zone_out_of_summer_time_and_west_of_utc,
            periods_are_exact_to_the_microsecond,
            groups_by_model_and_user_in_byte_order,
            pages_walk_every_group_once_in_key_order,
            a_message_is_recorded_once,
            cached_answers_are_counted_in_totals_and_groups,
            agrees_with_the_reference_on_seeded_random_records,
        );
    };
}

/// What the checks run on: a usage store over one empty state, and a way to make an
/// organization exist before records refer to it (where foreign keys need it).
#[async_trait]
pub trait UsageStores: Send + Sync {
    fn store(&self) -> Arc<dyn UsageStore>;

    /// Makes the organization `id` (named `name`) exist, e.g. stores it where records refer
    /// to it; nothing for stores that keep no organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);
}

/// The in-memory reference, which keeps no organizations.
#[async_trait]
impl UsageStores for Arc<InMemoryUsageStore> {
    fn store(&self) -> Arc<dyn UsageStore> {
        self.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}
}

// ----- fixture -----

/// The store of one check, and the in-memory reference holding the same records.
struct Fixture<'a> {
    stores: &'a dyn UsageStores,
    store: Arc<dyn UsageStore>,
    reference: InMemoryUsageStore,
}

impl<'a> Fixture<'a> {
    fn new(stores: &'a impl UsageStores) -> Self {
        Self {
            stores,
            store: stores.store(),
            reference: InMemoryUsageStore::new(),
        }
    }

    /// A fresh organization (made to exist first: usage records refer to it).
    async fn organization(&self, name: &str) -> OrganizationId {
        let id = OrganizationId::generate();
        self.stores.organization_exists(&id, name).await;
        id
    }

    /// Records each record in the store and in the reference.
    async fn record(&self, records: &[UsageRecord]) {
        for record in records {
            self.store.record(record).await.unwrap();
            self.reference.record(record).await.unwrap();
        }
    }

    /// The store's answer, checked against the reference's and for inner consistency.
    async fn aggregate(&self, query: &GroupQuery) -> Aggregate {
        let got = self.store.aggregate(query).await.unwrap();
        let expected = self.reference.aggregate(query).await.unwrap();
        assert_eq!(
            got, expected,
            "the store disagrees with the reference on {query:#?}"
        );
        assert_ordered(&got);
        got
    }
}

// ----- records and queries -----

fn utc(text: &str) -> DateTime<Utc> {
    text.parse()
        .unwrap_or_else(|e| panic!("{text} is not an RFC 3339 instant: {e}"))
}

/// A local period start, `YYYY-MM-DD HH:MM`.
fn local(text: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M")
        .unwrap_or_else(|e| panic!("{text} is not a local time: {e}"))
}

/// A unique message id.
fn message_id() -> String {
    UsageId::generate().as_str().replacen("usg_", "msg_", 1)
}

/// A completion of alice's with model `gpt-4o` in chat `cht_one` at `at`, of `input` tokens
/// (the other figures derive from it).
pub fn record(organization: &OrganizationId, at: &str, input: u64) -> UsageRecord {
    let tokens = Tokens {
        input,
        output: 2 * input + 1,
        reasoning: input % 7,
        cached_input: input / 3,
    };
    UsageRecord {
        id: UsageId::generate(),
        organization_id: organization.clone(),
        principal: "alice".to_owned(),
        principal_kind: PrincipalKind::User,
        chat_id: "cht_one".to_owned(),
        message_id: message_id(),
        model_id: "gpt-4o".to_owned(),
        parent_model_id: "openai/gpt-4o".to_owned(),
        provider: "openai".to_owned(),
        credits: tokens.credits(2),
        tokens,
        latency_ms: 450,
        finish_reason: "stop".to_owned(),
        created_at: utc(at),
        cached: false,
    }
}

/// The same record of another model, principal and chat.
fn of(model: &str, user: &str, chat: &str, record: UsageRecord) -> UsageRecord {
    UsageRecord {
        model_id: model.to_owned(),
        principal: user.to_owned(),
        chat_id: chat.to_owned(),
        ..record
    }
}

/// Sums over `records`, computed here (not by any store).
pub fn sum<'a>(records: impl IntoIterator<Item = &'a UsageRecord>) -> UsageTotals {
    let mut totals = UsageTotals::default();
    for r in records {
        totals.input_tokens += r.tokens.input;
        totals.output_tokens += r.tokens.output;
        totals.reasoning_tokens += r.tokens.reasoning;
        totals.cached_input_tokens += r.tokens.cached_input;
        totals.total_tokens += r.tokens.input + r.tokens.output;
        totals.credits += r.credits;
        totals.requests += 1;
        totals.cached_requests += u64::from(r.cached);
    }
    totals
}

/// A zone's UTC offsets, written out (not derived with chrono-tz, as `crate::zone` does): the
/// offset before the first listed change, and the changes (instant, new offset).
struct Zone {
    name: &'static str,
    initial: i32,
    changes: &'static [(&'static str, i32)],
}

const UTC: Zone = Zone {
    name: "UTC",
    initial: 0,
    changes: &[],
};

/// Europe/Berlin, 2025 to 2027.
const BERLIN: Zone = Zone {
    name: "Europe/Berlin",
    initial: 3600,
    changes: &[
        ("2025-03-30T01:00:00Z", 7200),
        ("2025-10-26T01:00:00Z", 3600),
        ("2026-03-29T01:00:00Z", 7200),
        ("2026-10-25T01:00:00Z", 3600),
        ("2027-03-28T01:00:00Z", 7200),
        ("2027-10-31T01:00:00Z", 3600),
    ],
};

/// America/New_York in 2026 (west of UTC: negative offsets).
const NEW_YORK: Zone = Zone {
    name: "America/New_York",
    initial: -18000,
    changes: &[
        ("2026-03-08T07:00:00Z", -14400),
        ("2026-11-01T06:00:00Z", -18000),
    ],
};

const KOLKATA: Zone = Zone {
    name: "Asia/Kolkata",
    initial: 19800,
    changes: &[],
};

const KATHMANDU: Zone = Zone {
    name: "Asia/Kathmandu",
    initial: 20700,
    changes: &[],
};

const MARQUESAS: Zone = Zone {
    name: "Pacific/Marquesas",
    initial: -34200,
    changes: &[],
};

/// The offset spans of `zone` over `from..to`, as `crate::zone::offset_spans`
/// computes them: the first at `from`, then one per change strictly inside the range.
fn spans(zone: &Zone, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<OffsetSpan> {
    let mut initial = zone.initial;
    for (at, offset) in zone.changes {
        if utc(at) <= from {
            initial = *offset;
        }
    }
    let mut spans = vec![OffsetSpan {
        since: from,
        offset_seconds: initial,
    }];
    for (at, offset) in zone.changes {
        let at = utc(at);
        if at > from && at < to {
            spans.push(OffsetSpan {
                since: at,
                offset_seconds: *offset,
            });
        }
    }
    spans
}

/// Every record of `organization` from `from` (inclusive) to `to` (exclusive), in UTC, not
/// grouped, all groups on one page.
pub fn query(organization: &OrganizationId, from: &str, to: &str) -> GroupQuery {
    let (from, to) = (utc(from), utc(to));
    GroupQuery {
        filter: UsageFilter {
            organization: organization.clone(),
            from,
            to,
            model_id: None,
            user_id: None,
            chat_id: None,
        },
        grouping: Grouping::default(),
        offsets: spans(&UTC, from, to),
        after: None,
        limit: 1_000,
    }
}

fn grouped(query: GroupQuery, period: Option<Period>, model: bool, user: bool) -> GroupQuery {
    GroupQuery {
        grouping: Grouping {
            period,
            model,
            user,
        },
        ..query
    }
}

fn in_zone(query: GroupQuery, zone: &Zone) -> GroupQuery {
    let offsets = spans(zone, query.filter.from, query.filter.to);
    GroupQuery { offsets, ..query }
}

fn filtered(
    query: GroupQuery,
    model: Option<&str>,
    user: Option<&str>,
    chat: Option<&str>,
) -> GroupQuery {
    GroupQuery {
        filter: UsageFilter {
            model_id: model.map(str::to_owned),
            user_id: user.map(str::to_owned),
            chat_id: chat.map(str::to_owned),
            ..query.filter
        },
        ..query
    }
}

fn key(period: Option<&str>, model: Option<&str>, user: Option<&str>) -> GroupKey {
    GroupKey {
        period: period.map(local),
        model_id: model.map(str::to_owned),
        user_id: user.map(str::to_owned),
    }
}

/// The key of the single group an ungrouped query forms.
fn everything() -> GroupKey {
    key(None, None, None)
}

/// Each group as (key, requests, input tokens): the inputs of the hand-written tests are
/// powers of two, so the input sum names the group's records.
fn shape(aggregate: &Aggregate) -> Vec<(GroupKey, u64, u64)> {
    aggregate
        .groups
        .iter()
        .map(|g| (g.key.clone(), g.totals.requests, g.totals.input_tokens))
        .collect()
}

/// Groups come in strictly increasing key order.
fn assert_ordered(aggregate: &Aggregate) {
    for pair in aggregate.groups.windows(2) {
        assert!(
            pair[0].key < pair[1].key,
            "{:?} before {:?}",
            pair[0].key,
            pair[1].key
        );
    }
}

/// A complete answer: every group on the page, and the groups add up to the totals.
fn assert_complete(aggregate: &Aggregate) {
    assert_eq!(aggregate.group_count, aggregate.groups.len() as u64);
    let mut added = UsageTotals::default();
    for group in &aggregate.groups {
        added.add(&group.totals);
    }
    assert_eq!(added, aggregate.totals, "the groups add up to the totals");
}

/// Walks every group of `query` with pages of `limit`, checking each page.
async fn walk(f: &Fixture<'_>, query: &GroupQuery, limit: u32) -> (Vec<UsageGroup>, Vec<usize>) {
    let whole = f
        .aggregate(&GroupQuery {
            after: None,
            limit: 1_000,
            ..query.clone()
        })
        .await;
    let mut seen: Vec<UsageGroup> = Vec::new();
    let mut sizes = Vec::new();
    let mut after: Option<GroupKey> = None;
    loop {
        let page = f
            .aggregate(&GroupQuery {
                after: after.clone(),
                limit,
                ..query.clone()
            })
            .await;
        assert_eq!(page.totals, whole.totals, "every page has the totals");
        assert_eq!(page.group_count, whole.group_count, "and the group count");
        assert!(page.groups.len() <= limit as usize);
        if let (Some(after), Some(first)) = (&after, page.groups.first()) {
            assert!(&first.key > after, "strictly after the cursor");
        }
        sizes.push(page.groups.len());
        let Some(last) = page.groups.last() else {
            break;
        };
        after = Some(last.key.clone());
        seen.extend(page.groups);
    }
    assert_eq!(seen, whole.groups, "every group once, in key order");
    assert_eq!(seen.len() as u64, whole.group_count);
    (seen, sizes)
}
