//! Agreement with the reference on many seeded random records.

use super::*;

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

pub async fn agrees_with_the_reference_on_seeded_random_records(stores: &impl UsageStores) {
    let f = Fixture::new(stores);
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
            cached_input: lcg.below(input + 1),
        };
        let credits = tokens.credits(u32::try_from(1 + lcg.below(3)).unwrap());
        // About one in five answered from the response cache (at no cost).
        let cached = input.is_multiple_of(5);
        r.push(UsageRecord {
            tokens,
            credits: if cached { 0 } else { credits },
            created_at,
            cached,
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
