//! The one rule for text Tessera accepts: no NUL character (U+0000). PostgreSQL's `text`
//! cannot hold it (SQLite can), so without this rule the same request would be stored on one
//! database and fail with a 500 on the other, possibly after a provider was already paid.
//! Every entry point checks input with these functions before any work starts.

use serde_json::Value;

use crate::{FieldError, LocSegment};

/// The `type` of the validation error for text that holds a NUL character.
pub const NUL_ERROR_KIND: &str = "string_nul";

/// Whether `text` can be stored on every supported database.
pub fn is_storable(text: &str) -> bool {
    !text.contains('\0')
}

/// The validation error for a NUL character at `loc`.
pub fn nul_error(loc: impl IntoIterator<Item = LocSegment>) -> FieldError {
    FieldError::new(
        loc,
        "text must not contain the NUL character (U+0000)",
        NUL_ERROR_KIND,
    )
}

/// One error per string (or object key) of `value` that holds a NUL character, located
/// under `prefix` (e.g. `["body"]`).
pub fn nul_errors(value: &Value, prefix: &[LocSegment]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut path = prefix.to_vec();
    collect(value, &mut path, &mut errors);
    errors
}

fn collect(value: &Value, path: &mut Vec<LocSegment>, errors: &mut Vec<FieldError>) {
    match value {
        Value::String(text) if !is_storable(text) => errors.push(nul_error(path.clone())),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(LocSegment::Index(index));
                collect(item, path, errors);
                path.pop();
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                path.push(LocSegment::Field(key.clone()));
                if is_storable(key) {
                    collect(item, path, errors);
                } else {
                    errors.push(nul_error(path.clone()));
                }
                path.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn locates_every_nul_in_strings_and_keys() {
        let value = json!({
            "name": "ok",
            "messages": [{"content": "a\u{0}b"}, {"content": "fine"}],
            "bad\u{0}key": 1,
        });
        let errors = nul_errors(&value, &["body".into()]);
        let locs: Vec<_> = errors.iter().map(|e| e.loc.clone()).collect();
        assert_eq!(
            locs,
            vec![
                vec![
                    LocSegment::from("body"),
                    "messages".into(),
                    LocSegment::Index(0),
                    "content".into()
                ],
                vec![LocSegment::from("body"), "bad\u{0}key".into()],
            ]
        );
        assert!(errors.iter().all(|e| e.kind == NUL_ERROR_KIND));
    }

    #[test]
    fn text_without_nul_passes() {
        assert!(is_storable("naïve \\u0000 written out"));
        assert!(nul_errors(&json!({"a": ["b", {"c": "d"}]}), &[]).is_empty());
    }
}
