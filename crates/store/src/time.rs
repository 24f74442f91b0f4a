//! Time as the store reads it back: both databases keep timestamps without a zone (always
//! UTC, microsecond precision, as the `Clock` port gives them), and every row type turns
//! them into `DateTime<Utc>` with this one function.

use chrono::{DateTime, NaiveDateTime, Utc};

/// A stored timestamp as the UTC instant it is.
pub(crate) fn utc(at: NaiveDateTime) -> DateTime<Utc> {
    DateTime::<Utc>::from_naive_utc_and_offset(at, Utc)
}
