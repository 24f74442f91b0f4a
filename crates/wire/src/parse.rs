//! How a request's JSON body, query string and path become the typed, validated request a
//! handler reads: every problem is a [`FieldError`] located as the client sent it
//! (`body.items.1.order`, `query.limit`), reported all at once as the kernel's
//! `DomainError::Validation` (a 422 over HTTP), with no HTTP framework involved.

use serde::de::DeserializeOwned;
use tessera_kernel::{DomainError, FieldError, LocSegment, text};
use validator::{Validate, ValidationErrors, ValidationErrorsKind};

/// Deserializes and validates a JSON document; every problem becomes an entry.
pub fn json<T: DeserializeOwned + Validate>(bytes: &[u8]) -> Result<T, DomainError> {
    if bytes.is_empty() {
        return Err(DomainError::Validation(vec![FieldError::new(
            ["body".into()],
            "a JSON body is required",
            "missing",
        )]));
    }
    refuse_nul_in_json(bytes)?;
    // Every body is an object; serde would also fill a struct from an array.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(DomainError::Validation(vec![FieldError::new(
            ["body".into()],
            "the body must be a JSON object",
            "type_error",
        )]));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = loc_of(e.path());
        let inner = e.into_inner();
        let kind = match inner.classify() {
            serde_json::error::Category::Syntax
            | serde_json::error::Category::Eof
            | serde_json::error::Category::Io => "json_invalid",
            serde_json::error::Category::Data => "",
        };
        DomainError::Validation(vec![data_error("body", path, &inner.to_string(), kind)])
    })?;
    deserializer.end().map_err(|e| {
        DomainError::Validation(vec![FieldError::new(
            ["body".into()],
            format!("malformed JSON: {e}"),
            "json_invalid",
        )])
    })?;
    value
        .validate()
        .map_err(|errors| DomainError::Validation(validation_errors("body", &errors)))?;
    Ok(value)
}

/// A body whose text holds a NUL character is refused with each string's location (the
/// kernel's text rule), before any handler sees it. JSON can carry NUL only as the escape
/// `\u0000`, so bodies without that byte sequence (nearly all) skip the walk.
fn refuse_nul_in_json(bytes: &[u8]) -> Result<(), DomainError> {
    const ESCAPED_NUL: &[u8] = b"\\u0000";
    if !bytes.windows(ESCAPED_NUL.len()).any(|w| w == ESCAPED_NUL) {
        return Ok(());
    }
    // A body that is not JSON is left to the typed parse, which says where it breaks.
    let Ok(document) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return Ok(());
    };
    refuse_if_any(text::nul_errors(&document, &[LocSegment::from("body")]))
}

/// Every query parameter whose name or value holds a NUL character (`%00`).
fn refuse_nul_in_query(query: &str) -> Result<(), DomainError> {
    refuse_if_any(
        form_urlencoded::parse(query.as_bytes())
            .filter(|(name, value)| !text::is_storable(name) || !text::is_storable(value))
            .map(|(name, _)| text::nul_error([LocSegment::from("query"), LocSegment::from(&*name)]))
            .collect(),
    )
}

/// A validation failure listing `errors`, unless there are none.
fn refuse_if_any(errors: Vec<FieldError>) -> Result<(), DomainError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(DomainError::Validation(errors))
    }
}

/// Deserializes and validates a query string.
pub fn query<T: DeserializeOwned + Validate>(query: &str) -> Result<T, DomainError> {
    refuse_nul_in_query(query)?;
    let deserializer =
        serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    let value: T = serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = loc_of(e.path());
        DomainError::Validation(vec![data_error(
            "query",
            path,
            &e.into_inner().to_string(),
            "",
        )])
    })?;
    value
        .validate()
        .map_err(|errors| DomainError::Validation(validation_errors("query", &errors)))?;
    Ok(value)
}

/// A text field checked by the domain's rules, or an entry at `body.<field>`.
pub fn text_field<T, E: std::fmt::Display>(
    field: &str,
    text: &str,
    parse: fn(&str) -> Result<T, E>,
) -> Result<T, DomainError> {
    parse(text).map_err(|e| {
        DomainError::Validation(vec![FieldError::new(
            ["body".into(), field.into()],
            e.to_string(),
            "value_error",
        )])
    })
}

/// The `limit` query parameter: 1 to 100, 20 when absent.
pub fn page_limit(limit: Option<i64>) -> Result<tessera_kernel::Limit, DomainError> {
    tessera_kernel::Limit::new(limit.unwrap_or(20)).map_err(|e| {
        DomainError::Validation(vec![FieldError::new(
            ["query".into(), "limit".into()],
            e.to_string(),
            "range",
        )])
    })
}

/// An id from the path. A malformed one names no record of any organization, so it is
/// answered like any other miss: not found.
pub fn path_id<T: std::str::FromStr>(text: &str, resource: &'static str) -> Result<T, DomainError> {
    text.parse()
        .map_err(|_| DomainError::not_found(resource, text))
}

/// The values of the repeatable `expand[]` query parameter (`expand` is accepted too),
/// each checked against what the operation can expand.
pub fn expansions(query: &str, allowed: &[&str]) -> Result<Vec<String>, DomainError> {
    let mut values = Vec::new();
    let mut invalid = Vec::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if key != "expand[]" && key != "expand" {
            continue;
        }
        if allowed.contains(&value.as_ref()) {
            values.push(value.into_owned());
        } else {
            invalid.push(FieldError::new(
                ["query".into(), LocSegment::from(key.as_ref())],
                format!(
                    "cannot expand `{value}`; expected one of: {}",
                    allowed.join(", ")
                ),
                "enum",
            ));
        }
    }
    if invalid.is_empty() {
        Ok(values)
    } else {
        Err(DomainError::Validation(invalid))
    }
}

fn loc_of(path: &serde_path_to_error::Path) -> Vec<LocSegment> {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|segment| match segment {
            Segment::Seq { index } => Some(LocSegment::Index(*index)),
            Segment::Map { key } => Some(LocSegment::Field(key.clone())),
            Segment::Enum { variant } => Some(LocSegment::Field(variant.clone())),
            Segment::Unknown => None,
        })
        .collect()
}

/// Builds the entry for a deserialization failure, naming the field even when serde
/// reports it only in the message (a missing or unknown field).
fn data_error(root: &str, path: Vec<LocSegment>, message: &str, kind: &str) -> FieldError {
    let message = message
        .split(" at line ")
        .next()
        .unwrap_or(message)
        .to_owned();
    let mut loc = vec![LocSegment::from(root)];
    loc.extend(path);
    let quoted = || message.split('`').nth(1).map(str::to_owned);
    let kind = if !kind.is_empty() {
        kind
    } else if message.starts_with("missing field") {
        loc.extend(quoted().map(LocSegment::Field));
        "missing"
    } else if message.starts_with("unknown field") {
        // serde_path_to_error already ends the path with the unknown field.
        "extra_forbidden"
    } else if message.starts_with("invalid type") {
        "type_error"
    } else if message.starts_with("unknown variant") {
        "enum"
    } else {
        "value_error"
    };
    FieldError::new(loc, message, kind)
}

/// Flattens `validator`'s nested errors into entries with camelCase field names.
pub fn validation_errors(root: &str, errors: &ValidationErrors) -> Vec<FieldError> {
    let mut out = Vec::new();
    collect(&mut out, vec![LocSegment::from(root)], errors);
    out
}

fn collect(out: &mut Vec<FieldError>, prefix: Vec<LocSegment>, errors: &ValidationErrors) {
    let mut fields: Vec<_> = errors.errors().iter().collect();
    fields.sort_by_key(|(name, _)| name.to_string());
    for (field, kind) in fields {
        let mut loc = prefix.clone();
        if *field != "__all__" {
            loc.push(LocSegment::Field(camel_case(field)));
        }
        match kind {
            ValidationErrorsKind::Field(list) => {
                for error in list {
                    let msg = error
                        .message
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_else(|| describe(error));
                    out.push(FieldError::new(loc.clone(), msg, error.code.to_string()));
                }
            }
            ValidationErrorsKind::Struct(inner) => collect(out, loc, inner),
            ValidationErrorsKind::List(items) => {
                for (index, inner) in items {
                    let mut item_loc = loc.clone();
                    item_loc.push(LocSegment::Index(*index));
                    collect(out, item_loc, inner);
                }
            }
        }
    }
}

/// A readable message for a built-in validator failure without a custom message.
fn describe(error: &validator::ValidationError) -> String {
    let param = |name: &str| error.params.get(name).map(ToString::to_string);
    match (error.code.as_ref(), param("min"), param("max")) {
        ("length", Some(min), Some(max)) => format!("length must be between {min} and {max}"),
        ("length", Some(min), None) => format!("length must be at least {min}"),
        ("length", None, Some(max)) => format!("length must be at most {max}"),
        ("range", Some(min), Some(max)) => format!("must be between {min} and {max}"),
        ("range", Some(min), None) => format!("must be at least {min}"),
        ("range", None, Some(max)) => format!("must be at most {max}"),
        (code, _, _) => format!("failed the `{code}` check"),
    }
}

fn camel_case(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut upper = false;
    for c in field.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, Validate)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Create {
        #[validate(length(min = 1, max = 5))]
        display_name: String,
        #[validate(nested)]
        #[serde(default)]
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize, Validate)]
    struct Item {
        #[validate(range(min = 0))]
        order: i64,
    }

    fn fields(error: DomainError) -> Vec<FieldError> {
        match error {
            DomainError::Validation(fields) => fields,
            other => panic!("expected field errors, got {other:?}"),
        }
    }

    fn loc(parts: &[&str]) -> Vec<LocSegment> {
        parts
            .iter()
            .map(|p| {
                p.parse::<usize>()
                    .map(LocSegment::Index)
                    .unwrap_or_else(|_| LocSegment::from(*p))
            })
            .collect()
    }

    #[test]
    fn nul_in_any_text_and_non_object_bodies_are_located() {
        let errors =
            fields(json::<Create>(b"{\"displayName\": \"a\\u0000\", \"items\": []}").unwrap_err());
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].loc, loc(&["body", "displayName"]));
        assert_eq!(errors[0].kind, text::NUL_ERROR_KIND);
        // An escaped backslash followed by `u0000` is text, not a NUL.
        assert!(
            json::<Create>(b"{\"displayName\": \"\\\\u0000\"}")
                .is_err_and(|e| fields(e).iter().all(|f| f.kind != text::NUL_ERROR_KIND))
        );
        let errors = fields(json::<Create>(b" [\"x\", []]").unwrap_err());
        assert_eq!(
            (errors[0].loc.clone(), errors[0].kind.as_str()),
            (loc(&["body"]), "type_error")
        );
        let errors = fields(refuse_nul_in_query("limit=2&modelId=%00").unwrap_err());
        assert_eq!(errors[0].loc, loc(&["query", "modelId"]));
    }

    #[test]
    fn malformed_json_points_at_the_body() {
        let errors = fields(json::<Create>(b"{\"displayName\": ").unwrap_err());
        assert_eq!(
            (errors[0].loc.clone(), errors[0].kind.as_str()),
            (loc(&["body", "displayName"]), "json_invalid")
        );
        let errors = fields(json::<Create>(b"{,}").unwrap_err());
        assert_eq!(
            (errors[0].loc.clone(), errors[0].kind.as_str()),
            (loc(&["body"]), "json_invalid")
        );
        let errors = fields(json::<Create>(b"{\"displayName\": \"a\"} trailing").unwrap_err());
        assert_eq!(errors[0].kind, "json_invalid");
        let errors = fields(json::<Create>(b"").unwrap_err());
        assert_eq!(errors[0].kind, "missing");
    }

    #[test]
    fn type_missing_and_unknown_fields_are_located() {
        let errors = fields(json::<Create>(br#"{"displayName": 5}"#).unwrap_err());
        assert_eq!(
            (errors[0].loc.clone(), errors[0].kind.as_str()),
            (loc(&["body", "displayName"]), "type_error")
        );
        let errors = fields(json::<Create>(br#"{}"#).unwrap_err());
        assert_eq!(
            (errors[0].loc.clone(), errors[0].kind.as_str()),
            (loc(&["body", "displayName"]), "missing")
        );
        let errors = fields(json::<Create>(br#"{"displayName": "a", "bogus": 1}"#).unwrap_err());
        assert_eq!(
            (errors[0].loc.clone(), errors[0].kind.as_str()),
            (loc(&["body", "bogus"]), "extra_forbidden")
        );
        let errors = fields(
            json::<Create>(br#"{"displayName": "a", "items": [{"order": 1}, {"order": "x"}]}"#)
                .unwrap_err(),
        );
        assert_eq!(errors[0].loc, loc(&["body", "items", "1", "order"]));
    }

    #[test]
    fn validator_failures_use_camel_case_locations() {
        let errors = fields(
            json::<Create>(
                br#"{"displayName": "toolong", "items": [{"order": 1}, {"order": -1}]}"#,
            )
            .unwrap_err(),
        );
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(
            (errors[0].loc.clone(), errors[0].msg.as_str()),
            (
                loc(&["body", "displayName"]),
                "length must be between 1 and 5"
            )
        );
        assert_eq!(
            (errors[1].loc.clone(), errors[1].kind.as_str()),
            (loc(&["body", "items", "1", "order"]), "range")
        );
    }

    #[derive(Debug, Deserialize, Validate)]
    struct ListQuery {
        #[validate(range(min = 1, max = 100))]
        limit: Option<i64>,
    }

    #[test]
    fn query_problems_are_located() {
        assert!(query::<ListQuery>("limit=10").is_ok());
        let errors = fields(query::<ListQuery>("limit=abc").unwrap_err());
        assert_eq!(errors[0].loc, loc(&["query", "limit"]));
        let errors = fields(query::<ListQuery>("limit=1000").unwrap_err());
        assert_eq!(
            (errors[0].loc.clone(), errors[0].kind.as_str()),
            (loc(&["query", "limit"]), "range")
        );
    }
}
