//! What an upstream's error document says, in every shape seen in the wild.

const MAX_ERROR_TEXT: usize = 500;

/// Cuts an upstream text to a reasonable length for an error message.
pub fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(MAX_ERROR_TEXT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The message and status of an error document: `{"error": {"message": …, "code": …}}`
/// (OpenAI; Anthropic's `{"type": "error", "error": {"type": …, "message": …}}` too), `{"error": "…"}` (Ollama), `{"message": …}`, `{"detail": …}` (FastAPI).
pub fn error_details(document: &serde_json::Value) -> (Option<String>, Option<u16>) {
    let error = document.get("error").unwrap_or(document);
    let message = match error {
        serde_json::Value::String(text) => Some(text.clone()),
        _ => ["message", "detail", "msg"].iter().find_map(|key| {
            error
                .get(*key)
                .or_else(|| document.get(*key))
                .and_then(|value| match value {
                    serde_json::Value::String(text) => Some(text.clone()),
                    serde_json::Value::Null => None,
                    other => Some(other.to_string()),
                })
        }),
    };
    let status = ["code", "status"].iter().find_map(|key| {
        let value = error.get(*key)?;
        let number = match value {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        }?;
        u16::try_from(number)
            .ok()
            .filter(|status| (100..600).contains(status))
    });
    (message.map(|m| clip(&m)), status)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn error_documents_of_every_known_shape_give_their_message() {
        let cases = [
            (
                json!({"error": {"message": "bad model", "code": 400}}),
                Some("bad model"),
                Some(400),
            ),
            (
                json!({"error": "model not found"}),
                Some("model not found"),
                None,
            ),
            (json!({"detail": "Not Found"}), Some("Not Found"), None),
            (
                json!({"object": "error", "message": "too long", "code": 400}),
                Some("too long"),
                Some(400),
            ),
            (json!({"error": {"code": "rate_limit"}}), None, None),
            (
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
                Some("Overloaded"),
                None,
            ),
        ];
        for (document, message, status) in cases {
            let (m, s) = error_details(&document);
            assert_eq!((m.as_deref(), s), (message, status), "{document}");
        }
    }

    #[test]
    fn clip_cuts_long_texts_on_a_character_boundary() {
        let long = "é".repeat(600);
        let clipped = clip(&long);
        assert_eq!(clipped.chars().count(), MAX_ERROR_TEXT + 1);
        assert!(clipped.ends_with('…'));
    }
}
