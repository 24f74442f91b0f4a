//! The lines of a batch's output and error files, in OpenAI's shape: `id`, `custom_id`,
//! `response` (`status_code`, `request_id`, `body`) and `error` (`code`, `message`) for a
//! line that never ran.

use serde_json::{Value, json};

use crate::LineResult;

/// A kept answer as its file's line (without the newline).
pub fn output_line(result: &LineResult) -> String {
    let line = match result.status_code {
        Some(status) => json!({
            "id": result.request_id,
            "custom_id": result.custom_id,
            "response": {
                "status_code": status,
                "request_id": result.request_id,
                "body": result.body,
            },
            "error": Value::Null,
        }),
        None => json!({
            "id": result.request_id,
            "custom_id": result.custom_id,
            "response": Value::Null,
            "error": result.body,
        }),
    };
    line.to_string()
}

/// The output file's content (the answered lines) and the error file's (the others), each
/// in input order; `None` when it would be empty.
pub fn result_files(results: &[LineResult]) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let mut sorted: Vec<&LineResult> = results.iter().collect();
    sorted.sort_by_key(|result| result.line);
    let join = |keep: bool| {
        let text: String = sorted
            .iter()
            .filter(|result| result.succeeded() == keep)
            .map(|result| output_line(result) + "\n")
            .collect();
        (!text.is_empty()).then(|| text.into_bytes())
    };
    (join(true), join(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(line: u32, status: Option<u16>) -> LineResult {
        LineResult {
            line,
            custom_id: format!("c{line}"),
            request_id: format!("batch_req_{line}"),
            status_code: status,
            body: json!({"n": line}),
        }
    }

    #[test]
    fn answers_and_failures_go_to_their_files_in_input_order() {
        let results = [
            result(2, Some(200)),
            result(0, Some(200)),
            result(1, Some(400)),
            result(3, None),
        ];
        let (output, errors) = result_files(&results);
        let output = String::from_utf8(output.unwrap()).unwrap();
        let ids: Vec<Value> = output
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap()["custom_id"].clone())
            .collect();
        assert_eq!(ids, vec![json!("c0"), json!("c2")]);
        let errors = String::from_utf8(errors.unwrap()).unwrap();
        let lines: Vec<Value> = errors
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines[0]["response"]["status_code"], 400);
        assert_eq!(lines[0]["error"], Value::Null);
        assert_eq!(lines[1]["response"], Value::Null);
        assert_eq!(lines[1]["error"], json!({"n": 3}));
        assert_eq!(result_files(&[]), (None, None));
    }
}
