//! A batch's input file read and checked before anything runs: one JSON object a line with
//! a unique `custom_id`, `method` `POST`, the batch's endpoint as `url`, and a `body`
//! object. Every refused line is named (up to a bound), so a client fixes its file once.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::{BatchEndpoint, BatchProblem};

/// The most lines a batch takes (OpenAI's bound).
pub const MAX_LINES: usize = 50_000;

/// The longest `custom_id`, in characters.
pub const MAX_CUSTOM_ID_CHARS: usize = 512;

/// How many refused lines a failed batch names at most.
const MAX_PROBLEMS: usize = 100;

/// One request of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputLine {
    /// Its place in the input, from 0 (blank lines are not counted).
    pub line: u32,
    pub custom_id: String,
    pub body: Map<String, Value>,
}

/// The requests of an input file, or why it is refused.
pub fn parse_input(
    content: &[u8],
    endpoint: BatchEndpoint,
) -> Result<Vec<InputLine>, Vec<BatchProblem>> {
    let Ok(text) = std::str::from_utf8(content) else {
        return Err(vec![problem(
            None,
            "invalid_json_line",
            "the file is not UTF-8 text",
        )]);
    };
    let mut lines = Vec::new();
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for (number, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let number = u32::try_from(number + 1).unwrap_or(u32::MAX);
        if lines.len() + problems.len() >= MAX_LINES {
            problems.push(problem(
                Some(number),
                "too_many_requests",
                format!("a batch takes at most {MAX_LINES} requests"),
            ));
            break;
        }
        match parse_line(raw, endpoint) {
            Ok((custom_id, body)) => {
                if !seen.insert(custom_id.clone()) {
                    problems.push(problem(
                        Some(number),
                        "duplicate_custom_id",
                        format!("the custom_id `{custom_id}` is used by an earlier line"),
                    ));
                } else {
                    let line = u32::try_from(lines.len()).unwrap_or(u32::MAX);
                    lines.push(InputLine {
                        line,
                        custom_id,
                        body,
                    });
                }
            }
            Err((code, message)) => problems.push(problem(Some(number), code, message)),
        }
        if problems.len() >= MAX_PROBLEMS {
            break;
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    if lines.is_empty() {
        return Err(vec![problem(
            None,
            "empty_file",
            "the file has no requests",
        )]);
    }
    Ok(lines)
}

fn problem(line: Option<u32>, code: &str, message: impl Into<String>) -> BatchProblem {
    BatchProblem {
        code: code.to_owned(),
        message: message.into(),
        param: None,
        line,
    }
}

type LineError = (&'static str, String);

fn parse_line(
    raw: &str,
    endpoint: BatchEndpoint,
) -> Result<(String, Map<String, Value>), LineError> {
    let Ok(Value::Object(mut request)) = serde_json::from_str::<Value>(raw) else {
        return Err(("invalid_json_line", "the line is not a JSON object".into()));
    };
    let custom_id = match request.remove("custom_id") {
        Some(Value::String(id)) if !id.is_empty() && id.chars().count() <= MAX_CUSTOM_ID_CHARS => {
            id
        }
        Some(Value::String(_)) => {
            return Err((
                "invalid_custom_id",
                format!("custom_id must have 1 to {MAX_CUSTOM_ID_CHARS} characters"),
            ));
        }
        _ => return Err(("missing_custom_id", "custom_id must be a string".into())),
    };
    match request.get("method").and_then(Value::as_str) {
        Some("POST") => {}
        _ => return Err(("invalid_method", "method must be `POST`".into())),
    }
    match request.get("url").and_then(Value::as_str) {
        Some(url) if url == endpoint.as_str() => {}
        _ => {
            return Err((
                "mismatched_endpoint",
                format!("url must be the batch's endpoint, `{}`", endpoint.as_str()),
            ));
        }
    }
    let Some(Value::Object(body)) = request.remove("body") else {
        return Err(("invalid_body", "body must be a JSON object".into()));
    };
    if !matches!(body.get("model"), Some(Value::String(_))) {
        return Err(("missing_model", "body.model must be a string".into()));
    }
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        return Err((
            "invalid_body",
            "body.stream must not be true: a batch's answers are whole".into(),
        ));
    }
    if endpoint == BatchEndpoint::Responses
        && body.get("background").and_then(Value::as_bool) == Some(true)
    {
        return Err((
            "invalid_body",
            "body.background must not be true: a batch runs in the background already".into(),
        ));
    }
    Ok((custom_id, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, url: &str, body: &str) -> String {
        format!(r#"{{"custom_id":"{id}","method":"POST","url":"{url}","body":{body}}}"#)
    }

    #[test]
    fn good_lines_are_numbered_from_zero_skipping_blank_ones() {
        let text = [
            line("a", "/v1/embeddings", r#"{"model":"m","input":"x"}"#),
            String::new(),
            line("b", "/v1/embeddings", r#"{"model":"m","input":"y"}"#),
        ]
        .join("\n");
        let lines = parse_input(text.as_bytes(), BatchEndpoint::Embeddings).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!((lines[1].line, lines[1].custom_id.as_str()), (1, "b"));
        assert_eq!(lines[0].body["input"], "x");
    }

    #[test]
    fn each_refused_line_is_named_with_its_number() {
        let text = [
            line("a", "/v1/chat/completions", r#"{"model":"m"}"#),
            "not json".to_owned(),
            line("a", "/v1/chat/completions", r#"{"model":"m"}"#),
            line("c", "/v1/embeddings", r#"{"model":"m"}"#),
            line(
                "d",
                "/v1/chat/completions",
                r#"{"model":"m","stream":true}"#,
            ),
            line("e", "/v1/chat/completions", r#"{"messages":[]}"#),
            r#"{"custom_id":"f","method":"GET","url":"/v1/chat/completions","body":{}}"#.to_owned(),
        ]
        .join("\n");
        let problems = parse_input(text.as_bytes(), BatchEndpoint::ChatCompletions).unwrap_err();
        let seen: Vec<(Option<u32>, &str)> =
            problems.iter().map(|p| (p.line, p.code.as_str())).collect();
        assert_eq!(
            seen,
            vec![
                (Some(2), "invalid_json_line"),
                (Some(3), "duplicate_custom_id"),
                (Some(4), "mismatched_endpoint"),
                (Some(5), "invalid_body"),
                (Some(6), "missing_model"),
                (Some(7), "invalid_method"),
            ]
        );
    }

    #[test]
    fn an_empty_or_binary_file_is_refused() {
        assert_eq!(
            parse_input(b"\n\n", BatchEndpoint::Embeddings).unwrap_err()[0].code,
            "empty_file"
        );
        assert_eq!(
            parse_input(&[0xff, 0xfe], BatchEndpoint::Embeddings).unwrap_err()[0].code,
            "invalid_json_line"
        );
    }
}
