//! The check of structured output, for models whose capabilities include `json_schema`: the
//! answer to a request with a JSON-schema response format is a document conforming to it.

use serde_json::{Value, json};

use super::{
    reading::read,
    requests::ask,
    subject::{ChatModelUnderTest, Verdict, skipped},
};
use crate::{FinishReason, JsonSchemaFormat};

/// Room for `{"answer": true}` with some whitespace.
const DOCUMENT_TOKENS: u32 = 24;

/// With a JSON-schema response format, the answer is JSON conforming to the schema: here an
/// object with one boolean `answer` and nothing else; finished with `Stop` (a document cut
/// by the limit would not conform).
pub async fn a_json_schema_answer_is_a_conforming_document(
    subject: &ChatModelUnderTest,
) -> Verdict {
    if !subject.model.capabilities().json_schema {
        return skipped("the model's capabilities do not include json_schema");
    }
    let mut request = ask(subject, "Is the sky blue? Answer in JSON.", DOCUMENT_TOKENS);
    request.response_format = Some(JsonSchemaFormat {
        name: "yes_or_no".into(),
        strict: true,
        schema: json!({
            "type": "object",
            "properties": {"answer": {"type": "boolean"}},
            "required": ["answer"],
            "additionalProperties": false
        }),
    });
    let answer = read(subject, request, "a JSON-schema answer").await;
    assert_eq!(
        *answer.finish_reason(),
        FinishReason::Stop,
        "a JSON-schema answer: {:?}",
        answer.text()
    );
    let document: Value = serde_json::from_str(answer.text()).unwrap_or_else(|e| {
        panic!(
            "a JSON-schema answer that is not JSON ({e}): {:?}",
            answer.text()
        )
    });
    let conforms = document.as_object().is_some_and(|object| {
        object.len() == 1 && object.get("answer").is_some_and(Value::is_boolean)
    });
    assert!(conforms, "{document} does not conform to the schema");
    Verdict::Held
}
