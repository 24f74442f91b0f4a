//! `UsageService::report` over the in-memory reference store: parsing and checking of the
//! request, the scope rule for per-user figures, time zones, defaults and paging.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tessera_kernel::{
    Caller, CursorCodec, DomainError, Limit, ManualClock, OrganizationId, Principal, PrincipalKind,
    ScopeSet,
};
use tessera_usage::{
    Tokens, UsageId, UsageRecord, UsageRequest, UsageService, UsageStore,
    memory::InMemoryUsageStore,
};

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

struct Fixture {
    service: UsageService,
    store: Arc<InMemoryUsageStore>,
    organization: OrganizationId,
}

impl Fixture {
    fn new(now: &str) -> Self {
        let store = Arc::new(InMemoryUsageStore::new());
        Self {
            service: UsageService::new(
                store.clone(),
                Arc::new(ManualClock::new(at(now))),
                CursorCodec::new([7; 32]),
            ),
            store,
            organization: OrganizationId::generate(),
        }
    }

    async fn record(&self, when: &str, model: &str, user: &str, input: u64, output: u64) {
        let tokens = Tokens {
            input,
            output,
            reasoning: 0,
            cached_input: 0,
        };
        self.store
            .record(&UsageRecord {
                id: UsageId::generate(),
                organization_id: self.organization.clone(),
                principal: user.into(),
                principal_kind: PrincipalKind::User,
                chat_id: "cht_1".into(),
                message_id: UsageId::generate().to_string(),
                model_id: model.into(),
                parent_model_id: model.into(),
                provider: "local".into(),
                tokens,
                credits: tokens.credits(2),
                latency_ms: 10,
                finish_reason: "stop".into(),
                created_at: at(when),
                cached: false,
            })
            .await
            .unwrap();
    }

    fn caller(&self, admin: bool) -> Caller {
        let scopes = if admin { "usage:admin" } else { "usage:read" };
        Caller::of(Principal {
            organization_id: self.organization.clone(),
            subject: "alice".into(),
            kind: PrincipalKind::User,
            scopes: ScopeSet::parse_list(scopes).unwrap(),
            origin: None,
        })
    }
}

fn request(group_by: &[&str]) -> UsageRequest {
    UsageRequest {
        group_by: group_by.iter().map(|g| (*g).to_owned()).collect(),
        ..Default::default()
    }
}

fn invalid_fields(error: DomainError) -> Vec<String> {
    match error {
        DomainError::Validation(errors) => errors
            .into_iter()
            .map(|e| {
                format!(
                    "{}:{}",
                    e.loc.last().map(|l| format!("{l:?}")).unwrap(),
                    e.kind
                )
            })
            .collect(),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[tokio::test]
async fn the_default_range_is_the_current_month_in_utc() {
    let fixture = Fixture::new("2026-11-22T10:00:00Z");
    fixture
        .record("2026-10-31T23:59:59Z", "m1", "alice", 1000, 1000)
        .await;
    fixture
        .record("2026-11-01T00:00:00Z", "m1", "alice", 10, 5)
        .await;
    fixture
        .record("2026-11-22T09:59:59Z", "m2", "bob", 20, 7)
        .await;
    fixture
        .record("2026-11-22T10:00:00Z", "m2", "bob", 1000, 1000)
        .await;
    let report = fixture
        .service
        .report(&fixture.caller(false), request(&[]))
        .await
        .unwrap();
    assert_eq!(report.from.to_rfc3339(), "2026-11-01T00:00:00+00:00");
    assert_eq!(report.to.to_rfc3339(), "2026-11-22T10:00:00+00:00");
    assert_eq!(report.time_zone, "UTC");
    assert_eq!(report.totals.input_tokens, 30);
    assert_eq!(report.totals.output_tokens, 12);
    assert_eq!(report.totals.total_tokens, 42);
    assert_eq!(report.totals.credits, 84);
    assert_eq!(report.totals.requests, 2);
    assert!(report.groups.items.is_empty());
    assert_eq!(report.groups.total_count, Some(0));
}

#[tokio::test]
async fn days_follow_the_requested_time_zone() {
    let fixture = Fixture::new("2026-11-22T10:00:00Z");
    // 23:30 UTC on the 9th is 00:30 on the 10th in Berlin (UTC+1 in November).
    fixture
        .record("2026-11-09T22:30:00Z", "m1", "alice", 1, 1)
        .await;
    fixture
        .record("2026-11-09T23:30:00Z", "m1", "alice", 2, 2)
        .await;
    let mut utc = request(&["day"]);
    utc.from = Some("2026-11-01".into());
    let report = fixture
        .service
        .report(&fixture.caller(false), utc)
        .await
        .unwrap();
    let days: Vec<String> = report
        .groups
        .items
        .iter()
        .map(|g| {
            format!(
                "{}={}",
                g.period_start.unwrap().to_rfc3339(),
                g.totals.input_tokens
            )
        })
        .collect();
    assert_eq!(days, ["2026-11-09T00:00:00+00:00=3"]);

    let mut berlin = request(&["day"]);
    berlin.from = Some("2026-11-01".into());
    berlin.time_zone = Some("Europe/Berlin".into());
    let report = fixture
        .service
        .report(&fixture.caller(false), berlin)
        .await
        .unwrap();
    assert_eq!(report.from.to_rfc3339(), "2026-11-01T00:00:00+01:00");
    let days: Vec<String> = report
        .groups
        .items
        .iter()
        .map(|g| {
            format!(
                "{}={}",
                g.period_start.unwrap().to_rfc3339(),
                g.totals.input_tokens
            )
        })
        .collect();
    assert_eq!(
        days,
        ["2026-11-09T00:00:00+01:00=1", "2026-11-10T00:00:00+01:00=2"]
    );
}

#[tokio::test]
async fn pages_walk_every_group_once() {
    let fixture = Fixture::new("2026-11-30T00:00:00Z");
    for day in 1..=9 {
        for model in ["m1", "m2"] {
            fixture
                .record(&format!("2026-11-0{day}T12:00:00Z"), model, "alice", day, 1)
                .await;
        }
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let mut page = request(&["day", "model"]);
        page.limit = Limit::new(4).unwrap();
        page.cursor = cursor;
        let report = fixture
            .service
            .report(&fixture.caller(false), page)
            .await
            .unwrap();
        assert_eq!(report.groups.total_count, Some(18));
        assert_eq!(report.totals.requests, 18);
        seen.extend(report.groups.items.iter().map(|g| {
            (
                g.period_start.unwrap().to_rfc3339(),
                g.model_id.clone().unwrap(),
            )
        }));
        cursor = report.groups.next_cursor.map(|c| c.as_str().to_owned());
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen.len(), 18);
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, seen);
}

#[tokio::test]
async fn a_cursor_of_another_grouping_is_refused() {
    let fixture = Fixture::new("2026-11-30T00:00:00Z");
    for day in 1..=3 {
        fixture
            .record(&format!("2026-11-0{day}T12:00:00Z"), "m1", "alice", 1, 1)
            .await;
    }
    let mut first = request(&["day"]);
    first.limit = Limit::new(1).unwrap();
    let report = fixture
        .service
        .report(&fixture.caller(false), first)
        .await
        .unwrap();
    let cursor = report.groups.next_cursor.unwrap();
    let mut other = request(&["model"]);
    other.cursor = Some(cursor.as_str().to_owned());
    let error = fixture
        .service
        .report(&fixture.caller(false), other)
        .await
        .unwrap_err();
    assert!(matches!(error, DomainError::Validation(_)), "{error:?}");
}

#[tokio::test]
async fn per_user_figures_of_others_need_usage_admin() {
    let fixture = Fixture::new("2026-11-30T00:00:00Z");
    fixture
        .record("2026-11-02T12:00:00Z", "m1", "alice", 1, 1)
        .await;
    fixture
        .record("2026-11-02T12:00:00Z", "m1", "bob", 5, 5)
        .await;
    let forbidden = fixture
        .service
        .report(&fixture.caller(false), request(&["user"]))
        .await
        .unwrap_err();
    assert!(
        matches!(forbidden, DomainError::Forbidden { .. }),
        "{forbidden:?}"
    );
    let mut bob = request(&[]);
    bob.user_id = Some("bob".into());
    assert!(matches!(
        fixture
            .service
            .report(&fixture.caller(false), bob.clone())
            .await,
        Err(DomainError::Forbidden { .. })
    ));
    let mut own = request(&[]);
    own.user_id = Some("alice".into());
    let report = fixture
        .service
        .report(&fixture.caller(false), own)
        .await
        .unwrap();
    assert_eq!(report.totals.input_tokens, 1);

    let report = fixture
        .service
        .report(&fixture.caller(true), request(&["user"]))
        .await
        .unwrap();
    let users: Vec<(String, u64)> = report
        .groups
        .items
        .iter()
        .map(|g| (g.user_id.clone().unwrap(), g.totals.total_tokens))
        .collect();
    assert_eq!(users, [("alice".to_owned(), 2), ("bob".to_owned(), 10)]);
    assert_eq!(
        fixture
            .service
            .report(&fixture.caller(true), bob)
            .await
            .unwrap()
            .totals
            .input_tokens,
        5
    );
}

#[tokio::test]
async fn bad_requests_name_every_invalid_parameter() {
    let fixture = Fixture::new("2026-11-30T00:00:00Z");
    let mut bad = request(&["week", "day,month"]);
    bad.from = Some("yesterday".into());
    bad.time_zone = Some("Mars/Olympus".into());
    let error = fixture
        .service
        .report(&fixture.caller(true), bad)
        .await
        .unwrap_err();
    let fields = invalid_fields(error);
    assert!(
        fields.contains(&"Field(\"timeZone\"):value_error".to_owned()),
        "{fields:?}"
    );
    assert!(
        fields.contains(&"Field(\"groupBy\"):enum".to_owned()),
        "{fields:?}"
    );
    assert!(
        fields.contains(&"Field(\"groupBy\"):value_error".to_owned()),
        "{fields:?}"
    );
    assert!(
        fields.contains(&"Field(\"from\"):datetime_parsing".to_owned()),
        "{fields:?}"
    );

    let mut reversed = request(&[]);
    reversed.from = Some("2026-11-10T00:00:00Z".into());
    reversed.to = Some("2026-11-09T00:00:00+00:00".into());
    let fields = invalid_fields(
        fixture
            .service
            .report(&fixture.caller(true), reversed)
            .await
            .unwrap_err(),
    );
    assert_eq!(fields, ["Field(\"from\"):value_error"]);

    let mut too_long = request(&[]);
    too_long.from = Some("2000-01-01".into());
    too_long.to = Some("2026-01-01".into());
    let fields = invalid_fields(
        fixture
            .service
            .report(&fixture.caller(true), too_long)
            .await
            .unwrap_err(),
    );
    assert_eq!(fields, ["Field(\"from\"):value_error"]);
}
