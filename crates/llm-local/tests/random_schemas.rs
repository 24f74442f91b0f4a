//! Constrained decoding over 50 JSON schemas drawn from a fixed seed: objects with enums,
//! arrays, nested objects and numbers with bounds. Every answer of the real 135M model must
//! finish, parse, and validate against its schema.

#![allow(clippy::expect_used, clippy::panic)]

use serde_json::{Map, Value, json};
use tessera_llm_local::{LocalEngineOptions, testing};
use tessera_models::{ChatMessage, ChatRequest, FinishReason, JsonSchemaFormat, Role, complete};

const SCHEMAS: usize = 50;
const SEED: u64 = 0x7e55_e4a5;

/// SplitMix64: a small deterministic generator, so the 50 schemas are the same on every run.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    fn between(&mut self, low: i64, high: i64) -> i64 {
        let span = u64::try_from(high - low + 1).expect("high ≥ low");
        low + i64::try_from(self.next() % span).expect("small span")
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        let last = i64::try_from(items.len() - 1).expect("few items");
        &items[usize::try_from(self.between(0, last)).expect("non-negative")]
    }
}

const NAMES: &[&str] = &[
    "name", "colour", "size", "count", "price", "active", "tags", "owner", "city", "score",
    "level", "kind", "items", "rating", "status",
];
const WORDS: &[&str] = &[
    "red", "green", "blue", "small", "large", "open", "closed", "north", "south", "alpha", "beta",
    "gamma",
];

fn enum_schema(draw: &mut Draw) -> Value {
    let count = usize::try_from(draw.between(2, 4)).expect("small");
    let mut values: Vec<&str> = Vec::new();
    while values.len() < count {
        let word = *draw.pick(WORDS);
        if !values.contains(&word) {
            values.push(word);
        }
    }
    json!({ "enum": values })
}

fn number_schema(draw: &mut Draw) -> Value {
    let low = draw.between(-50, 50);
    let high = low + draw.between(1, 100);
    if draw.between(0, 1) == 0 {
        json!({"type": "integer", "minimum": low, "maximum": high})
    } else {
        json!({"type": "number", "minimum": low, "maximum": high})
    }
}

/// A property's schema; nested objects only while `depth` allows.
fn value_schema(draw: &mut Draw, depth: u32) -> Value {
    let kinds = if depth > 0 { 6 } else { 5 };
    match draw.between(0, kinds - 1) {
        0 => json!({"type": "string", "maxLength": draw.between(4, 20)}),
        1 => number_schema(draw),
        2 => json!({"type": "boolean"}),
        3 => enum_schema(draw),
        4 => {
            let items = if draw.between(0, 1) == 0 {
                enum_schema(draw)
            } else {
                number_schema(draw)
            };
            let min = draw.between(0, 2);
            json!({"type": "array", "items": items, "minItems": min, "maxItems": min + draw.between(0, 2)})
        }
        _ => object_schema(draw, depth - 1),
    }
}

fn object_schema(draw: &mut Draw, depth: u32) -> Value {
    let count = usize::try_from(draw.between(1, 4)).expect("small");
    let mut properties = Map::new();
    while properties.len() < count {
        let name = *draw.pick(NAMES);
        if !properties.contains_key(name) {
            properties.insert(name.to_owned(), value_schema(draw, depth));
        }
    }
    // Most properties required; an optional one now and then.
    let required: Vec<&String> = properties
        .keys()
        .filter(|_| draw.between(0, 4) > 0)
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

#[tokio::test]
async fn fifty_random_schemas_all_get_valid_answers() {
    let engine = testing::engine(LocalEngineOptions::default());
    let mut draw = Draw(SEED);
    let mut failures = Vec::new();
    for number in 0..SCHEMAS {
        let schema = object_schema(&mut draw, 2);
        let request = ChatRequest {
            model: "smollm2".into(),
            messages: vec![ChatMessage::new(
                Role::User,
                "Fill in this record with plausible values.",
            )],
            response_format: Some(JsonSchemaFormat {
                name: "record".into(),
                strict: true,
                schema: schema.clone(),
            }),
            max_tokens: Some(384),
            temperature: Some(0.0),
            ..ChatRequest::default()
        };
        let answer = complete(&engine, request).await.expect("an answer");
        if answer.finish_reason != Some(FinishReason::Stop) {
            failures.push(format!(
                "#{number}: finished {:?}: {}",
                answer.finish_reason, answer.content
            ));
            continue;
        }
        let document: Value = match serde_json::from_str(&answer.content) {
            Ok(document) => document,
            Err(error) => {
                failures.push(format!("#{number}: not JSON ({error}): {}", answer.content));
                continue;
            }
        };
        let validator = jsonschema::validator_for(&schema).expect("a valid schema");
        let errors: Vec<String> = validator
            .iter_errors(&document)
            .map(|e| e.to_string())
            .collect();
        if !errors.is_empty() {
            failures.push(format!("#{number}: {schema} → {document}: {errors:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {SCHEMAS} answers failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_schemas_cover_every_kind_and_are_the_same_each_run() {
    let draw_all = || {
        let mut draw = Draw(SEED);
        (0..SCHEMAS)
            .map(|_| object_schema(&mut draw, 2))
            .collect::<Vec<_>>()
    };
    let schemas = draw_all();
    assert_eq!(schemas, draw_all());
    let text = serde_json::to_string(&schemas).expect("serializable");
    for kind in [
        "\"enum\"",
        "\"type\":\"array\"",
        "\"type\":\"number\"",
        "\"type\":\"integer\"",
        "\"minimum\"",
        "\"type\":\"boolean\"",
        "\"maxLength\"",
    ] {
        assert!(text.contains(kind), "no {kind} among the schemas");
    }
    // Nested objects: some property is itself an object.
    let nested = schemas.iter().any(|schema| {
        schema["properties"]
            .as_object()
            .is_some_and(|p| p.values().any(|v| v["type"] == "object"))
    });
    assert!(nested, "no nested object among the schemas");
}
