//! Groups by model and user in byte order, and pages of groups walked in key order.

use super::*;

pub async fn groups_by_model_and_user_in_byte_order(stores: &impl UsageStores) {
    let f = Fixture::new(stores);
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

pub async fn pages_walk_every_group_once_in_key_order(stores: &impl UsageStores) {
    let f = Fixture::new(stores);
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
