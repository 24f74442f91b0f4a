//! Attributes of a file in a dataset (OpenAI's vector store file `attributes`) and the
//! filters a search narrows its files by: comparisons of one attribute with a value,
//! combined with `and` and `or`. A filter picks the dataset's files before the search, so
//! the index searches only theirs.

use std::collections::BTreeMap;

use tessera_kernel::DomainError;

use tessera_kernel::metadata::{MAX_KEY_CHARS, MAX_PAIRS, check_pairs};

/// One attribute's value: a string, a number or a boolean.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    Text(String),
    Number(f64),
    Bool(bool),
}

/// Key-value pairs a client attaches to a file in a dataset: at most
/// [`Attributes::MAX_PAIRS`], keys of at most [`Attributes::MAX_KEY_CHARS`] characters,
/// text values of at most [`Attributes::MAX_TEXT_CHARS`], numbers finite.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attributes(BTreeMap<String, AttributeValue>);

impl Attributes {
    pub const MAX_PAIRS: usize = MAX_PAIRS;
    pub const MAX_KEY_CHARS: usize = MAX_KEY_CHARS;
    pub const MAX_TEXT_CHARS: usize = 512;

    /// The pairs, checked; `loc` names the field in a refusal.
    pub fn new(pairs: BTreeMap<String, AttributeValue>, loc: &[&str]) -> Result<Self, DomainError> {
        check_pairs(&pairs, loc, |key, value| match value {
            AttributeValue::Text(text) if text.chars().count() > Self::MAX_TEXT_CHARS => Some((
                format!(
                    "the value of `{key}` has more than {} characters",
                    Self::MAX_TEXT_CHARS
                ),
                "string_length",
            )),
            AttributeValue::Number(number) if !number.is_finite() => Some((
                format!("the value of `{key}` is not a finite number"),
                "value_error",
            )),
            _ => None,
        })?;
        Ok(Self(pairs))
    }

    /// The pairs as they were checked, for a store reading back what it saved.
    pub fn trusted(pairs: BTreeMap<String, AttributeValue>) -> Self {
        Self(pairs)
    }

    pub fn pairs(&self) -> &BTreeMap<String, AttributeValue> {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&AttributeValue> {
        self.0.get(key)
    }
}

/// How a comparison compares an attribute with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
}

impl Comparison {
    pub const ALL: [Self; 6] = [Self::Eq, Self::Ne, Self::Gt, Self::Gte, Self::Lt, Self::Lte];

    /// OpenAI's name: `eq`, `ne`, `gt`, `gte`, `lt`, `lte`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Eq => "eq",
            Self::Ne => "ne",
            Self::Gt => "gt",
            Self::Gte => "gte",
            Self::Lt => "lt",
            Self::Lte => "lte",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.as_str() == text)
    }

    fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            Self::Eq => ordering == Equal,
            Self::Ne => ordering != Equal,
            Self::Gt => ordering == Greater,
            Self::Gte => ordering != Less,
            Self::Lt => ordering == Less,
            Self::Lte => ordering != Greater,
        }
    }
}

/// Which of a dataset's files a search looks at.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeFilter {
    /// The attribute `key` compared with `value`. A file without the attribute, or with a
    /// value of another kind (text against a number), never matches, `ne` included.
    Compare {
        key: String,
        op: Comparison,
        value: AttributeValue,
    },
    /// The attribute `key` equals one of `values` (`in`), or none of them (`nin`, `not`
    /// set). A file without the attribute matches neither.
    OneOf {
        key: String,
        values: Vec<AttributeValue>,
        not: bool,
    },
    /// Every filter matches.
    And(Vec<AttributeFilter>),
    /// At least one filter matches.
    Or(Vec<AttributeFilter>),
}

impl AttributeFilter {
    pub fn matches(&self, attributes: &Attributes) -> bool {
        match self {
            Self::And(filters) => filters.iter().all(|filter| filter.matches(attributes)),
            Self::Or(filters) => filters.iter().any(|filter| filter.matches(attributes)),
            Self::Compare { key, op, value } => attributes
                .get(key)
                .and_then(|have| ordering(have, value))
                .is_some_and(|ordering| op.holds(ordering)),
            Self::OneOf { key, values, not } => attributes.get(key).is_some_and(|have| {
                let found = (values.iter())
                    .any(|want| ordering(have, want) == Some(std::cmp::Ordering::Equal));
                found != *not
            }),
        }
    }
}

/// How an attribute's value compares with a filter's: `None` across kinds.
fn ordering(have: &AttributeValue, want: &AttributeValue) -> Option<std::cmp::Ordering> {
    match (have, want) {
        (AttributeValue::Text(have), AttributeValue::Text(want)) => Some(have.cmp(want)),
        (AttributeValue::Number(have), AttributeValue::Number(want)) => have.partial_cmp(want),
        (AttributeValue::Bool(have), AttributeValue::Bool(want)) => Some(have.cmp(want)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attributes(pairs: &[(&str, AttributeValue)]) -> Attributes {
        Attributes::trusted(
            pairs
                .iter()
                .map(|(key, value)| ((*key).to_owned(), value.clone()))
                .collect(),
        )
    }

    fn compare(key: &str, op: Comparison, value: AttributeValue) -> AttributeFilter {
        AttributeFilter::Compare {
            key: key.into(),
            op,
            value,
        }
    }

    #[test]
    fn comparisons_match_values_of_their_kind_only() {
        let file = attributes(&[
            ("team", AttributeValue::Text("docs".into())),
            ("year", AttributeValue::Number(2024.0)),
            ("draft", AttributeValue::Bool(false)),
        ]);
        let text = |op, value: &str| compare("team", op, AttributeValue::Text(value.into()));
        let year = |op, value| compare("year", op, AttributeValue::Number(value));
        assert!(text(Comparison::Eq, "docs").matches(&file));
        assert!(!text(Comparison::Ne, "docs").matches(&file));
        assert!(text(Comparison::Ne, "core").matches(&file));
        assert!(year(Comparison::Gte, 2024.0).matches(&file));
        assert!(year(Comparison::Gt, 2023.5).matches(&file));
        assert!(!year(Comparison::Lt, 2024.0).matches(&file));
        assert!(year(Comparison::Lte, 2024.0).matches(&file));
        assert!(compare("draft", Comparison::Eq, AttributeValue::Bool(false)).matches(&file));
        // Another kind, or no such attribute: never, `ne` included.
        assert!(
            !compare("year", Comparison::Ne, AttributeValue::Text("2024".into())).matches(&file)
        );
        assert!(
            !compare("owner", Comparison::Ne, AttributeValue::Text("bob".into())).matches(&file)
        );
        let one_of = |values: &[&str], not| AttributeFilter::OneOf {
            key: "team".into(),
            values: values
                .iter()
                .map(|v| AttributeValue::Text((*v).into()))
                .collect(),
            not,
        };
        assert!(one_of(&["core", "docs"], false).matches(&file));
        assert!(!one_of(&["core"], false).matches(&file));
        assert!(one_of(&["core"], true).matches(&file));
        assert!(!one_of(&["docs"], true).matches(&file));
        let absent = AttributeFilter::OneOf {
            key: "owner".into(),
            values: vec![AttributeValue::Text("bob".into())],
            not: true,
        };
        assert!(!absent.matches(&file), "no attribute matches neither");
        let both = AttributeFilter::And(vec![
            text(Comparison::Eq, "docs"),
            year(Comparison::Lt, 2000.0),
        ]);
        let either = AttributeFilter::Or(vec![
            text(Comparison::Eq, "core"),
            year(Comparison::Eq, 2024.0),
        ]);
        assert!(!both.matches(&file));
        assert!(either.matches(&file));
    }

    #[test]
    fn attributes_are_bounded() {
        let loc = ["body", "attributes"];
        let many: BTreeMap<String, AttributeValue> = (0..17)
            .map(|index| (format!("k{index}"), AttributeValue::Bool(true)))
            .collect();
        assert!(Attributes::new(many, &loc).is_err());
        for (key, value) in [
            ("", AttributeValue::Bool(true)),
            ("long", AttributeValue::Text("x".repeat(513))),
            ("nan", AttributeValue::Number(f64::NAN)),
        ] {
            let pairs = [(key.to_owned(), value)].into();
            assert!(Attributes::new(pairs, &loc).is_err(), "{key}");
        }
        let fine = [("k".to_owned(), AttributeValue::Number(1.5))].into();
        assert!(Attributes::new(fine, &loc).is_ok());
    }
}
