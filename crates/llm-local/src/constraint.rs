//! Constrained decoding: a JSON Schema becomes a grammar (llguidance) that masks, at every
//! step, the tokens that cannot continue a conforming document, so a structured answer of
//! the embedded model always parses and validates. The grammar sees the model's own
//! vocabulary (token bytes from the GGUF tokenizer; special tokens marked as such).

use std::sync::Arc;

use llguidance::{
    Matcher, ParserFactory,
    api::TopLevelGrammar,
    toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie},
};

use crate::tokenizer::GgufTokenizer;

/// Compiles grammars for one model's vocabulary.
pub(crate) struct Grammars {
    factory: ParserFactory,
}

impl Grammars {
    /// `end` ends a turn: the grammar allows it once the document is complete.
    pub(crate) fn new(tokenizer: &GgufTokenizer, end: u32) -> Result<Self, String> {
        let size = tokenizer.vocab_size();
        let words: Vec<Vec<u8>> = (0..size)
            .map(|id| {
                if tokenizer.is_special(id) {
                    let mut word = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                    word.extend_from_slice(tokenizer.token_name(id).as_bytes());
                    word
                } else {
                    tokenizer.token_bytes(id).to_vec()
                }
            })
            .collect();
        let mut info = TokRxInfo::new(size, end);
        info.tok_end_of_turn = Some(end);
        let trie = TokTrie::from(&info, &words);
        let env: TokEnv = Arc::new(ApproximateTokEnv::new(trie));
        let mut factory = ParserFactory::new_simple(&env).map_err(|e| e.to_string())?;
        factory.quiet();
        Ok(Self { factory })
    }

    /// A matcher that accepts exactly the JSON documents valid against `schema`.
    /// The document is compact (no whitespace between tokens): a small model let free to
    /// indent spends most of its answer, sometimes all of `max_tokens`, on newlines.
    pub(crate) fn json_schema(&self, schema: &serde_json::Value) -> Result<Matcher, String> {
        let mut schema = schema.clone();
        bound_numbers(&mut schema);
        if let Some(root) = schema.as_object_mut() {
            root.entry("x-guidance")
                .or_insert_with(|| serde_json::json!({ "whitespace_flexible": false }));
        }
        let grammar = TopLevelGrammar::from_json_schema(schema);
        let parser = self
            .factory
            .create_parser(grammar)
            .map_err(|e| format!("the schema cannot be compiled to a grammar: {e}"))?;
        Ok(Matcher::new(Ok(parser)))
    }
}

/// Keywords whose values are data, not subschemas.
const DATA_KEYWORDS: [&str; 4] = ["enum", "const", "default", "examples"];

/// The largest integer a JSON number keeps exactly in an IEEE-754 double (2⁵³ − 1, 16
/// digits; RFC 7493's interoperable range): the bound of every number the model writes.
pub(crate) const LARGEST_NUMBER: i64 = 9_007_199_254_740_991;

/// Bounds every `integer` and `number` subschema, so no schema can be satisfied only by
/// writing digits until `max_tokens` runs out (a small model, once it starts a long number,
/// rarely stops by itself):
/// - a side the schema leaves open gets ±[`LARGEST_NUMBER`]: at most 16 integer digits,
///   well within IEEE-754 double range (llguidance writes bounded numbers without an
///   exponent, so the exponent is bounded too);
/// - a `number` without a `multipleOf` becomes a multiple of 10⁻⁶: at most 6 decimals.
///
/// The answers still validate against the schema as given; they are only written within
/// these bounds. A side the schema bounds itself, or one whose bound would contradict the
/// other side (a `minimum` above the largest number), is left as the schema says.
fn bound_numbers(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            let is = |map: &serde_json::Map<String, serde_json::Value>, wanted: &str| match map
                .get("type")
            {
                Some(serde_json::Value::String(kind)) => kind == wanted,
                Some(serde_json::Value::Array(kinds)) => kinds.iter().any(|k| k == wanted),
                _ => false,
            };
            let is_number = is(map, "number");
            if is_number || is(map, "integer") {
                bound_magnitude(map);
            }
            if is_number && !map.contains_key("multipleOf") {
                map.insert("multipleOf".into(), serde_json::json!(0.000_001));
            }
            for (key, value) in map.iter_mut() {
                if !DATA_KEYWORDS.contains(&key.as_str()) {
                    bound_numbers(value);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(bound_numbers),
        _ => {}
    }
}

/// Adds `minimum: -LARGEST_NUMBER` and `maximum: LARGEST_NUMBER` where the schema has no
/// bound of its own on that side and the added bound keeps the range non-empty.
fn bound_magnitude(map: &mut serde_json::Map<String, serde_json::Value>) {
    let bound = |map: &serde_json::Map<String, serde_json::Value>, keys: [&str; 2]| {
        keys.iter()
            .find_map(|key| map.get(*key).and_then(serde_json::Value::as_f64))
    };
    let has = |map: &serde_json::Map<String, serde_json::Value>, keys: [&str; 2]| {
        keys.iter().any(|key| map.contains_key(*key))
    };
    let largest = LARGEST_NUMBER as f64;
    let lowest = bound(map, ["minimum", "exclusiveMinimum"]);
    let highest = bound(map, ["maximum", "exclusiveMaximum"]);
    if !has(map, ["minimum", "exclusiveMinimum"]) && highest.is_none_or(|high| high > -largest) {
        map.insert("minimum".into(), serde_json::json!(-LARGEST_NUMBER));
    }
    if !has(map, ["maximum", "exclusiveMaximum"]) && lowest.is_none_or(|low| low < largest) {
        map.insert("maximum".into(), serde_json::json!(LARGEST_NUMBER));
    }
}

/// Sets every token the matcher does not allow next to negative infinity.
pub(crate) fn mask_logits(matcher: &mut Matcher, logits: &mut [f32]) -> Result<(), String> {
    let allowed = matcher.compute_mask().map_err(|e| e.to_string())?;
    for (id, logit) in logits.iter_mut().enumerate() {
        if !allowed.is_allowed(id as u32) {
            *logit = f32::NEG_INFINITY;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{LARGEST_NUMBER, bound_numbers};

    #[test]
    fn numbers_get_a_fraction_bound_wherever_they_are_but_data_is_left_alone() {
        let mut schema = json!({"type": "object", "properties": {
            "price": {"type": "number", "minimum": 0},
            "ratio": {"type": ["number", "null"]},
            "step": {"type": "number", "multipleOf": 0.5},
            "list": {"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "string"}]}},
            "type": {"const": {"type": "number"}}
        }});
        bound_numbers(&mut schema);
        let properties = &schema["properties"];
        assert_eq!(properties["price"]["multipleOf"], json!(0.000_001));
        assert_eq!(properties["ratio"]["multipleOf"], json!(0.000_001));
        assert_eq!(properties["step"]["multipleOf"], json!(0.5));
        assert_eq!(
            properties["list"]["items"]["anyOf"][0]["multipleOf"],
            json!(0.000_001)
        );
        assert_eq!(
            properties["list"]["items"]["anyOf"][1].get("multipleOf"),
            None
        );
        assert_eq!(properties["type"]["const"], json!({"type": "number"}));
        assert_eq!(schema.get("multipleOf"), None);
    }

    #[test]
    fn integers_and_numbers_get_magnitude_bounds_where_the_schema_leaves_a_side_open() {
        let mut schema = json!({"type": "object", "properties": {
            "count": {"type": "integer"},
            "age": {"type": "integer", "minimum": 0},
            "below": {"type": "number", "exclusiveMaximum": 10},
            "huge": {"type": "integer", "minimum": 1e20},
            "any": {"type": ["integer", "string"]},
            "name": {"type": "string"}
        }});
        bound_numbers(&mut schema);
        let p = &schema["properties"];
        assert_eq!(p["count"]["minimum"], json!(-LARGEST_NUMBER));
        assert_eq!(p["count"]["maximum"], json!(LARGEST_NUMBER));
        assert_eq!(p["count"].get("multipleOf"), None, "integers stay integers");
        assert_eq!(p["age"]["minimum"], json!(0));
        assert_eq!(p["age"]["maximum"], json!(LARGEST_NUMBER));
        assert_eq!(p["below"]["minimum"], json!(-LARGEST_NUMBER));
        assert_eq!(p["below"].get("maximum"), None);
        assert_eq!(p["huge"].get("maximum"), None, "the range stays non-empty");
        assert_eq!(p["any"]["maximum"], json!(LARGEST_NUMBER));
        assert_eq!(p["name"].get("maximum"), None);
        assert_eq!(LARGEST_NUMBER.to_string().len(), 16);
    }
}
