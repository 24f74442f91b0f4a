use serde::Serialize;

use crate::Cursor;

/// Why a page size was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("limit must be between {min} and {max}, got {got}", min = Limit::MIN, max = Limit::MAX)]
pub struct LimitError {
    pub got: i64,
}

/// A page size: 1 to 100 items, 20 by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit(u32);

impl Limit {
    pub const MIN: u32 = 1;
    pub const MAX: u32 = 100;
    pub const DEFAULT: Limit = Limit(20);
    /// The largest page, for a caller that reads every page.
    pub const LARGEST: Limit = Limit(Self::MAX);

    pub fn new(value: i64) -> Result<Self, LimitError> {
        match u32::try_from(value) {
            Ok(v) if (Self::MIN..=Self::MAX).contains(&v) => Ok(Self(v)),
            _ => Err(LimitError { got: value }),
        }
    }

    pub fn get(self) -> u32 {
        self.0
    }

    /// How many rows a store should fetch: one more than the page, to learn whether more exist.
    pub fn overfetch(self) -> i64 {
        i64::from(self.0) + 1
    }
}

impl Default for Limit {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What a keyset-paginated list asks a store for: at most `limit` items after `after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest<K> {
    pub limit: Limit,
    pub after: Option<K>,
}

impl<K> PageRequest<K> {
    pub fn first(limit: Limit) -> Self {
        Self { limit, after: None }
    }
}

/// One page of a list, in the shape every list endpoint answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<Cursor>,
    pub has_more: bool,
    pub total_count: Option<u64>,
}

impl<T> Page<T> {
    /// Builds a page from up to `limit + 1` rows fetched in order: the extra row, if any,
    /// only tells that another page exists, and the cursor points after the last kept item.
    pub fn from_overfetch(
        mut rows: Vec<T>,
        limit: Limit,
        total_count: Option<u64>,
        cursor_after: impl FnOnce(&T) -> Cursor,
    ) -> Self {
        let keep = limit.get() as usize;
        let has_more = rows.len() > keep;
        rows.truncate(keep);
        let next_cursor = if has_more {
            rows.last().map(cursor_after)
        } else {
            None
        };
        Self {
            items: rows,
            next_cursor,
            has_more,
            total_count,
        }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
            has_more: self.has_more,
            total_count: self.total_count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_bounds() {
        assert!(Limit::new(0).is_err());
        assert!(Limit::new(-1).is_err());
        assert!(Limit::new(101).is_err());
        assert_eq!(Limit::new(1).map(Limit::get), Ok(1));
        assert_eq!(Limit::new(100).map(Limit::get), Ok(100));
        assert_eq!(Limit::default().get(), 20);
    }

    #[test]
    fn overfetched_row_sets_has_more_and_cursor() {
        let limit = Limit::new(2).unwrap();
        let page = Page::from_overfetch(vec![1, 2, 3], limit, Some(3), |last| {
            Cursor::from_encoded(last.to_string())
        });
        assert_eq!(page.items, vec![1, 2]);
        assert!(page.has_more);
        assert_eq!(page.next_cursor.as_ref().map(Cursor::as_str), Some("2"));

        let last = Page::from_overfetch(vec![3], limit, Some(3), |last| {
            Cursor::from_encoded(last.to_string())
        });
        assert!(!last.has_more);
        assert_eq!(last.next_cursor, None);
    }
}
