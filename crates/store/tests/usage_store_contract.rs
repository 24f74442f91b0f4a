//! The `UsageStore` contract, run against every adapter: SQLite and PostgreSQL, and the
//! in-memory reference (`tessera_usage::memory`) so that the suite itself is checked against
//! the behaviour it stands for. Every test also writes its records to a second, in-memory
//! reference store and compares each answer with the reference's, so a SQL adapter that
//! strays from the executable contract fails with both answers side by side.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use tessera_kernel::{DomainError, OrganizationId, PrincipalKind};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_store::{Backend, SqlOrganizationStore, SqlUsageStore, testing::TestDatabase};
use tessera_usage::{
    Aggregate, GroupKey, GroupQuery, Grouping, OffsetSpan, Period, Tokens, UsageFilter, UsageGroup,
    UsageId, UsageRecord, UsageStore, UsageTotals, memory::InMemoryUsageStore,
};

// ----- fixture -----

/// Where a contract test runs.
enum Target {
    Database(Backend),
    Memory,
}

impl From<Backend> for Target {
    fn from(backend: Backend) -> Self {
        Target::Database(backend)
    }
}

/// A usage store over one empty database (or one in-memory state), and the in-memory
/// reference holding the same records.
struct Fixture {
    store: Arc<dyn UsageStore>,
    reference: InMemoryUsageStore,
    db: Option<TestDatabase>,
}

impl Fixture {
    async fn new(target: impl Into<Target>) -> Self {
        match target.into() {
            Target::Database(backend) => {
                let db = TestDatabase::of(backend).await;
                Self {
                    store: Arc::new(SqlUsageStore::new(db.database.clone())),
                    reference: InMemoryUsageStore::new(),
                    db: Some(db),
                }
            }
            Target::Memory => Self {
                store: Arc::new(InMemoryUsageStore::new()),
                reference: InMemoryUsageStore::new(),
                db: None,
            },
        }
    }

    /// A fresh organization (stored first: usage records refer to it).
    async fn organization(&self, name: &str) -> OrganizationId {
        let org = Organization {
            id: OrganizationId::generate(),
            name: name.to_owned(),
            plan: Plan::Pro,
            created_at: utc("2026-01-01T00:00:00Z"),
            updated_at: utc("2026-01-01T00:00:00Z"),
        };
        if let Some(db) = &self.db {
            SqlOrganizationStore::new(db.database.clone())
                .insert(&org, &[])
                .await
                .unwrap();
        }
        org.id
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
fn record(organization: &OrganizationId, at: &str, input: u64) -> UsageRecord {
    let tokens = Tokens {
        input,
        output: 2 * input + 1,
        reasoning: input % 7,
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
fn sum<'a>(records: impl IntoIterator<Item = &'a UsageRecord>) -> UsageTotals {
    let mut totals = UsageTotals::default();
    for r in records {
        totals.input_tokens += r.tokens.input;
        totals.output_tokens += r.tokens.output;
        totals.reasoning_tokens += r.tokens.reasoning;
        totals.total_tokens += r.tokens.input + r.tokens.output;
        totals.credits += r.credits;
        totals.requests += 1;
    }
    totals
}

/// A zone's UTC offsets (chrono-tz is not a dependency of this crate): the offset before
/// the first listed change, and the changes (instant, new offset).
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

/// The offset spans of `zone` over `from..to`, as `tessera_usage::zone::offset_spans`
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
fn query(organization: &OrganizationId, from: &str, to: &str) -> GroupQuery {
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

// ----- totals and filters -----

async fn totals_are_exact_sums_over_the_filtered_range(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let r = [
        // At `from` exactly: in.
        record(&acme, "2026-05-01T00:00:00Z", 1),
        of(
            "Zeta",
            "Bob",
            "cht_two",
            record(&acme, "2026-05-10T12:34:56.789012Z", 2),
        ),
        // Just before `to`: in.
        of(
            "gpt-4o",
            "Bob",
            "cht_one",
            record(&acme, "2026-05-31T23:59:59.999999Z", 4),
        ),
        // At `to` exactly and just before `from`: out.
        record(&acme, "2026-06-01T00:00:00Z", 8),
        record(&acme, "2026-04-30T23:59:59.999999Z", 16),
        of(
            "ümodel",
            "alice",
            "cht_two",
            record(&acme, "2026-05-15T08:00:00Z", 32),
        ),
        // Beyond 32-bit sums.
        of(
            "gpt-4o",
            "alice",
            "cht_three",
            record(&acme, "2026-05-20T00:00:00Z", 1 << 33),
        ),
        // Another organization's, same names.
        record(&globex, "2026-05-10T00:00:00Z", 64),
    ];
    f.record(&r).await;
    let may = || query(&acme, "2026-05-01T00:00:00Z", "2026-06-01T00:00:00Z");
    let cases: Vec<(&str, GroupQuery, Vec<usize>)> = vec![
        ("all", may(), vec![0, 1, 2, 5, 6]),
        (
            "gpt-4o",
            filtered(may(), Some("gpt-4o"), None, None),
            vec![0, 2, 6],
        ),
        ("Zeta", filtered(may(), Some("Zeta"), None, None), vec![1]),
        (
            "unknown model",
            filtered(may(), Some("gpt"), None, None),
            vec![],
        ),
        ("Bob", filtered(may(), None, Some("Bob"), None), vec![1, 2]),
        (
            "alice",
            filtered(may(), None, Some("alice"), None),
            vec![0, 5, 6],
        ),
        ("bob", filtered(may(), None, Some("bob"), None), vec![]),
        (
            "cht_one",
            filtered(may(), None, None, Some("cht_one")),
            vec![0, 2],
        ),
        (
            "cht_two",
            filtered(may(), None, None, Some("cht_two")),
            vec![1, 5],
        ),
        (
            "gpt-4o of Bob",
            filtered(may(), Some("gpt-4o"), Some("Bob"), None),
            vec![2],
        ),
        (
            "gpt-4o of alice in cht_three",
            filtered(may(), Some("gpt-4o"), Some("alice"), Some("cht_three")),
            vec![6],
        ),
        (
            "Zeta in cht_one",
            filtered(may(), Some("Zeta"), None, Some("cht_one")),
            vec![],
        ),
        (
            "from a record (inclusive) to a record (exclusive)",
            query(&acme, "2026-05-10T12:34:56.789012Z", "2026-05-20T00:00:00Z"),
            vec![1, 5],
        ),
        (
            "one microsecond",
            query(&acme, "2026-05-31T23:59:59.999999Z", "2026-06-01T00:00:00Z"),
            vec![2],
        ),
        (
            "the wider range",
            query(&acme, "2026-04-01T00:00:00Z", "2026-07-01T00:00:00Z"),
            vec![0, 1, 2, 3, 4, 5, 6],
        ),
        (
            "globex",
            query(&globex, "2026-05-01T00:00:00Z", "2026-06-01T00:00:00Z"),
            vec![7],
        ),
        (
            "an organization without records",
            query(
                &OrganizationId::generate(),
                "2026-05-01T00:00:00Z",
                "2026-06-01T00:00:00Z",
            ),
            vec![],
        ),
    ];
    for (case, query, members) in &cases {
        let got = f.aggregate(query).await;
        let expected = sum(members.iter().map(|&i| &r[i]));
        assert_eq!(got.totals, expected, "{case}");
        assert_eq!(got.totals.requests, members.len() as u64, "{case}");
        // Ungrouped: the records form one group, or none.
        let groups: Vec<UsageGroup> = if members.is_empty() {
            Vec::new()
        } else {
            vec![UsageGroup {
                key: everything(),
                totals: expected,
            }]
        };
        assert_eq!(got.groups, groups, "{case}");
        assert_eq!(got.group_count, groups.len() as u64, "{case}");
    }

    // Concrete figures for the whole month (the derived ones written out).
    let all = f.aggregate(&may()).await.totals;
    assert_eq!(
        all,
        UsageTotals {
            input_tokens: 39 + (1 << 33),
            output_tokens: (2 * 39 + 4) + (2 * (1 << 33) + 1),
            reasoning_tokens: 1 + 2 + 4 + 4 + 1,
            total_tokens: (3 * 39 + 4) + (3 * (1 << 33) + 1),
            credits: 2 * ((3 * 39 + 4) + (3 * (1 << 33) + 1)),
            requests: 5,
        }
    );
}

async fn ungrouped_queries_form_one_group(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let day = || query(&acme, "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z");

    let empty = f.aggregate(&day()).await;
    assert_eq!(
        empty,
        Aggregate::default(),
        "no records: zero totals, no group"
    );

    let r = [
        record(&acme, "2026-07-01T01:00:00Z", 10),
        of(
            "Zeta",
            "Bob",
            "cht_x",
            record(&acme, "2026-07-01T02:00:00Z", 20),
        ),
    ];
    f.record(&r).await;
    let got = f.aggregate(&in_zone(day(), &BERLIN)).await;
    assert_eq!(got.group_count, 1);
    assert_eq!(
        got.groups,
        vec![UsageGroup {
            key: everything(),
            totals: sum(&r),
        }]
    );
    assert_eq!(got.totals, sum(&r));

    // After the single group: an empty page, still with the totals and the count.
    let after = f
        .aggregate(&GroupQuery {
            after: Some(everything()),
            ..day()
        })
        .await;
    assert_eq!(
        after,
        Aggregate {
            totals: sum(&r),
            group_count: 1,
            groups: Vec::new(),
        }
    );
}

// ----- periods -----

async fn periods_follow_the_time_zone_into_summer_time(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let at = |at: &str, input: u64| record(&acme, at, input);
    let r = [
        at("2026-02-28T23:30:00Z", 1),   // Berlin 03-01 00:30 (+1)
        at("2026-03-27T22:59:59Z", 2),   // Berlin 03-27 23:59:59
        at("2026-03-27T23:00:00Z", 4),   // Berlin 03-28 00:00
        at("2026-03-28T23:30:00Z", 8),   // Berlin 03-29 00:30
        at("2026-03-29T00:59:59Z", 16),  // Berlin 03-29 01:59:59, the last second of +1
        at("2026-03-29T01:00:00Z", 32),  // Berlin 03-29 03:00, the first of +2
        at("2026-03-29T21:59:59Z", 64),  // Berlin 03-29 23:59:59
        at("2026-03-29T22:00:00Z", 128), // Berlin 03-30 00:00
        at("2026-03-31T21:59:59Z", 256), // Berlin 03-31 23:59:59
        at("2026-03-31T22:30:00Z", 512), // Berlin 04-01 00:30
    ];
    f.record(&r).await;
    let range = || query(&acme, "2026-02-28T00:00:00Z", "2026-04-02T00:00:00Z");
    let by = |period, zone| in_zone(grouped(range(), Some(period), false, false), zone);
    let expect = |groups: &[(&str, u64, u64)]| -> Vec<(GroupKey, u64, u64)> {
        groups
            .iter()
            .map(|(start, requests, input)| (key(Some(start), None, None), *requests, *input))
            .collect()
    };

    let cases = [
        (
            "UTC days",
            by(Period::Day, &UTC),
            expect(&[
                ("2026-02-28 00:00", 1, 1),
                ("2026-03-27 00:00", 2, 6),
                ("2026-03-28 00:00", 1, 8),
                ("2026-03-29 00:00", 4, 240),
                ("2026-03-31 00:00", 2, 768),
            ]),
        ),
        (
            "Berlin days",
            by(Period::Day, &BERLIN),
            expect(&[
                ("2026-03-01 00:00", 1, 1),
                ("2026-03-27 00:00", 1, 2),
                ("2026-03-28 00:00", 1, 4),
                ("2026-03-29 00:00", 4, 120),
                ("2026-03-30 00:00", 1, 128),
                ("2026-03-31 00:00", 1, 256),
                ("2026-04-01 00:00", 1, 512),
            ]),
        ),
        (
            "UTC hours",
            by(Period::Hour, &UTC),
            expect(&[
                ("2026-02-28 23:00", 1, 1),
                ("2026-03-27 22:00", 1, 2),
                ("2026-03-27 23:00", 1, 4),
                ("2026-03-28 23:00", 1, 8),
                ("2026-03-29 00:00", 1, 16),
                ("2026-03-29 01:00", 1, 32),
                ("2026-03-29 21:00", 1, 64),
                ("2026-03-29 22:00", 1, 128),
                ("2026-03-31 21:00", 1, 256),
                ("2026-03-31 22:00", 1, 512),
            ]),
        ),
        (
            "Berlin hours (02:00 does not exist on 03-29)",
            by(Period::Hour, &BERLIN),
            expect(&[
                ("2026-03-01 00:00", 1, 1),
                ("2026-03-27 23:00", 1, 2),
                ("2026-03-28 00:00", 1, 4),
                ("2026-03-29 00:00", 1, 8),
                ("2026-03-29 01:00", 1, 16),
                ("2026-03-29 03:00", 1, 32),
                ("2026-03-29 23:00", 1, 64),
                ("2026-03-30 00:00", 1, 128),
                ("2026-03-31 23:00", 1, 256),
                ("2026-04-01 00:00", 1, 512),
            ]),
        ),
        (
            "UTC months",
            by(Period::Month, &UTC),
            expect(&[("2026-02-01 00:00", 1, 1), ("2026-03-01 00:00", 9, 1022)]),
        ),
        (
            "Berlin months",
            by(Period::Month, &BERLIN),
            expect(&[("2026-03-01 00:00", 9, 511), ("2026-04-01 00:00", 1, 512)]),
        ),
    ];
    for (case, query, expected) in &cases {
        let got = f.aggregate(query).await;
        assert_eq!(shape(&got), *expected, "{case}");
        assert_eq!(got.totals, sum(&r), "{case}");
        assert_complete(&got);
    }
}

async fn periods_follow_the_time_zone_out_of_summer_time_and_west_of_utc(
    target: impl Into<Target>,
) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let at = |at: &str, input: u64| record(&acme, at, input);
    // Berlin falls back on 2026-10-25 at 01:00 UTC: local 02:00 to 03:00 happens twice.
    let autumn = [
        at("2026-10-24T21:59:59Z", 1),  // 10-24 23:59:59 (+2)
        at("2026-10-24T22:00:00Z", 2),  // 10-25 00:00 (+2)
        at("2026-10-25T00:30:00Z", 4),  // 10-25 02:30 (+2)
        at("2026-10-25T01:30:00Z", 8),  // 10-25 02:30 (+1), the same local hour again
        at("2026-10-25T22:59:59Z", 16), // 10-25 23:59:59 (+1)
        at("2026-10-25T23:00:00Z", 32), // 10-26 00:00 (+1)
    ];
    // New York springs forward on 2026-03-08 at 07:00 UTC (-5 to -4).
    let spring = [
        at("2026-03-08T04:59:59Z", 1),  // 03-07 23:59:59 (-5)
        at("2026-03-08T05:00:00Z", 2),  // 03-08 00:00 (-5)
        at("2026-03-08T06:59:59Z", 4),  // 03-08 01:59:59 (-5)
        at("2026-03-08T07:00:00Z", 8),  // 03-08 03:00 (-4)
        at("2026-03-09T03:59:59Z", 16), // 03-08 23:59:59 (-4)
        at("2026-03-09T04:00:00Z", 32), // 03-09 00:00 (-4)
    ];
    f.record(&autumn).await;
    f.record(&spring).await;
    let october = || query(&acme, "2026-10-24T00:00:00Z", "2026-10-27T00:00:00Z");
    let march = || query(&acme, "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z");
    let by =
        |range: GroupQuery, period, zone| in_zone(grouped(range, Some(period), false, false), zone);
    let expect = |groups: &[(&str, u64, u64)]| -> Vec<(GroupKey, u64, u64)> {
        groups
            .iter()
            .map(|(start, requests, input)| (key(Some(start), None, None), *requests, *input))
            .collect()
    };

    let cases = [
        (
            "Berlin hours in October",
            by(october(), Period::Hour, &BERLIN),
            expect(&[
                ("2026-10-24 23:00", 1, 1),
                ("2026-10-25 00:00", 1, 2),
                ("2026-10-25 02:00", 2, 12),
                ("2026-10-25 23:00", 1, 16),
                ("2026-10-26 00:00", 1, 32),
            ]),
            sum(&autumn),
        ),
        (
            "Berlin days in October",
            by(october(), Period::Day, &BERLIN),
            expect(&[
                ("2026-10-24 00:00", 1, 1),
                ("2026-10-25 00:00", 4, 30),
                ("2026-10-26 00:00", 1, 32),
            ]),
            sum(&autumn),
        ),
        (
            "UTC days in October",
            by(october(), Period::Day, &UTC),
            expect(&[("2026-10-24 00:00", 2, 3), ("2026-10-25 00:00", 4, 60)]),
            sum(&autumn),
        ),
        (
            "New York hours in March",
            by(march(), Period::Hour, &NEW_YORK),
            expect(&[
                ("2026-03-07 23:00", 1, 1),
                ("2026-03-08 00:00", 1, 2),
                ("2026-03-08 01:00", 1, 4),
                ("2026-03-08 03:00", 1, 8),
                ("2026-03-08 23:00", 1, 16),
                ("2026-03-09 00:00", 1, 32),
            ]),
            sum(&spring),
        ),
        (
            "New York days in March",
            by(march(), Period::Day, &NEW_YORK),
            expect(&[
                ("2026-03-07 00:00", 1, 1),
                ("2026-03-08 00:00", 4, 30),
                ("2026-03-09 00:00", 1, 32),
            ]),
            sum(&spring),
        ),
        (
            "New York months in March",
            by(march(), Period::Month, &NEW_YORK),
            expect(&[("2026-03-01 00:00", 6, 63)]),
            sum(&spring),
        ),
        (
            "Kathmandu (+05:45) hours in March",
            by(march(), Period::Hour, &KATHMANDU),
            expect(&[
                // 04:59:59 + 5:45 = 10:44:59; 05:00 = 10:45; 06:59:59 = 12:44:59;
                // 07:00 = 12:45; 03-09 03:59:59 = 09:44:59; 04:00 = 09:45.
                ("2026-03-08 10:00", 2, 3),
                ("2026-03-08 12:00", 2, 12),
                ("2026-03-09 09:00", 2, 48),
            ]),
            sum(&spring),
        ),
    ];
    for (case, query, expected, totals) in &cases {
        let got = f.aggregate(query).await;
        assert_eq!(shape(&got), *expected, "{case}");
        assert_eq!(got.totals, *totals, "{case}");
        assert_complete(&got);
    }
}

/// Records a microsecond (or a fraction of a millisecond) before a period's end belong to
/// that period, whatever precision the database computes dates with.
async fn periods_are_exact_to_the_microsecond(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let at = |at: &str, input: u64| record(&acme, at, input);
    let r = [
        at("2026-03-27T23:59:59.999999Z", 1), // Berlin 03-28 00:59:59.999999
        at("2026-03-28T00:00:00Z", 2),
        at("2026-03-28T22:59:59.999600Z", 4), // Berlin 03-28 23:59:59.9996
        at("2026-03-28T23:00:00.000001Z", 8), // Berlin 03-29 00:00:00.000001
        at("2026-03-29T21:59:59.999500Z", 16), // Berlin 03-29 23:59:59.9995
    ];
    f.record(&r).await;
    let range = || query(&acme, "2026-03-27T00:00:00Z", "2026-03-31T00:00:00Z");
    let by = |period, zone| in_zone(grouped(range(), Some(period), false, false), zone);
    let expect = |groups: &[(&str, u64, u64)]| -> Vec<(GroupKey, u64, u64)> {
        groups
            .iter()
            .map(|(start, requests, input)| (key(Some(start), None, None), *requests, *input))
            .collect()
    };
    let cases = [
        (
            "UTC days",
            by(Period::Day, &UTC),
            expect(&[
                ("2026-03-27 00:00", 1, 1),
                ("2026-03-28 00:00", 3, 14),
                ("2026-03-29 00:00", 1, 16),
            ]),
        ),
        (
            "UTC hours",
            by(Period::Hour, &UTC),
            expect(&[
                ("2026-03-27 23:00", 1, 1),
                ("2026-03-28 00:00", 1, 2),
                ("2026-03-28 22:00", 1, 4),
                ("2026-03-28 23:00", 1, 8),
                ("2026-03-29 21:00", 1, 16),
            ]),
        ),
        (
            "Berlin days",
            by(Period::Day, &BERLIN),
            expect(&[("2026-03-28 00:00", 3, 7), ("2026-03-29 00:00", 2, 24)]),
        ),
    ];
    for (case, query, expected) in &cases {
        let got = f.aggregate(query).await;
        assert_eq!(shape(&got), *expected, "{case}");
        assert_complete(&got);
    }
}

// ----- models and users -----

async fn groups_by_model_and_user_in_byte_order(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let at = |model, user, at: &str, input| of(model, user, "cht_one", record(&acme, at, input));
    let r = [
        at("gpt-4o", "alice", "2026-06-01T10:00:00Z", 1),
        at("Zeta", "alice", "2026-06-01T11:00:00Z", 2),
        at("gpt-4o", "Bob", "2026-06-01T12:00:00Z", 4),
        at("ümodel", "Bob", "2026-06-01T23:59:59Z", 8), // Berlin 06-02 01:59:59 (+2)
        at("gpt-4o", "alice", "2026-06-02T00:00:00Z", 16),
        at("Zeta", "Bob", "2026-06-02T05:00:00Z", 32),
        at("gpt-4o", "alice", "2026-06-02T06:00:00Z", 64),
    ];
    f.record(&r).await;
    // Another organization's records of the same models and users never show up.
    f.record(&[of(
        "Zeta",
        "carol",
        "cht_one",
        record(&globex, "2026-06-01T10:00:00Z", 128),
    )])
    .await;
    let range = || query(&acme, "2026-06-01T00:00:00Z", "2026-06-03T00:00:00Z");
    let row = |period: Option<&str>, model: Option<&str>, user: Option<&str>, n, input| {
        (key(period, model, user), n, input)
    };

    // Byte order: upper case before lower case before non-ASCII.
    let cases = [
        (
            "model",
            grouped(range(), None, true, false),
            vec![
                row(None, Some("Zeta"), None, 2, 34),
                row(None, Some("gpt-4o"), None, 4, 85),
                row(None, Some("ümodel"), None, 1, 8),
            ],
        ),
        (
            "user",
            grouped(range(), None, false, true),
            vec![
                row(None, None, Some("Bob"), 3, 44),
                row(None, None, Some("alice"), 4, 83),
            ],
        ),
        (
            "model and user",
            grouped(range(), None, true, true),
            vec![
                row(None, Some("Zeta"), Some("Bob"), 1, 32),
                row(None, Some("Zeta"), Some("alice"), 1, 2),
                row(None, Some("gpt-4o"), Some("Bob"), 1, 4),
                row(None, Some("gpt-4o"), Some("alice"), 3, 81),
                row(None, Some("ümodel"), Some("Bob"), 1, 8),
            ],
        ),
        (
            "day, model and user in UTC",
            grouped(range(), Some(Period::Day), true, true),
            vec![
                row(Some("2026-06-01 00:00"), Some("Zeta"), Some("alice"), 1, 2),
                row(Some("2026-06-01 00:00"), Some("gpt-4o"), Some("Bob"), 1, 4),
                row(
                    Some("2026-06-01 00:00"),
                    Some("gpt-4o"),
                    Some("alice"),
                    1,
                    1,
                ),
                row(Some("2026-06-01 00:00"), Some("ümodel"), Some("Bob"), 1, 8),
                row(Some("2026-06-02 00:00"), Some("Zeta"), Some("Bob"), 1, 32),
                row(
                    Some("2026-06-02 00:00"),
                    Some("gpt-4o"),
                    Some("alice"),
                    2,
                    80,
                ),
            ],
        ),
        (
            "day, model and user in Berlin",
            in_zone(grouped(range(), Some(Period::Day), true, true), &BERLIN),
            vec![
                row(Some("2026-06-01 00:00"), Some("Zeta"), Some("alice"), 1, 2),
                row(Some("2026-06-01 00:00"), Some("gpt-4o"), Some("Bob"), 1, 4),
                row(
                    Some("2026-06-01 00:00"),
                    Some("gpt-4o"),
                    Some("alice"),
                    1,
                    1,
                ),
                row(Some("2026-06-02 00:00"), Some("Zeta"), Some("Bob"), 1, 32),
                row(
                    Some("2026-06-02 00:00"),
                    Some("gpt-4o"),
                    Some("alice"),
                    2,
                    80,
                ),
                row(Some("2026-06-02 00:00"), Some("ümodel"), Some("Bob"), 1, 8),
            ],
        ),
        (
            "month and user",
            grouped(range(), Some(Period::Month), false, true),
            vec![
                row(Some("2026-06-01 00:00"), None, Some("Bob"), 3, 44),
                row(Some("2026-06-01 00:00"), None, Some("alice"), 4, 83),
            ],
        ),
        (
            "alice's by model",
            filtered(
                grouped(range(), None, true, false),
                None,
                Some("alice"),
                None,
            ),
            vec![
                row(None, Some("Zeta"), None, 1, 2),
                row(None, Some("gpt-4o"), None, 3, 81),
            ],
        ),
        (
            "gpt-4o by hour and user",
            filtered(
                grouped(range(), Some(Period::Hour), false, true),
                Some("gpt-4o"),
                None,
                None,
            ),
            vec![
                row(Some("2026-06-01 10:00"), None, Some("alice"), 1, 1),
                row(Some("2026-06-01 12:00"), None, Some("Bob"), 1, 4),
                row(Some("2026-06-02 00:00"), None, Some("alice"), 1, 16),
                row(Some("2026-06-02 06:00"), None, Some("alice"), 1, 64),
            ],
        ),
    ];
    for (case, query, expected) in &cases {
        let got = f.aggregate(query).await;
        assert_eq!(shape(&got), *expected, "{case}");
        assert_complete(&got);
    }
    let all = f.aggregate(&grouped(range(), None, true, true)).await;
    assert_eq!(all.totals, sum(&r));
}

// ----- paging -----

/// Walks every group of `query` with pages of `limit`, checking each page.
async fn walk(f: &Fixture, query: &GroupQuery, limit: u32) -> (Vec<UsageGroup>, Vec<usize>) {
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

async fn pages_walk_every_group_once_in_key_order(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let models = ["gpt-4o", "Zeta", "ümodel"];
    let users = ["alice", "Bob"];
    let mut r = Vec::new();
    for i in 0..60_u64 {
        let day = i % 5;
        let model = models[usize::try_from((i * 7 / 5) % 3).unwrap()];
        let user = users[usize::try_from((i / 3) % 2).unwrap()];
        // Two hours apart within a day: every record its own hour.
        let minutes = i64::try_from(day * 1_440 + (i / 5) * 120 + (i * 7) % 60).unwrap();
        let when = utc("2026-08-01T00:00:00Z") + Duration::minutes(minutes);
        let mut one = of(
            model,
            user,
            "cht_one",
            record(&acme, "2026-08-01T00:00:00Z", i + 1),
        );
        one.created_at = when;
        r.push(one);
    }
    f.record(&r).await;
    let range = || query(&acme, "2026-08-01T00:00:00Z", "2026-08-06T00:00:00Z");

    let detailed = grouped(range(), Some(Period::Day), true, true);
    let whole = f.aggregate(&detailed).await;
    assert_complete(&whole);
    assert_eq!(whole.totals, sum(&r));
    assert_eq!(
        whole.group_count, 30,
        "5 days × 3 models × 2 users, all present"
    );
    let (_, sizes) = walk(&f, &detailed, 4).await;
    assert_eq!(sizes, [4, 4, 4, 4, 4, 4, 4, 2, 0]);
    let (_, sizes) = walk(&f, &in_zone(detailed.clone(), &NEW_YORK), 7).await;
    assert_eq!(sizes.iter().sum::<usize>() as u64, {
        f.aggregate(&in_zone(detailed.clone(), &NEW_YORK))
            .await
            .group_count
    });
    let (_, sizes) = walk(&f, &grouped(range(), None, true, false), 2).await;
    assert_eq!(sizes, [2, 1, 0]);
    let (_, sizes) = walk(&f, &grouped(range(), Some(Period::Hour), false, true), 5).await;
    assert_eq!(sizes.iter().sum::<usize>(), 60, "every record its own hour");
    let (_, sizes) = walk(&f, &range(), 1).await;
    assert_eq!(sizes, [1, 0]);

    // A cursor between two groups continues with the next group.
    for k in [0, 3, 10, 28] {
        let mut between = whole.groups[k].key.clone();
        between.user_id = between.user_id.map(|u| format!("{u}a"));
        let page = f
            .aggregate(&GroupQuery {
                after: Some(between),
                limit: 3,
                ..detailed.clone()
            })
            .await;
        let expected: Vec<UsageGroup> = whole.groups.iter().skip(k + 1).take(3).cloned().collect();
        assert_eq!(
            page.groups,
            expected,
            "after a key between {k} and {}",
            k + 1
        );
    }

    // After the last key (and after a key past every group): an empty page with the totals.
    let last = whole.groups.last().unwrap().key.clone();
    let beyond = key(Some("2027-01-01 00:00"), Some("a"), Some("a"));
    for after in [last, beyond] {
        let page = f
            .aggregate(&GroupQuery {
                after: Some(after),
                limit: 10,
                ..detailed.clone()
            })
            .await;
        assert_eq!(
            page,
            Aggregate {
                totals: sum(&r),
                group_count: 30,
                groups: Vec::new(),
            }
        );
    }
    // A page of no groups still counts.
    let none = f
        .aggregate(&GroupQuery {
            limit: 0,
            ..detailed.clone()
        })
        .await;
    assert_eq!(
        (none.totals, none.group_count, none.groups.len()),
        (sum(&r), 30, 0)
    );
}

// ----- recording -----

async fn a_message_is_recorded_once(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let first = record(&acme, "2026-09-01T10:00:00Z", 100);
    f.store.record(&first).await.unwrap();

    // The same message again (a new record id, other figures).
    let again = UsageRecord {
        id: UsageId::generate(),
        ..record(&acme, "2026-09-01T11:00:00Z", 1_000)
    };
    let again = UsageRecord {
        message_id: first.message_id.clone(),
        ..again
    };
    let refused = f.store.record(&again).await;
    assert!(
        matches!(refused, Err(DomainError::Conflict { .. })),
        "{refused:?}"
    );
    // A record id taken.
    let reused = UsageRecord {
        id: first.id.clone(),
        ..record(&acme, "2026-09-01T12:00:00Z", 10_000)
    };
    let refused = f.store.record(&reused).await;
    assert!(
        matches!(refused, Err(DomainError::Conflict { .. })),
        "{refused:?}"
    );

    let day = query(&acme, "2026-09-01T00:00:00Z", "2026-09-02T00:00:00Z");
    let got = f.store.aggregate(&day).await.unwrap();
    assert_eq!(got.totals, sum([&first]));

    // The store goes on recording other messages.
    let next = record(&acme, "2026-09-01T13:00:00Z", 7);
    f.store.record(&next).await.unwrap();
    let got = f.store.aggregate(&day).await.unwrap();
    assert_eq!(got.totals, sum([&first, &next]));
}

async fn records_need_an_existing_organization(backend: Backend) {
    let f = Fixture::new(backend).await;
    let orphan = record(&OrganizationId::generate(), "2026-09-01T10:00:00Z", 1);
    let refused = f.store.record(&orphan).await;
    assert!(
        matches!(
            refused,
            Err(DomainError::Conflict {
                code: "missing_reference",
                ..
            })
        ),
        "{refused:?}"
    );
}

// ----- against the reference, on many records -----

/// A 64-bit linear congruential generator (Knuth's MMIX constants): seeded, repeatable.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[usize::try_from(self.below(items.len() as u64)).unwrap()]
    }
}

async fn agrees_with_the_reference_on_seeded_random_records(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let models = ["gpt-4o", "Zeta", "ümodel"];
    let users = ["alice", "Bob"];
    let chats = ["cht_a", "cht_b", "cht_c"];
    let (from, to) = ("2026-03-01T00:00:00Z", "2026-04-10T00:00:00Z");

    // 40 days and one either side (so some records fall outside), to the microsecond.
    let mut lcg = Lcg(0x7e55_e7a0_2026);
    let start = utc(from) - Duration::days(1);
    let mut r = Vec::new();
    for _ in 0..300 {
        let organization = if lcg.below(4) == 0 { &globex } else { &acme };
        let created_at = start
            + Duration::seconds(i64::try_from(lcg.below(42 * 86_400)).unwrap())
            + Duration::microseconds(i64::try_from(lcg.below(1_000_000)).unwrap());
        let input = lcg.below(5_000);
        let tokens = Tokens {
            input,
            output: lcg.below(2_000),
            reasoning: lcg.below(300),
        };
        r.push(UsageRecord {
            tokens,
            credits: tokens.credits(u32::try_from(1 + lcg.below(3)).unwrap()),
            created_at,
            ..of(
                lcg.pick(&models),
                lcg.pick(&users),
                lcg.pick(&chats),
                record(organization, from, 0),
            )
        });
    }
    // On the range's edges and on the zones' changes.
    for at in [
        from,
        to,
        "2026-03-08T07:00:00Z",
        "2026-03-29T01:00:00Z",
        "2026-03-28T23:00:00Z",
    ] {
        r.push(record(&acme, at, 1_000));
    }
    f.record(&r).await;
    let in_range: Vec<&UsageRecord> = r
        .iter()
        .filter(|x| {
            x.organization_id == acme && x.created_at >= utc(from) && x.created_at < utc(to)
        })
        .collect();
    assert!(in_range.len() > 150, "{}", in_range.len());

    let periods = [
        None,
        Some(Period::Hour),
        Some(Period::Day),
        Some(Period::Month),
    ];
    let zones = [&UTC, &BERLIN, &NEW_YORK, &KOLKATA, &KATHMANDU, &MARQUESAS];
    let filters: [(Option<&str>, Option<&str>, Option<&str>); 5] = [
        (None, None, None),
        (Some("Zeta"), None, None),
        (None, Some("Bob"), None),
        (None, None, Some("cht_b")),
        (Some("gpt-4o"), Some("alice"), None),
    ];
    let mut queries = 0;
    for zone in zones {
        for period in periods {
            for (model, user) in [(false, false), (true, false), (false, true), (true, true)] {
                for (model_id, user_id, chat_id) in filters {
                    let q = in_zone(
                        filtered(
                            grouped(query(&acme, from, to), period, model, user),
                            model_id,
                            user_id,
                            chat_id,
                        ),
                        zone,
                    );
                    let got = f.aggregate(&q).await;
                    assert_complete(&got);
                    let expected = sum(in_range.iter().copied().filter(|x| {
                        model_id.is_none_or(|m| m == x.model_id)
                            && user_id.is_none_or(|u| u == x.principal)
                            && chat_id.is_none_or(|c| c == x.chat_id)
                    }));
                    assert_eq!(got.totals, expected, "{} {:?}", zone.name, q.grouping);
                    queries += 1;
                }
            }
        }
        // Sub-ranges starting and ending inside the data, on and off the zones' changes.
        for (sub_from, sub_to) in [
            ("2026-03-08T07:00:00Z", "2026-03-29T01:00:00Z"),
            ("2026-03-05T13:17:00.5Z", "2026-03-31T22:00:00Z"),
        ] {
            for period in periods {
                let q = in_zone(
                    grouped(query(&acme, sub_from, sub_to), period, true, true),
                    zone,
                );
                assert_complete(&f.aggregate(&q).await);
                queries += 1;
            }
        }
        // Paged.
        let q = in_zone(
            grouped(query(&acme, from, to), Some(Period::Hour), true, true),
            zone,
        );
        let (seen, _) = walk(&f, &q, 13).await;
        assert!(seen.len() > 150, "{}: {} hours", zone.name, seen.len());
    }
    assert_eq!(queries, 6 * (4 * 4 * 5 + 2 * 4));

    // And the other organization, by day in Berlin.
    let theirs = f
        .aggregate(&in_zone(
            grouped(query(&globex, from, to), Some(Period::Day), true, true),
            &BERLIN,
        ))
        .await;
    assert_complete(&theirs);
    assert_eq!(
        theirs.totals,
        sum(r.iter().filter(|x| {
            x.organization_id == globex && x.created_at >= utc(from) && x.created_at < utc(to)
        }))
    );
}

tessera_store::on_both_databases!(
    totals_are_exact_sums_over_the_filtered_range,
    ungrouped_queries_form_one_group,
    periods_follow_the_time_zone_into_summer_time,
    periods_follow_the_time_zone_out_of_summer_time_and_west_of_utc,
    periods_are_exact_to_the_microsecond,
    groups_by_model_and_user_in_byte_order,
    pages_walk_every_group_once_in_key_order,
    a_message_is_recorded_once,
    agrees_with_the_reference_on_seeded_random_records,
    records_need_an_existing_organization,
);

/// The same contract on the in-memory reference store (without the database-only tests).
mod memory {
    macro_rules! on_memory {
        ($($test:ident),* $(,)?) => {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() { super::$test(super::Target::Memory).await }
            )*
        };
    }

    on_memory!(
        totals_are_exact_sums_over_the_filtered_range,
        ungrouped_queries_form_one_group,
        periods_follow_the_time_zone_into_summer_time,
        periods_follow_the_time_zone_out_of_summer_time_and_west_of_utc,
        periods_are_exact_to_the_microsecond,
        groups_by_model_and_user_in_byte_order,
        pages_walk_every_group_once_in_key_order,
        a_message_is_recorded_once,
        agrees_with_the_reference_on_seeded_random_records,
    );
}

/// On PostgreSQL, records written at the same time share statements (the group commit of
/// stateless completions' usage); a record that cannot be written fails alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_records_are_group_committed_on_postgres() {
    let f = Fixture::new(Backend::Postgres).await;
    let acme = f.organization("Acme").await;
    let store = SqlUsageStore::new(f.db.as_ref().unwrap().database.clone());
    let records: Vec<UsageRecord> = (0..40)
        .map(|i| record(&acme, "2026-09-01T10:00:00Z", 10 + i))
        .collect();
    let mut writes = records.clone();
    // A record id already taken, in the middle of the crowd.
    writes.push(UsageRecord {
        message_id: message_id(),
        ..records[3].clone()
    });
    let written =
        futures_util::future::join_all(writes.iter().map(|record| store.record(record))).await;
    let refused: Vec<usize> = (0..written.len())
        .filter(|&i| written[i].is_err())
        .collect();
    assert_eq!(refused.len(), 1, "{written:?}");
    assert!(matches!(
        written[refused[0]],
        Err(DomainError::Conflict { .. })
    ));
    let stats = store.group_commit_stats().unwrap();
    assert!(stats.batches >= 1 && stats.batched_writes >= 2, "{stats:?}");
    let recorded: Vec<&UsageRecord> = (0..writes.len())
        .filter(|i| !refused.contains(i))
        .map(|i| &writes[i])
        .collect();
    let day = query(&acme, "2026-09-01T00:00:00Z", "2026-09-02T00:00:00Z");
    let got = store.aggregate(&day).await.unwrap();
    assert_eq!(got.totals, sum(recorded));
}
