//! Totals and filters: exact sums over a filtered range, and the one group of an
//! ungrouped query.

use super::*;

pub async fn totals_are_exact_sums_over_the_filtered_range(stores: &impl UsageStores) {
    let f = Fixture::new(stores);
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
            cached_input_tokens: 1 + 10 + 2_863_311_530,
            total_tokens: (3 * 39 + 4) + (3 * (1 << 33) + 1),
            credits: 2 * ((3 * 39 + 4) + (3 * (1 << 33) + 1)),
            requests: 5,
            cached_requests: 0,
        }
    );
}

pub async fn ungrouped_queries_form_one_group(stores: &impl UsageStores) {
    let f = Fixture::new(stores);
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
