//! Answers from the response cache: counted among the requests, and apart as cached
//! requests, in the totals and in every group.

use super::*;

/// `record`, answered from the response cache: no provider called, no credits.
pub fn cached(record: UsageRecord) -> UsageRecord {
    UsageRecord {
        cached: true,
        credits: 0,
        ..record
    }
}

/// Each group as (key, requests, cached requests, input tokens).
fn cached_shape(aggregate: &Aggregate) -> Vec<(GroupKey, u64, u64, u64)> {
    aggregate
        .groups
        .iter()
        .map(|g| {
            (
                g.key.clone(),
                g.totals.requests,
                g.totals.cached_requests,
                g.totals.input_tokens,
            )
        })
        .collect()
}

pub async fn cached_answers_are_counted_in_totals_and_groups(stores: &impl UsageStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let r = [
        // 0: paid, gpt-4o of alice.
        record(&acme, "2026-10-01T10:15:00Z", 1),
        // 1: cached, the same hour, model and user.
        cached(record(&acme, "2026-10-01T10:45:00Z", 2)),
        // 2: cached, Zeta of Bob.
        cached(of(
            "Zeta",
            "Bob",
            "cht_two",
            record(&acme, "2026-10-01T13:00:00Z", 4),
        )),
        // 3: paid, Zeta of Bob.
        of(
            "Zeta",
            "Bob",
            "cht_two",
            record(&acme, "2026-10-02T09:30:00Z", 8),
        ),
        // 4: cached, gpt-4o of Bob; Berlin 10-03 01:30 (+2).
        cached(of(
            "gpt-4o",
            "Bob",
            "cht_one",
            record(&acme, "2026-10-02T23:30:00Z", 16),
        )),
    ];
    f.record(&r).await;
    // Another organization's cached answer, which only shows up in its own reports.
    let theirs = cached(record(&globex, "2026-10-01T10:00:00Z", 32));
    f.record(std::slice::from_ref(&theirs)).await;
    let range = || query(&acme, "2026-10-01T00:00:00Z", "2026-10-04T00:00:00Z");

    // Totals: ranges of whole hours and not (a store may read rollups for the former),
    // filters by model, user and chat.
    let cases: Vec<(&str, GroupQuery, Vec<usize>)> = vec![
        ("all", range(), vec![0, 1, 2, 3, 4]),
        (
            "gpt-4o",
            filtered(range(), Some("gpt-4o"), None, None),
            vec![0, 1, 4],
        ),
        (
            "Bob",
            filtered(range(), None, Some("Bob"), None),
            vec![2, 3, 4],
        ),
        (
            "cht_two",
            filtered(range(), None, None, Some("cht_two")),
            vec![2, 3],
        ),
        (
            "a paid answer's hour",
            query(&acme, "2026-10-02T09:00:00Z", "2026-10-02T10:00:00Z"),
            vec![3],
        ),
        (
            "the paid answer of a mixed hour",
            query(&acme, "2026-10-01T10:15:00Z", "2026-10-01T10:45:00Z"),
            vec![0],
        ),
        (
            "the cached answer of a mixed hour",
            query(&acme, "2026-10-01T10:30:00Z", "2026-10-01T11:00:00Z"),
            vec![1],
        ),
        (
            "a cached answer's hour",
            query(&acme, "2026-10-01T13:00:00Z", "2026-10-01T14:00:00Z"),
            vec![2],
        ),
    ];
    for (case, query, members) in &cases {
        let got = f.aggregate(query).await;
        let expected = sum(members.iter().map(|&i| &r[i]));
        assert_eq!(got.totals, expected, "{case}");
        let cached = members.iter().filter(|&&i| r[i].cached).count() as u64;
        assert_eq!(got.totals.cached_requests, cached, "{case}");
        assert_eq!(got.totals.requests, members.len() as u64, "{case}");
    }
    let all = f.aggregate(&range()).await.totals;
    assert_eq!((all.requests, all.cached_requests), (5, 3));
    assert_eq!(
        all.credits,
        r[0].credits + r[3].credits,
        "cached answers cost 0"
    );
    let globex_totals = f
        .aggregate(&query(
            &globex,
            "2026-10-01T00:00:00Z",
            "2026-10-04T00:00:00Z",
        ))
        .await
        .totals;
    assert_eq!(globex_totals, sum([&theirs]));
    assert_eq!(
        (globex_totals.requests, globex_totals.cached_requests),
        (1, 1)
    );

    let row =
        |period: Option<&str>, model: Option<&str>, user: Option<&str>, requests, cached, input| {
            (key(period, model, user), requests, cached, input)
        };
    let cases = [
        (
            "model",
            grouped(range(), None, true, false),
            vec![
                row(None, Some("Zeta"), None, 2, 1, 12),
                row(None, Some("gpt-4o"), None, 3, 2, 19),
            ],
        ),
        (
            "user",
            grouped(range(), None, false, true),
            vec![
                row(None, None, Some("Bob"), 3, 2, 28),
                row(None, None, Some("alice"), 2, 1, 3),
            ],
        ),
        (
            "hour",
            grouped(range(), Some(Period::Hour), false, false),
            vec![
                row(Some("2026-10-01 10:00"), None, None, 2, 1, 3),
                row(Some("2026-10-01 13:00"), None, None, 1, 1, 4),
                row(Some("2026-10-02 09:00"), None, None, 1, 0, 8),
                row(Some("2026-10-02 23:00"), None, None, 1, 1, 16),
            ],
        ),
        (
            "day and model in Berlin",
            in_zone(grouped(range(), Some(Period::Day), true, false), &BERLIN),
            vec![
                row(Some("2026-10-01 00:00"), Some("Zeta"), None, 1, 1, 4),
                row(Some("2026-10-01 00:00"), Some("gpt-4o"), None, 2, 1, 3),
                row(Some("2026-10-02 00:00"), Some("Zeta"), None, 1, 0, 8),
                row(Some("2026-10-03 00:00"), Some("gpt-4o"), None, 1, 1, 16),
            ],
        ),
        (
            "day and user in Kolkata",
            in_zone(grouped(range(), Some(Period::Day), false, true), &KOLKATA),
            vec![
                row(Some("2026-10-01 00:00"), None, Some("Bob"), 1, 1, 4),
                row(Some("2026-10-01 00:00"), None, Some("alice"), 2, 1, 3),
                row(Some("2026-10-02 00:00"), None, Some("Bob"), 1, 0, 8),
                row(Some("2026-10-03 00:00"), None, Some("Bob"), 1, 1, 16),
            ],
        ),
        (
            "cht_two by hour",
            filtered(
                grouped(range(), Some(Period::Hour), false, false),
                None,
                None,
                Some("cht_two"),
            ),
            vec![
                row(Some("2026-10-01 13:00"), None, None, 1, 1, 4),
                row(Some("2026-10-02 09:00"), None, None, 1, 0, 8),
            ],
        ),
    ];
    for (case, query, expected) in &cases {
        let got = f.aggregate(query).await;
        assert_eq!(cached_shape(&got), *expected, "{case}");
        assert_complete(&got);
    }
}
