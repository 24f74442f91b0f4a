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
