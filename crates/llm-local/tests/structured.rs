//! Constrained decoding on the real SmolLM2 GGUF: whatever the small model would have said,
//! a JSON-schema answer always parses and validates against its schema.

#![allow(clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use tessera_llm_local::{LocalEngineOptions, testing};
use tessera_models::{
    ChatMessage, ChatModel, ChatRequest, FinishReason, JsonSchemaFormat, ProviderError, Role,
    ToolChoice, ToolSpec, complete,
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
        (
            // Two objects merged by `allOf` through `$ref`: closing each definition alone
            // would forbid what the other requires; the schema is then compiled as given.
            "Describe a city.",
            json!({"allOf": [{"$ref": "#/$defs/Named"}, {"$ref": "#/$defs/Counted"}],
            "$defs": {
                "Named": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}},
                          "required": ["name"]},
                "Counted": {"type": "object", "properties": {"people": {"type": "integer", "minimum": 0}},
                            "required": ["people"]}
            }}),
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

/// A pydantic model with one `str` field as LangChain's `bind_tools` sends it
/// (`convert_to_openai_tool`, captured from langchain-openai 1.7.4): no
/// `additionalProperties`, no `maxLength`, no `strict`.
fn langchain_tool(name: &str, description: &str, field: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: Some(description.into()),
        parameters: json!({"properties": {field: {"type": "string"}},
                           "required": [field], "type": "object"}),
    }
}

/// LangChain's `bind_tools([GetWeather, GetTime], tool_choice=…)` and
/// `with_structured_output(GetTime, method="function_calling")` on the embedded model
/// (`tests/openai-clients/langchain_tools.py`): each forced call finishes as a call of the
/// right tool, with arguments that conform, well before LangChain's `max_tokens`.
#[tokio::test]
async fn langchain_s_forced_calls_of_open_schemas_finish() {
    let engine = testing::engine(LocalEngineOptions::default());
    let weather = langchain_tool("GetWeather", "The current weather in a city.", "city");
    let time = langchain_tool("GetTime", "The current time in a time zone.", "zone");
    let cases = [
        (
            "What is the weather in Paris?",
            vec![weather.clone(), time.clone()],
            ToolChoice::Required,
        ),
        (
            "What is the weather in Paris?",
            vec![weather.clone(), time.clone()],
            ToolChoice::Function("GetTime".into()),
        ),
        (
            "What time is it in Tokyo?",
            vec![time.clone()],
            ToolChoice::Function("GetTime".into()),
        ),
    ];
    for (question, tools, choice) in cases {
        let request = ChatRequest {
            model: "smollm2".into(),
            messages: vec![ChatMessage::new(Role::User, question)],
            tools: tools.clone(),
            tool_choice: choice.clone(),
            max_tokens: Some(256),
            temperature: Some(0.0),
            ..ChatRequest::default()
        };
        let answer = complete(&engine, request).await.expect("an answer");
        // The constrained text as the model wrote it (shown with `--no-capture`).
        let written: Vec<String> = (answer.tool_calls.iter())
            .map(|call| {
                format!(
                    "{{\"name\":{:?},\"arguments\":{}}}",
                    call.name, call.arguments
                )
            })
            .collect();
        println!(
            "{question} ({choice:?}): {written:?} ({:?})",
            answer.finish_reason
        );
        assert_eq!(
            answer.finish_reason,
            Some(FinishReason::ToolCalls),
            "{question} ({choice:?}): {written:?} {:?}",
            answer.content
        );
        let [call] = &answer.tool_calls[..] else {
            panic!("{question} ({choice:?}): {written:?}");
        };
        if let ToolChoice::Function(name) = &choice {
            assert_eq!(&call.name, name);
        }
        let tool = (tools.iter())
            .find(|tool| tool.name == call.name)
            .expect("a call of an offered tool");
        let arguments: Value = serde_json::from_str(&call.arguments).expect("JSON arguments");
        let validator = jsonschema::validator_for(&tool.parameters).expect("a valid schema");
        assert!(validator.is_valid(&arguments), "{written:?}");
    }
}
