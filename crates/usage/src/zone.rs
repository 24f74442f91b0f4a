//! Time zones for reports: the UTC offsets a range of time passes through (so a database
//! can compute local periods with plain arithmetic), and local period starts back to
//! instants.

use chrono::{DateTime, Duration, FixedOffset, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;

use crate::OffsetSpan;

fn offset_at(zone: Tz, at: DateTime<Utc>) -> i32 {
    zone.offset_from_utc_datetime(&at.naive_utc())
        .fix()
        .local_minus_utc()
}

/// The offsets `zone` has from `from` (inclusive) to `to` (exclusive): one span per offset
/// change, the first starting at `from`. Zones change offset at most a few times a year and
/// never twice within a day, so the range is walked by day and each change located to the
/// second by bisection.
pub fn offset_spans(zone: Tz, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<OffsetSpan> {
    let mut spans = vec![OffsetSpan {
        since: from,
        offset_seconds: offset_at(zone, from),
    }];
    let mut start = from;
    while start < to {
        let end = (start + Duration::days(1)).min(to);
        let current = spans.last().map_or(0, |span| span.offset_seconds);
        let at_end = offset_at(zone, end);
        if at_end != current && end <= to {
            // The change lies in (start, end]: find the first second with the new offset.
            // Offsets change on whole seconds: bisect over seconds since the epoch.
            let second = |s: i64| DateTime::from_timestamp(s, 0).unwrap_or(end);
            let (mut low, mut high) = (start.timestamp(), end.timestamp());
            while high - low > 1 {
                let middle = low + (high - low) / 2;
                if offset_at(zone, second(middle)) == current {
                    low = middle;
                } else {
                    high = middle;
                }
            }
            let high = second(high).max(start);
            if high < to {
                spans.push(OffsetSpan {
                    since: high,
                    offset_seconds: offset_at(zone, high),
                });
            }
        }
        start = end;
    }
    spans
}

/// The instant a local period start names in `zone`. A start inside a gap (a clock set
/// forward at midnight) is the first local time after it; an ambiguous one the earlier.
pub fn local_instant(zone: Tz, local: NaiveDateTime) -> DateTime<FixedOffset> {
    let mut candidate = local;
    for _ in 0..16 {
        if let Some(at) = zone.from_local_datetime(&candidate).earliest() {
            return at.fixed_offset();
        }
        candidate += Duration::minutes(15);
    }
    Utc.from_utc_datetime(&local).fixed_offset()
}

/// Local wall-clock time of `at` in `zone`.
pub fn local_time(zone: Tz, at: DateTime<Utc>) -> NaiveDateTime {
    at.with_timezone(&zone).naive_local()
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn utc_has_one_span() {
        let spans = offset_spans(
            Tz::UTC,
            utc("2026-01-01T00:00:00Z"),
            utc("2027-01-01T00:00:00Z"),
        );
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].offset_seconds, 0);
    }

    #[test]
    fn berlin_changes_twice_a_year_at_the_right_second() {
        let spans = offset_spans(
            chrono_tz::Europe::Berlin,
            utc("2026-01-01T00:00:00Z"),
            utc("2027-01-01T00:00:00Z"),
        );
        let found: Vec<(String, i32)> = spans
            .iter()
            .map(|s| (s.since.to_rfc3339(), s.offset_seconds))
            .collect();
        assert_eq!(
            found,
            [
                ("2026-01-01T00:00:00+00:00".to_owned(), 3600),
                ("2026-03-29T01:00:00+00:00".to_owned(), 7200),
                ("2026-10-25T01:00:00+00:00".to_owned(), 3600),
            ]
        );
    }

    #[test]
    fn a_change_exactly_at_the_end_is_left_out() {
        let spans = offset_spans(
            chrono_tz::Europe::Berlin,
            utc("2026-03-28T00:00:00Z"),
            utc("2026-03-29T01:00:00Z"),
        );
        assert_eq!(spans.len(), 1);
    }

    #[test]
    fn local_starts_map_back_to_instants() {
        let midnight = NaiveDate::from_ymd_opt(2026, 3, 29)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap();
        assert_eq!(
            local_instant(chrono_tz::Europe::Berlin, midnight).to_rfc3339(),
            "2026-03-29T00:00:00+01:00"
        );
        // Havana springs forward at midnight: the day starts at 01:00.
        let havana = NaiveDate::from_ymd_opt(2026, 3, 8)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap();
        assert_eq!(
            local_instant(chrono_tz::America::Havana, havana).to_rfc3339(),
            "2026-03-08T01:00:00-04:00"
        );
    }
}
