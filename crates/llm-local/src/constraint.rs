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
        let mut closed = schema.clone();
        close_objects(&mut closed, true);
        // Closing is only ever a narrowing; should it leave a combination of subschemas
        // unsatisfiable, the schema as given is compiled instead.
        self.compile(closed).or_else(|_| self.compile(schema))
    }

    fn compile(&self, schema: serde_json::Value) -> Result<Matcher, String> {
        let grammar = TopLevelGrammar::from_json_schema(schema);
        let parser = self
            .factory
            .create_parser(grammar)
            .map_err(|e| format!("the schema cannot be compiled to a grammar: {e}"))?;
        Ok(Matcher::new(Ok(parser)))
    }
}

/// Keywords that, next to `properties`, admit further properties or apply more subschemas
/// to the same object: an object with one of them is left open.
const COMBINING_KEYWORDS: [&str; 14] = [
    "additionalProperties",
    "patternProperties",
    "unevaluatedProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "dependencies",
];

/// Keywords by which a schema constrains an object's properties: its in-place subschemas
/// (`anyOf` members…) apply to the same object, so they are left open.
const OBJECT_KEYWORDS: [&str; 8] = [
    "properties",
    "required",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "dependentRequired",
    "dependencies",
    "minProperties",
];

/// Closes every object subschema that names its `properties` and says nothing of others
/// (`additionalProperties: false`), so the model writes only the properties the schema
/// names. JSON Schema admits any other property by default, and a small model, offered a
/// comma after the last named property, goes on inventing keys and values until
/// `max_tokens` (LangChain's pydantic tools, which state no `additionalProperties`, did).
/// An undeclared property is never what a tool or a reader of the schema expects.
///
/// `closable` is false for a subschema applied to the same object as others (an `allOf`
/// member, an `anyOf` member of a schema that constrains properties itself), where closing
/// one part would forbid the properties another names. The answers still validate against
/// the schema as given; they are only written within its named properties.
fn close_objects(schema: &mut serde_json::Value, closable: bool) {
    let serde_json::Value::Object(map) = schema else {
        if let serde_json::Value::Array(items) = schema {
            items
                .iter_mut()
                .for_each(|item| close_objects(item, closable));
        }
        return;
    };
    let named = map
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .map(serde_json::Map::len);
    let combined = COMBINING_KEYWORDS.iter().any(|key| map.contains_key(*key));
    let fits = |named: usize| {
        (map.get("minProperties").and_then(serde_json::Value::as_u64))
            .is_none_or(|least| least <= named as u64)
    };
    if let Some(named) = named
        && closable
        && !combined
        && fits(named)
    {
        map.insert(
            "additionalProperties".into(),
            serde_json::Value::Bool(false),
        );
    }
    let members_closable = closable && !OBJECT_KEYWORDS.iter().any(|key| map.contains_key(*key));
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            // Data, and conditions whose narrowing would widen what the schema admits.
            key if DATA_KEYWORDS.contains(&key) || key == "not" || key == "if" => {}
            // Alternatives: narrowing one narrows the union.
            "anyOf" => close_objects(value, members_closable),
            // Applied to the same object as each other (`oneOf`'s "exactly one" too).
            "allOf" | "oneOf" | "then" | "else" => close_objects(value, false),
            "dependentSchemas" | "dependencies" => {
                for member in value
                    .as_object_mut()
                    .into_iter()
                    .flat_map(|m| m.values_mut())
                {
                    close_objects(member, false);
                }
            }
            // Maps from a name to the subschema of another value.
            "properties" | "patternProperties" | "$defs" | "definitions" => {
                for member in value
                    .as_object_mut()
                    .into_iter()
                    .flat_map(|m| m.values_mut())
                {
                    close_objects(member, true);
                }
            }
            _ => close_objects(value, true),
        }
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

    use super::{LARGEST_NUMBER, bound_numbers, close_objects};

    fn closed(mut schema: serde_json::Value) -> serde_json::Value {
        close_objects(&mut schema, true);
        schema
    }

    #[test]
    fn objects_that_name_their_properties_are_closed_wherever_they_are() {
        // LangChain's pydantic tool, with a nested model and a list of them.
        let schema = closed(json!({"type": "object", "properties": {
            "city": {"type": "string"},
            "where": {"$ref": "#/$defs/Place"},
            "stops": {"type": "array", "items": {"type": "object", "properties": {"at": {"type": "string"}}}},
            "either": {"anyOf": [{"type": "object", "properties": {"a": {}}}, {"type": "null"}]},
            "properties": {"type": "object", "properties": {"x": {}}}
        }, "required": ["city"], "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": "number"}}}}}));
        assert_eq!(schema["additionalProperties"], json!(false));
        let p = &schema["properties"];
        assert_eq!(p["city"].get("additionalProperties"), None);
        assert_eq!(p["stops"]["items"]["additionalProperties"], json!(false));
        assert_eq!(
            p["either"]["anyOf"][0]["additionalProperties"],
            json!(false)
        );
        assert_eq!(p["properties"]["additionalProperties"], json!(false));
        assert_eq!(
            p.get("additionalProperties"),
            None,
            "a property map is not a schema"
        );
        assert_eq!(
            schema["$defs"]["Place"]["additionalProperties"],
            json!(false)
        );
    }

    #[test]
    fn objects_the_schema_opens_or_combines_are_left_as_they_are() {
        let schema = closed(json!({"type": "object", "properties": {
            "open": {"type": "object", "properties": {"a": {}}, "additionalProperties": true},
            "typed": {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"}},
            "merged": {"allOf": [
                {"type": "object", "properties": {"a": {}}},
                {"type": "object", "properties": {"b": {"type": "object", "properties": {"c": {}}}}}
            ]},
            "extended": {"type": "object", "properties": {"a": {}}, "anyOf": [
                {"properties": {"b": {}}, "required": ["b"]}, {"required": ["a"]}
            ]},
            "many": {"type": "object", "properties": {"a": {}}, "minProperties": 2},
            "unnamed": {"type": "object"},
            "data": {"const": {"properties": {"a": 1}}},
            "negated": {"not": {"type": "object", "properties": {"a": {}}}}
        }}));
        let p = &schema["properties"];
        assert_eq!(p["open"]["additionalProperties"], json!(true));
        assert_eq!(
            p["typed"]["additionalProperties"],
            json!({"type": "integer"})
        );
        let merged = &p["merged"]["allOf"];
        assert_eq!(merged[0].get("additionalProperties"), None);
        assert_eq!(merged[1].get("additionalProperties"), None);
        assert_eq!(
            merged[1]["properties"]["b"]["additionalProperties"],
            json!(false),
            "a property of a member is an object of its own"
        );
        assert_eq!(p["extended"].get("additionalProperties"), None);
        assert_eq!(p["extended"]["anyOf"][0].get("additionalProperties"), None);
        assert_eq!(p["many"].get("additionalProperties"), None);
        assert_eq!(p["unnamed"].get("additionalProperties"), None);
        assert_eq!(p["data"]["const"], json!({"properties": {"a": 1}}));
        assert_eq!(p["negated"]["not"].get("additionalProperties"), None);
    }

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
