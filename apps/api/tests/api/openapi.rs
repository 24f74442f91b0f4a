//! The generated OpenAPI document, pinned by a snapshot: any change to the interface shows
//! up in review as a diff of `snapshots/api__openapi__document.snap`.

#[test]
fn document() {
    let document = tessera_api::startup::openapi_json();
    insta::assert_json_snapshot!(document);
}

#[test]
fn every_operation_declares_security_and_problem_responses_are_documented() {
    let document = tessera_api::startup::openapi_json();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            assert!(
                operation["security"].is_array() || document["security"].is_array(),
                "{method} {path} declares no security"
            );
            assert!(
                operation["operationId"].is_string(),
                "{method} {path} has no operationId"
            );
            assert!(
                !operation["tags"].as_array().unwrap().is_empty(),
                "{method} {path} has no tag"
            );
        }
    }
    for schema in ["Problem", "ValidationProblem"] {
        assert!(
            document["components"]["schemas"][schema].is_object(),
            "{schema} is documented"
        );
    }
}

/// utoipa names a schema after its type and keeps one schema per name: two types of the same
/// name would share one entry in `components.schemas`, and every reference to the other
/// would describe the wrong shape. Reads the sources that derive `ToSchema`.
#[test]
fn every_schema_name_belongs_to_one_type() {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut owners: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for root in ["apps/api/src", "crates/wire/src"] {
        let mut pending = vec![workspace.join(root)];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    for name in schema_names(&text) {
                        owners
                            .entry(name)
                            .or_default()
                            .push(path.display().to_string());
                    }
                }
            }
        }
    }
    assert!(owners.len() > 100, "found {} schemas", owners.len());
    let shared: Vec<_> = owners.iter().filter(|(_, files)| files.len() > 1).collect();
    assert!(shared.is_empty(), "schema names used twice: {shared:?}");
}

/// The schema names a source file declares: each type deriving `ToSchema`, by its
/// `#[schema(as = …)]` name when it has one.
fn schema_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut deriving = false;
    let mut renamed = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("#[derive(") && line.contains("ToSchema") {
            deriving = true;
        } else if deriving && line.starts_with("#[schema(as = ") {
            renamed = line
                .trim_start_matches("#[schema(as = ")
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .next()
                .map(str::to_owned);
        } else if deriving
            && let Some(item) = line
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ")
                .strip_prefix("struct ")
                .or_else(|| line.trim_start_matches("pub ").strip_prefix("enum "))
        {
            let declared = item
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .next()
                .unwrap_or_default()
                .to_owned();
            names.push(renamed.take().unwrap_or(declared));
            deriving = false;
        }
    }
    names
}

/// Every error answer the document states is a problem of the catalogue, in the shape of the
/// operation's dialect: problem+json with a catalogue kind's status under `/v1`, OpenAI's or
/// Anthropic's error with the status their renderer gives a catalogue kind under theirs.
/// Other protocols answer in their own shapes: MCP's JSON-RPC endpoint and OAuth's token
/// endpoint (RFC 6749).
#[test]
fn every_documented_error_is_a_catalogue_problem() {
    use tessera_api::problem::{ApiError, ProblemKind};

    let document = tessera_api::startup::openapi_json();
    let statuses = |render: fn(&ApiError) -> u16| -> Vec<String> {
        ProblemKind::ALL
            .into_iter()
            .map(|kind| render(&ApiError::new(kind, kind.code(), "")).to_string())
            .collect()
    };
    let problem = statuses(|problem| problem.status().as_u16());
    let openai = statuses(|problem| tessera_wire::openai::error::render(&problem.parts()).0);
    let anthropic = statuses(|problem| tessera_wire::anthropic::error::render(&problem.parts()).0);
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        // OAuth token endpoints: `/oauth/token` and its `/v1/oauth2/token` twin.
        if path == "/mcp" || (path.contains("/oauth") && path.ends_with("/token")) {
            continue;
        }
        let (allowed, media_type) = if path.starts_with("/openai/") {
            (&openai, "application/json")
        } else if path.starts_with("/anthropic/") {
            (&anthropic, "application/json")
        } else {
            (&problem, "application/problem+json")
        };
        for (method, operation) in item.as_object().unwrap() {
            let Some(responses) = operation["responses"].as_object() else {
                continue;
            };
            for (status, response) in responses {
                if !(status.starts_with('4') || status.starts_with('5')) {
                    continue;
                }
                let response = match response["$ref"].as_str() {
                    Some(reference) => {
                        let name = reference.trim_start_matches("#/components/responses/");
                        &document["components"]["responses"][name]
                    }
                    None => response,
                };
                if !allowed.contains(status) {
                    wrong.push(format!(
                        "{method} {path} documents {status}, which no catalogue problem answers with there"
                    ));
                }
                if !response["content"][media_type].is_object() {
                    wrong.push(format!(
                        "{method} {path}'s {status} is not documented as {media_type}: {response}"
                    ));
                }
                checked += 1;
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(checked > 500, "only {checked} error answers were checked");
}
