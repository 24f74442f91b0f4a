//! Periods: hours, days and months in a time zone, across its offset changes, exact to
//! the microsecond.

use super::*;

pub async fn periods_follow_the_time_zone_into_summer_time(stores: &impl UsageStores) {
    let f = Fixture::new(stores);
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

pub async fn periods_follow_the_time_zone_out_of_summer_time_and_west_of_utc(
    stores: &impl UsageStores,
) {
    let f = Fixture::new(stores);
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
pub async fn periods_are_exact_to_the_microsecond(stores: &impl UsageStores) {
    let f = Fixture::new(stores);
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
