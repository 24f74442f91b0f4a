//! JSON: flattened to one line per leaf, `path: value` (`$.items[3].name: "Widget"`), in the
//! document's order; the lines are chunked whole. Keys that are not identifiers are written
//! in brackets (`$["two words"]`), values as JSON (strings quoted and escaped, so each value
//! stays on one line), empty objects and arrays as `{}` and `[]`. A chunk's `section` is the
//! longest path all its lines share (at least `$`).

use serde_json::Value;
use tessera_knowledge::{ChunkDraft, DocumentError};

use crate::Limits;
use crate::chunking::{Chunker, Line, draft};
use crate::text::too_long;

pub(crate) fn chunks(
    text: &str,
    chunker: &Chunker<'_>,
    limits: &Limits,
) -> Result<Vec<ChunkDraft>, DocumentError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|error| DocumentError::Corrupt(format!("invalid JSON: {error}")))?;
    let flat = Flattened::of(&value, limits)?;
    if !flat.has_content {
        return Err(DocumentError::Empty);
    }
    let lines: Vec<Line<'_>> = flat
        .lines
        .iter()
        .map(|line| Line {
            text: flat.text.get(line.start..line.end).unwrap_or_default(),
            char_start: line.char_start,
        })
        .collect();
    let chunks = chunker
        .pack_lines(&lines, None)
        .into_iter()
        .map(|packed| {
            let section = match (flat.lines.get(packed.first), flat.lines.get(packed.last)) {
                (Some(first), Some(last)) => flat.common_path(first, last),
                _ => "$",
            };
            draft(
                packed.text,
                packed.tokens,
                packed.char_start..packed.char_end,
                None,
                Some(section.to_owned()),
            )
        })
        .collect();
    Ok(chunks)
}

#[derive(Debug)]
struct FlatLine {
    /// Byte range of the line in the flattened text.
    start: usize,
    end: usize,
    char_start: u64,
    /// The byte lengths of the line's path prefixes that end a segment: `$`, `$.items`,
    /// `$.items[3]`, ….
    bounds: Vec<usize>,
}

#[derive(Debug, Default)]
struct Flattened {
    text: String,
    lines: Vec<FlatLine>,
    chars: u64,
    /// Whether any leaf holds more than `null`, `""`, `{}` or `[]`.
    has_content: bool,
}

impl Flattened {
    fn of(value: &Value, limits: &Limits) -> Result<Self, DocumentError> {
        let mut flat = Self::default();
        let mut path = String::from("$");
        let mut bounds = vec![1];
        flat.walk(value, &mut path, &mut bounds, limits)?;
        Ok(flat)
    }

    fn walk(
        &mut self,
        value: &Value,
        path: &mut String,
        bounds: &mut Vec<usize>,
        limits: &Limits,
    ) -> Result<(), DocumentError> {
        match value {
            Value::Object(members) if !members.is_empty() => {
                for (key, member) in members {
                    let length = path.len();
                    push_key(path, key);
                    bounds.push(path.len());
                    self.walk(member, path, bounds, limits)?;
                    bounds.pop();
                    path.truncate(length);
                }
                Ok(())
            }
            Value::Array(items) if !items.is_empty() => {
                for (index, item) in items.iter().enumerate() {
                    let length = path.len();
                    path.push_str(&format!("[{index}]"));
                    bounds.push(path.len());
                    self.walk(item, path, bounds, limits)?;
                    bounds.pop();
                    path.truncate(length);
                }
                Ok(())
            }
            leaf => self.leaf(leaf, path, bounds, limits),
        }
    }

    fn leaf(
        &mut self,
        value: &Value,
        path: &str,
        bounds: &[usize],
        limits: &Limits,
    ) -> Result<(), DocumentError> {
        let rendered = match value {
            Value::Object(_) => "{}".to_owned(),
            Value::Array(_) => "[]".to_owned(),
            other => other.to_string(),
        };
        self.has_content |= match value {
            Value::Null | Value::Object(_) | Value::Array(_) => false,
            Value::String(text) => !text.trim().is_empty(),
            Value::Bool(_) | Value::Number(_) => true,
        };
        if !self.text.is_empty() {
            self.text.push('\n');
            self.chars += 1;
        }
        let start = self.text.len();
        let char_start = self.chars;
        self.text.push_str(path);
        self.text.push_str(": ");
        self.text.push_str(&rendered);
        let added = self
            .text
            .get(start..)
            .map_or(0, |line| line.chars().count());
        self.chars += added as u64;
        if self.chars > limits.max_text_chars as u64 {
            return Err(too_long(limits));
        }
        self.lines.push(FlatLine {
            start,
            end: self.text.len(),
            char_start,
            bounds: bounds.to_vec(),
        });
        Ok(())
    }

    /// The longest path both lines (and so, in document order, all lines between them) share.
    fn common_path(&self, first: &FlatLine, last: &FlatLine) -> &str {
        let path = |line: &FlatLine, length: usize| self.text.get(line.start..line.start + length);
        let mut shared = 1;
        for &length in &first.bounds {
            if last.bounds.binary_search(&length).is_err()
                || path(first, length) != path(last, length)
            {
                break;
            }
            shared = length;
        }
        path(first, shared).unwrap_or("$")
    }
}

fn push_key(path: &mut String, key: &str) {
    let mut chars = key.chars();
    let identifier = chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|rest| rest.is_ascii_alphanumeric() || rest == '_');
    if identifier {
        path.push('.');
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&Value::String(key.to_owned()).to_string());
        path.push(']');
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn values_are_flattened_to_paths_in_order() {
        let value: Value = serde_json::from_str(
            r#"{"name":"Shop","items":[{"name":"Widget","price":9.5},{"tags":[]}],"two words":{"x":null},"ok":true}"#,
        )
        .unwrap();
        let flat = Flattened::of(&value, &Limits::DEFAULT).unwrap();
        assert_eq!(
            flat.text,
            "$.name: \"Shop\"\n$.items[0].name: \"Widget\"\n$.items[0].price: 9.5\n$.items[1].tags: []\n$[\"two words\"].x: null\n$.ok: true"
        );
        let lines = &flat.lines;
        assert_eq!(flat.common_path(&lines[1], &lines[2]), "$.items[0]");
        assert_eq!(flat.common_path(&lines[1], &lines[3]), "$.items");
        assert_eq!(flat.common_path(&lines[0], &lines[5]), "$");
        assert_eq!(flat.common_path(&lines[4], &lines[4]), "$[\"two words\"].x");
        assert!(flat.has_content);
    }

    #[test]
    fn keys_that_share_a_prefix_are_different_segments() {
        let value: Value = serde_json::from_str(r#"{"a":{"x":1,"y":2},"ab":3}"#).unwrap();
        let flat = Flattened::of(&value, &Limits::DEFAULT).unwrap();
        assert_eq!(flat.common_path(&flat.lines[0], &flat.lines[2]), "$");
    }

    #[test]
    fn empty_structures_have_no_content() {
        for text in ["{}", "[]", "null", "\"  \"", r#"{"a":[],"b":{}}"#] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert!(
                !Flattened::of(&value, &Limits::DEFAULT).unwrap().has_content,
                "{text}"
            );
        }
    }
}
