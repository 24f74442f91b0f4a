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
        bound_fraction_digits(&mut schema);
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

/// Makes every `number` subschema without a `multipleOf` a multiple of 10⁻⁶: a small model
/// may otherwise write fraction digits until `max_tokens` runs out. The answers still
/// validate against the schema as given; they are only written with at most 6 decimals.
fn bound_fraction_digits(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            let is_number = match map.get("type") {
                Some(serde_json::Value::String(kind)) => kind == "number",
                Some(serde_json::Value::Array(kinds)) => kinds.iter().any(|k| k == "number"),
                _ => false,
            };
            if is_number && !map.contains_key("multipleOf") {
                map.insert("multipleOf".into(), serde_json::json!(0.000_001));
            }
            for (key, value) in map.iter_mut() {
                if !DATA_KEYWORDS.contains(&key.as_str()) {
                    bound_fraction_digits(value);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(bound_fraction_digits),
        _ => {}
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

    use super::bound_fraction_digits;

    #[test]
    fn numbers_get_a_fraction_bound_wherever_they_are_but_data_is_left_alone() {
        let mut schema = json!({"type": "object", "properties": {
            "price": {"type": "number", "minimum": 0},
            "ratio": {"type": ["number", "null"]},
            "step": {"type": "number", "multipleOf": 0.5},
            "list": {"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "string"}]}},
            "type": {"const": {"type": "number"}}
        }});
        bound_fraction_digits(&mut schema);
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
}
