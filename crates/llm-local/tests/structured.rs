//! Constrained decoding on the real SmolLM2 GGUF: whatever the small model would have said,
//! a JSON-schema answer always parses and validates against its schema.

#![allow(clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use tessera_llm_local::{LocalEngineOptions, testing};
use tessera_models::{
    ChatMessage, ChatModel, ChatRequest, FinishReason, JsonSchemaFormat, ProviderError, Role,
    ToolSpec, complete,
};

fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "Describe a person.",
            json!({"type": "object", "properties": {
                "name": {"type": "string", "maxLength": 20},
                "age": {"type": "integer", "minimum": 0, "maximum": 120}
            }, "required": ["name", "age"], "additionalProperties": false}),
        ),
        (
            "Is the sky blue?",
            json!({"type": "object", "properties": {"answer": {"type": "boolean"}},
                   "required": ["answer"], "additionalProperties": false}),
        ),
        (
            "Pick a colour.",
            json!({"type": "object", "properties": {"colour": {"enum": ["red", "green", "blue"]}},
                   "required": ["colour"], "additionalProperties": false}),
        ),
        (
            "List three fruits.",
            json!({"type": "array", "items": {"type": "string", "maxLength": 12},
                   "minItems": 3, "maxItems": 3}),
        ),
        (
            "What is the capital of France?",
            json!({"type": "object", "properties": {
                "city": {"type": "string", "maxLength": 30},
                "country": {"type": "string", "maxLength": 30},
                "population": {"type": "number"}
            }, "required": ["city", "country"], "additionalProperties": false}),
        ),
        (
            "Give a score.",
            json!({"type": "integer", "minimum": 1, "maximum": 10}),
        ),
        (
            "Describe a book.",
            json!({"type": "object", "properties": {
                "title": {"type": "string", "maxLength": 25},
                "tags": {"type": "array", "items": {"enum": ["fiction", "history", "science"]}, "maxItems": 2},
                "author": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}},
                           "required": ["name"], "additionalProperties": false}
            }, "required": ["title", "tags", "author"], "additionalProperties": false}),
        ),
        (
            "Name a planet.",
            json!({"type": "string", "pattern": "^[A-Z][a-z]{2,9}$"}),
        ),
    ]
}

#[tokio::test]
async fn every_structured_answer_conforms_to_its_schema() {
    let engine = testing::engine(LocalEngineOptions::default());
    for (question, schema) in schemas() {
        let request = ChatRequest {
            model: "smollm2".into(),
            messages: vec![ChatMessage::new(Role::User, question)],
            response_format: Some(JsonSchemaFormat {
                name: "answer".into(),
                strict: true,
                schema: schema.clone(),
            }),
            max_tokens: Some(160),
            temperature: Some(0.0),
            ..ChatRequest::default()
        };
        let answer = complete(&engine, request).await.expect("an answer");
        assert_eq!(
            answer.finish_reason,
            Some(FinishReason::Stop),
            "{question}: {}",
            answer.content
        );
        let document: Value = serde_json::from_str(&answer.content)
            .unwrap_or_else(|e| panic!("{question}: not JSON ({e}): {}", answer.content));
        let validator = jsonschema::validator_for(&schema).expect("a valid schema");
        let errors: Vec<String> = validator
            .iter_errors(&document)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{question}: {document} → {errors:?}");
    }
}

#[tokio::test]
async fn tools_are_called_with_conforming_arguments_then_answered() {
    let engine = testing::engine(LocalEngineOptions::default());
    assert!(engine.capabilities().json_schema && engine.capabilities().tools);
    let weather = ToolSpec {
        name: "get_weather".into(),
        description: Some("The current weather in a city.".into()),
        parameters: json!({"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 30},
            "unit": {"enum": ["celsius", "fahrenheit"]}
        }, "required": ["city", "unit"], "additionalProperties": false}),
    };
    let time = ToolSpec {
        name: "get_time".into(),
        description: Some("The current time in a time zone.".into()),
        parameters: json!({"type": "object", "properties": {"zone": {"type": "string", "maxLength": 30}},
                           "required": ["zone"], "additionalProperties": false}),
    };
    let mut messages = vec![ChatMessage::new(Role::User, "What is the weather in Oslo?")];
    let request = |messages: Vec<ChatMessage>| ChatRequest {
        model: "smollm2".into(),
        messages,
        tools: vec![weather.clone(), time.clone()],
        max_tokens: Some(96),
        temperature: Some(0.0),
        ..ChatRequest::default()
    };
    let answer = complete(&engine, request(messages.clone()))
        .await
        .expect("a call");
    assert_eq!(answer.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(answer.tool_calls.len(), 1, "{answer:?}");
    let call = &answer.tool_calls[0];
    let schema = if call.name == "get_weather" {
        &weather
    } else {
        &time
    }
    .parameters
    .clone();
    let arguments: Value = serde_json::from_str(&call.arguments).expect("JSON arguments");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    assert!(validator.is_valid(&arguments), "{arguments}");

    // With the result, the model answers in text.
    let mut assistant = ChatMessage::new(Role::Assistant, "");
    assistant.tool_calls = answer.tool_calls.clone();
    let mut result = ChatMessage::new(Role::Tool, "{\"temperature\": 18, \"sky\": \"clear\"}");
    result.tool_call_id = Some(call.id.clone());
    messages.extend([assistant, result]);
    let reply = complete(&engine, request(messages))
        .await
        .expect("an answer");
    assert!(reply.tool_calls.is_empty());
    assert!(!reply.content.is_empty());
}

#[tokio::test]
async fn schemas_that_cannot_be_compiled_are_refused_before_generating() {
    let engine = testing::engine(LocalEngineOptions::default());
    let request = ChatRequest {
        messages: vec![ChatMessage::new(Role::User, "x")],
        response_format: Some(JsonSchemaFormat {
            name: "x".into(),
            strict: true,
            schema: json!({"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}),
        }),
        ..ChatRequest::default()
    };
    assert!(matches!(
        engine.stream(request).await.err(),
        Some(ProviderError::InvalidRequest(_))
    ));
}

/// Questions whose answers the greedy model writes as long runs of digits: without bounds
/// an unbounded `integer` or `number` goes on until `max_tokens` cuts it off.
const LONG_NUMBERS: [&str; 4] = [
    "What is 2 to the power of 200? Answer with all its digits.",
    "Write the first 100 digits of pi as one number.",
    "Count from 1 to 50 without spaces, as one number.",
    "What is the population of the world?",
];

#[tokio::test]
async fn unbounded_numbers_are_written_within_bounds_and_finish() {
    let engine = testing::engine(LocalEngineOptions::default());
    for (question, kind) in LONG_NUMBERS
        .iter()
        .flat_map(|q| [(q, "integer"), (q, "number")])
    {
        let schema = json!({"type": "object", "properties": {"value": {"type": kind}},
                            "required": ["value"], "additionalProperties": false});
        let request = ChatRequest {
            model: "smollm2".into(),
            messages: vec![ChatMessage::new(Role::User, *question)],
            response_format: Some(JsonSchemaFormat {
                name: "value".into(),
                strict: true,
                schema: schema.clone(),
            }),
            max_tokens: Some(64),
            temperature: Some(0.0),
            ..ChatRequest::default()
        };
        let answer = complete(&engine, request).await.expect("an answer");
        assert_eq!(
            answer.finish_reason,
            Some(FinishReason::Stop),
            "{question} ({kind}): {}",
            answer.content
        );
        let document: Value = serde_json::from_str(&answer.content).expect("JSON");
        let value = document["value"].to_string();
        let integer_digits = value
            .trim_start_matches('-')
            .split('.')
            .next()
            .map_or(0, str::len);
        assert!(
            integer_digits <= 16 && !value.contains(['e', 'E']),
            "{question} ({kind}): {value}"
        );
        assert!(
            document["value"].as_f64().is_some_and(f64::is_finite),
            "{value}"
        );
    }
}
