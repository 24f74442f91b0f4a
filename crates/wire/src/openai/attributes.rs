//! OpenAI's file `attributes` and search `filters` as JSON, read into the knowledge
//! domain's `Attributes` and `AttributeFilter` (each refusal located in the body) and
//! written back.

use std::collections::BTreeMap;

use serde_json::Value;
use tessera_kernel::{DomainError, FieldError, LocSegment};
use tessera_knowledge::{AttributeFilter, AttributeValue, Attributes, Comparison};

/// How deep `and` and `or` filters nest, and how many filters one search holds.
pub const MAX_FILTER_DEPTH: usize = 8;
pub const MAX_FILTERS: usize = 64;

/// A request's `attributes`, checked (`body.attributes` in refusals).
pub fn attributes_of(pairs: BTreeMap<String, Value>) -> Result<Attributes, DomainError> {
    let mut values = BTreeMap::new();
    for (key, value) in pairs {
        let value = match value {
            Value::String(text) => AttributeValue::Text(text),
            Value::Bool(flag) => AttributeValue::Bool(flag),
            Value::Number(number) => match number.as_f64() {
                Some(number) => AttributeValue::Number(number),
                None => return Err(not_a_value(&key)),
            },
            _ => return Err(not_a_value(&key)),
        };
        values.insert(key, value);
    }
    Attributes::new(values, &["body", "attributes"])
}

fn not_a_value(key: &str) -> DomainError {
    DomainError::invalid(
        ["body".into(), "attributes".into(), key.into()],
        "a value must be a string, a number or a boolean",
        "type_error",
    )
}

/// Attributes as OpenAI's objects show them.
pub fn attributes_json(attributes: &Attributes) -> BTreeMap<String, Value> {
    (attributes.pairs().iter())
        .map(|(key, value)| (key.clone(), value_json(value)))
        .collect()
}

fn value_json(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::Text(text) => Value::from(text.as_str()),
        // Whole numbers read back as the integers clients sent (2024, not 2024.0).
        AttributeValue::Number(number)
            if number.fract() == 0.0 && number.abs() < 9_007_199_254_740_992.0 =>
        {
            Value::from(*number as i64)
        }
        AttributeValue::Number(number) => Value::from(*number),
        AttributeValue::Bool(flag) => Value::from(*flag),
    }
}

/// Reads a search's `filters`: a comparison (`{"type": "eq", "key", "value"}`; `ne`, `gt`,
/// `gte`, `lt`, `lte`; `in` and `nin` with an array `value`) or a compound filter
/// (`{"type": "and" | "or", "filters": [...]}`).
pub fn filter_of(value: &Value) -> Result<AttributeFilter, FieldError> {
    filter_at(value, vec!["body".into(), "filters".into()])
}

/// [`filter_of`] for filters found at `loc` (a `file_search` tool's, say).
pub fn filter_at(value: &Value, loc: Vec<LocSegment>) -> Result<AttributeFilter, FieldError> {
    let mut count = 0;
    read(value, loc, 0, &mut count)
}

/// A filter's value: a string, a number or a boolean.
fn scalar(value: &Value) -> Option<AttributeValue> {
    match value {
        Value::String(text) => Some(AttributeValue::Text(text.clone())),
        Value::Bool(flag) => Some(AttributeValue::Bool(*flag)),
        Value::Number(number) => number.as_f64().map(AttributeValue::Number),
        _ => None,
    }
}

fn error(loc: &[LocSegment], msg: impl Into<String>, kind: &str) -> FieldError {
    FieldError::new(loc.to_vec(), msg, kind)
}

fn at(loc: &[LocSegment], segment: impl Into<LocSegment>) -> Vec<LocSegment> {
    let mut loc = loc.to_vec();
    loc.push(segment.into());
    loc
}

fn read(
    value: &Value,
    loc: Vec<LocSegment>,
    depth: usize,
    count: &mut usize,
) -> Result<AttributeFilter, FieldError> {
    *count += 1;
    if *count > MAX_FILTERS {
        return Err(error(
            &loc,
            format!("at most {MAX_FILTERS} filters in one search"),
            "too_long",
        ));
    }
    let Some(object) = value.as_object() else {
        return Err(error(&loc, "a filter is an object", "type_error"));
    };
    let kind = object
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let key = || {
        let key = object
            .get("key")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if key.is_empty() {
            return Err(error(
                &at(&loc, "key"),
                "the attribute to compare",
                "missing",
            ));
        }
        Ok(key.to_owned())
    };
    if let Some(op) = Comparison::parse(kind) {
        let value = object.get("value").and_then(scalar).ok_or_else(|| {
            error(
                &at(&loc, "value"),
                "a string, a number or a boolean",
                "type_error",
            )
        })?;
        return Ok(AttributeFilter::Compare {
            key: key()?,
            op,
            value,
        });
    }
    if kind == "in" || kind == "nin" {
        let values = object
            .get("value")
            .and_then(Value::as_array)
            .filter(|values| !values.is_empty())
            .and_then(|values| values.iter().map(scalar).collect::<Option<Vec<_>>>())
            .ok_or_else(|| {
                error(
                    &at(&loc, "value"),
                    "a non-empty array of strings, numbers or booleans",
                    "type_error",
                )
            })?;
        return Ok(AttributeFilter::OneOf {
            key: key()?,
            values,
            not: kind == "nin",
        });
    }
    let combine = match kind {
        "and" => AttributeFilter::And,
        "or" => AttributeFilter::Or,
        _ => {
            return Err(error(
                &at(&loc, "type"),
                "must be `eq`, `ne`, `gt`, `gte`, `lt`, `lte`, `in`, `nin`, `and` or `or`",
                "enum",
            ));
        }
    };
    if depth + 1 >= MAX_FILTER_DEPTH {
        return Err(error(
            &loc,
            format!("filters nest at most {MAX_FILTER_DEPTH} deep"),
            "too_deep",
        ));
    }
    let Some(filters) = object.get("filters").and_then(Value::as_array) else {
        return Err(error(
            &at(&loc, "filters"),
            "an array of filters",
            "type_error",
        ));
    };
    let inner = at(&loc, "filters");
    let filters = (filters.iter().enumerate())
        .map(|(index, filter)| {
            read(
                filter,
                at(&inner, LocSegment::Index(index)),
                depth + 1,
                count,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(combine(filters))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn comparisons_and_compound_filters_are_read() {
        let filter = filter_of(&json!({"type": "and", "filters": [
            {"type": "eq", "key": "team", "value": "docs"},
            {"type": "or", "filters": [
                {"type": "gte", "key": "year", "value": 2024},
                {"type": "ne", "key": "draft", "value": true},
            ]},
            {"type": "in", "key": "team", "value": ["docs", "core"]},
            {"type": "nin", "key": "year", "value": [2024, 2026]},
        ]}))
        .unwrap();
        let file = Attributes::trusted(
            [
                ("team".to_owned(), AttributeValue::Text("docs".into())),
                ("year".to_owned(), AttributeValue::Number(2025.0)),
            ]
            .into(),
        );
        assert!(filter.matches(&file));
    }

    #[test]
    fn malformed_filters_are_located() {
        for (filter, loc) in [
            (
                json!({"type": "near", "key": "a", "value": "x"}),
                "[Field(\"body\"), Field(\"filters\"), Field(\"type\")]",
            ),
            (
                json!({"type": "in", "key": "a", "value": []}),
                "[Field(\"body\"), Field(\"filters\"), Field(\"value\")]",
            ),
            (
                json!({"type": "nin", "key": "a", "value": [{"x": 1}]}),
                "[Field(\"body\"), Field(\"filters\"), Field(\"value\")]",
            ),
            (
                json!({"type": "eq", "value": 1}),
                "[Field(\"body\"), Field(\"filters\"), Field(\"key\")]",
            ),
            (
                json!({"type": "eq", "key": "a", "value": null}),
                "[Field(\"body\"), Field(\"filters\"), Field(\"value\")]",
            ),
            (
                json!({"type": "and", "filters": [{"type": "lt", "key": "a"}]}),
                "[Field(\"body\"), Field(\"filters\"), Field(\"filters\"), Index(0), Field(\"value\")]",
            ),
            (json!("eq"), "[Field(\"body\"), Field(\"filters\")]"),
        ] {
            let refused = filter_of(&filter).unwrap_err();
            assert_eq!(format!("{:?}", refused.loc), loc, "{filter}");
        }
        let mut deep = json!({"type": "eq", "key": "a", "value": 1});
        for _ in 0..MAX_FILTER_DEPTH {
            deep = json!({"type": "and", "filters": [deep]});
        }
        assert_eq!(filter_of(&deep).unwrap_err().kind, "too_deep");
    }

    #[test]
    fn attributes_take_strings_numbers_and_booleans() {
        let pairs: BTreeMap<String, Value> =
            serde_json::from_value(json!({"team": "docs", "year": 2024, "draft": false})).unwrap();
        let attributes = attributes_of(pairs.clone()).unwrap();
        assert_eq!(
            attributes_json(&attributes),
            BTreeMap::from([
                ("draft".to_owned(), json!(false)),
                ("team".to_owned(), json!("docs")),
                ("year".to_owned(), json!(2024)),
            ])
        );
        let nested: BTreeMap<String, Value> =
            serde_json::from_value(json!({"tags": ["a"]})).unwrap();
        assert!(attributes_of(nested).is_err());
    }
}
