//! The Responses API's `file_search` tool over Tessera's datasets (a vector store is a
//! dataset, decision 0056): the tool read from a request, the `file_search_call` output item
//! an answer grounded on searched passages shows, and the `file_citation` annotations of its
//! text. The search runs on the server before the model answers, on the turn's last user
//! message (decision 0057).

use std::collections::HashMap;

use serde_json::{Value, json};
use tessera_chats::{FileSearch, MAX_FILE_SEARCH_RESULTS, MessageId, Source};
use tessera_kernel::FieldError;
use tessera_knowledge::AttributeFilter;

use super::attributes::filter_at;

/// Passages the model reads when the tool does not say (as many as fit its share of the
/// context window).
pub const DEFAULT_FILE_SEARCH_RESULTS: usize = 10;
/// Vector stores one `file_search` tool may name.
pub const MAX_FILE_SEARCH_STORES: usize = 10;

fn tool_field(index: usize, name: &str, msg: impl Into<String>, kind: &str) -> FieldError {
    FieldError::new(
        ["body".into(), "tools".into(), index.into(), name.into()],
        msg,
        kind,
    )
}

/// A `file_search` tool as read: the search, and the filter its stores' files must pass
/// (evaluated on their attributes by the request's handler, which then restricts the search
/// to the files it picks).
#[derive(Debug, Clone, PartialEq)]
pub struct FileSearchTool {
    pub search: FileSearch,
    pub filter: Option<AttributeFilter>,
}

/// The search a `{"type": "file_search", …}` tool (at `tools[index]`) asks for, or what is
/// wrong with it. Options Tessera cannot honour are refused by name, never ignored.
pub fn file_search_of(tool: &Value, index: usize) -> Result<FileSearchTool, Vec<FieldError>> {
    let mut errors = Vec::new();
    let ids = match &tool["vector_store_ids"] {
        Value::Array(ids) if (1..=MAX_FILE_SEARCH_STORES).contains(&ids.len()) => ids
            .iter()
            .filter_map(|id| id.as_str().filter(|id| !id.is_empty()).map(str::to_owned))
            .collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    if ids.is_empty() || ids.len() != tool["vector_store_ids"].as_array().map_or(0, Vec::len) {
        errors.push(tool_field(
            index,
            "vector_store_ids",
            format!("1 to {MAX_FILE_SEARCH_STORES} vector store ids"),
            "value_error",
        ));
    }
    let max_results = match &tool["max_num_results"] {
        Value::Null => DEFAULT_FILE_SEARCH_RESULTS,
        value => match value.as_u64().map(usize::try_from) {
            Some(Ok(n)) if (1..=MAX_FILE_SEARCH_RESULTS).contains(&n) => n,
            _ => {
                errors.push(tool_field(
                    index,
                    "max_num_results",
                    format!("an integer from 1 to {MAX_FILE_SEARCH_RESULTS}"),
                    "value_error",
                ));
                DEFAULT_FILE_SEARCH_RESULTS
            }
        },
    };
    let filter = match &tool["filters"] {
        Value::Null => None,
        filters => {
            let loc = vec![
                "body".into(),
                "tools".into(),
                index.into(),
                "filters".into(),
            ];
            filter_at(filters, loc)
                .map_err(|error| errors.push(error))
                .ok()
        }
    };
    for (name, _) in tool.as_object().into_iter().flatten() {
        let msg = match name.as_str() {
            "type" | "vector_store_ids" | "max_num_results" | "filters" => continue,
            "ranking_options" => {
                "not supported in the tool: the dataset's own ranking (hybrid search) applies"
            }
            _ => "unknown field of a `file_search` tool",
        };
        errors.push(tool_field(index, name, msg, "unsupported"));
    }
    if errors.is_empty() {
        Ok(FileSearchTool {
            search: FileSearch {
                datasets: ids,
                max_results,
                files: None,
            },
            filter,
        })
    } else {
        Err(errors)
    }
}

/// What a request's `file_search` tool adds to the response object: whether it asked for
/// the results (`include: ["file_search_call.results"]`), and the attributes of the stores'
/// files the results show (read when the stores were checked).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchEcho {
    pub results: bool,
    pub attributes: HashMap<String, Value>,
}

/// The output item id of an answer's search.
pub fn search_item_id(message: &MessageId) -> String {
    let id = message.as_str();
    format!("fs_{}", id.split_once('_').map_or(id, |(_, hex)| hex))
}

/// The `file_search_call` item of an answer grounded on `sources`, searched with
/// `question`; `status` is `in_progress`, `searching` or `completed` (only a completed
/// search shows its results, and only when the tool asked for them).
pub fn file_search_call(
    message: &MessageId,
    question: Option<&str>,
    search: Option<&SearchEcho>,
    sources: &[Source],
    status: &str,
) -> Value {
    let shown = status == "completed" && search.is_some_and(|search| search.results);
    let results = shown.then(|| {
        sources
            .iter()
            .map(|source| {
                json!({
                    "file_id": source.file_id,
                    "filename": filename(source),
                    "score": source.score,
                    "text": source.text,
                    "attributes": search
                        .and_then(|search| search.attributes.get(&source.file_id))
                        .cloned()
                        .unwrap_or_else(|| json!({})),
                })
            })
            .collect::<Vec<_>>()
    });
    json!({
        "type": "file_search_call",
        "id": search_item_id(message),
        "status": status,
        "queries": question.into_iter().collect::<Vec<_>>(),
        "results": results,
    })
}

fn filename(source: &Source) -> &str {
    source.file_name.as_deref().unwrap_or(&source.file_id)
}

fn citation(source: &Source, index: usize) -> Value {
    json!({
        "type": "file_citation",
        "file_id": source.file_id,
        "filename": filename(source),
        "index": index,
    })
}

/// The `file_citation` annotations of an answer's text. The model reads its passages
/// numbered `[1]`, `[2]`… (`tessera_chats::with_sources`): each such marker it writes cites
/// that passage's file at the marker (a character index). An answer that writes none
/// is still grounded on them: each file is cited once, in order, at the text's end.
pub fn citations(text: &str, sources: &[Source]) -> Vec<Value> {
    if sources.is_empty() {
        return Vec::new();
    }
    let mut cited = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        if chars[at] == '[' {
            let digits: String = chars[at + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            let closes = chars.get(at + 1 + digits.len()) == Some(&']');
            let number = digits.parse::<usize>().ok().filter(|_| closes);
            if let Some(source) = number.and_then(|n| sources.get(n.wrapping_sub(1))) {
                cited.push(citation(source, at));
                at += digits.len() + 2;
                continue;
            }
        }
        at += 1;
    }
    if cited.is_empty() {
        let end = chars.len();
        let mut files: Vec<&str> = Vec::new();
        for source in sources {
            if !files.contains(&source.file_id.as_str()) {
                files.push(&source.file_id);
                cited.push(citation(source, end));
            }
        }
    }
    cited
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(file: &str, name: Option<&str>) -> Source {
        Source {
            id: format!("{file}#0"),
            file_id: file.into(),
            dataset_id: Some("ds".into()),
            title: None,
            text: format!("{file} text"),
            score: 0.5,
            file_name: name.map(str::to_owned),
            location: None,
        }
    }

    fn indexes(annotations: &[Value]) -> Vec<(String, u64)> {
        annotations
            .iter()
            .map(|a| {
                (
                    a["file_id"].as_str().unwrap().to_owned(),
                    a["index"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn markers_the_model_writes_cite_their_passages_where_they_stand() {
        let sources = [source("a", Some("a.md")), source("b", None)];
        let text = "Ölfässer leak [2]. Tea is hot [1][9] and [x] or [].";
        let annotations = citations(text, &sources);
        assert_eq!(
            indexes(&annotations),
            [("b".to_owned(), 14), ("a".to_owned(), 30)]
        );
        assert_eq!(annotations[0]["filename"], "b");
        assert_eq!(annotations[1]["filename"], "a.md");
        assert_eq!(annotations[0]["type"], "file_citation");
    }

    #[test]
    fn an_answer_without_markers_cites_each_file_once_at_its_end() {
        let sources = [source("a", None), source("b", None), source("a", None)];
        let annotations = citations("No markers here.", &sources);
        assert_eq!(
            indexes(&annotations),
            [("a".to_owned(), 16), ("b".to_owned(), 16)]
        );
        assert!(citations("Anything [1].", &[]).is_empty());
    }

    #[test]
    fn the_tool_is_read_with_its_defaults_and_refused_by_name() {
        let tool = file_search_of(
            &json!({"type": "file_search", "vector_store_ids": ["ds_1"]}),
            0,
        )
        .unwrap();
        assert_eq!(tool.search.datasets, ["ds_1"]);
        assert_eq!(tool.search.max_results, DEFAULT_FILE_SEARCH_RESULTS);
        assert!(tool.filter.is_none() && tool.search.files.is_none());
        let tool = file_search_of(
            &json!({"type": "file_search", "vector_store_ids": ["a", "b"], "max_num_results": 3,
                    "filters": {"type": "eq", "key": "region", "value": "eu"}}),
            0,
        )
        .unwrap();
        assert_eq!(
            (tool.search.datasets.len(), tool.search.max_results),
            (2, 3)
        );
        assert!(tool.filter.is_some());
        let refused = |tool: Value| -> Vec<String> {
            file_search_of(&tool, 2)
                .unwrap_err()
                .iter()
                .map(|e| serde_json::to_value(e).unwrap()["loc"].to_string())
                .collect()
        };
        assert_eq!(
            refused(json!({"type": "file_search"})),
            [r#"["body","tools",2,"vector_store_ids"]"#]
        );
        assert_eq!(
            refused(json!({"type": "file_search", "vector_store_ids": ["a", 3]})),
            [r#"["body","tools",2,"vector_store_ids"]"#]
        );
        assert_eq!(
            refused(
                json!({"type": "file_search", "vector_store_ids": ["a"], "max_num_results": 51})
            ),
            [r#"["body","tools",2,"max_num_results"]"#]
        );
        assert_eq!(
            refused(json!({"type": "file_search", "vector_store_ids": ["a"],
                           "filters": {"type": "near", "key": "k", "value": 1},
                           "ranking_options": {}})),
            [
                r#"["body","tools",2,"filters","type"]"#,
                r#"["body","tools",2,"ranking_options"]"#
            ]
        );
    }

    #[test]
    fn the_call_item_shows_results_only_when_asked_and_complete() {
        let message = MessageId::generate();
        let sources = [source("a", Some("a.md"))];
        let echo = SearchEcho {
            results: true,
            attributes: HashMap::from([("a".to_owned(), json!({"year": 2024}))]),
        };
        let question = Some("what?");
        let item = file_search_call(&message, question, Some(&echo), &sources, "completed");
        assert_eq!(item["queries"], json!(["what?"]));
        assert_eq!(item["results"][0]["filename"], "a.md");
        assert_eq!(item["results"][0]["attributes"], json!({"year": 2024}));
        assert!(item["id"].as_str().unwrap().starts_with("fs_"));
        let item = file_search_call(&message, question, Some(&echo), &sources, "searching");
        assert!(item["results"].is_null());
        let item = file_search_call(&message, question, None, &sources, "completed");
        assert!(item["results"].is_null());
        let quiet = SearchEcho {
            results: false,
            ..echo
        };
        let item = file_search_call(&message, None, Some(&quiet), &sources, "completed");
        assert_eq!(item["queries"], json!([]));
        assert!(item["results"].is_null());
    }
}
