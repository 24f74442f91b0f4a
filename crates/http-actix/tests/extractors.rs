//! Request validation through actix's HTTP service stack with this crate's extractors,
//! extractor configuration and error rendering: malformed JSON, invalid
//! values and bad query strings all answer 422 problems, never actix's plain text.

use actix_web::{App, HttpResponse, test, web};
use serde::Deserialize;
use tessera_http_actix::{
    extract::{self, ValidJson, ValidQuery},
    middleware::problem_errors,
};
use validator::Validate;

#[derive(Debug, Deserialize, Validate)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateThing {
    #[validate(length(min = 1, max = 10))]
    display_name: String,
}

#[derive(Debug, Deserialize, Validate)]
struct ListThings {
    #[validate(range(min = 1, max = 100))]
    limit: Option<i64>,
}

async fn create(ValidJson(body): ValidJson<CreateThing>) -> HttpResponse {
    HttpResponse::Created().json(serde_json::json!({ "displayName": body.display_name }))
}

async fn list(ValidQuery(query): ValidQuery<ListThings>) -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "limit": query.limit }))
}

async fn by_number(path: web::Path<u32>) -> HttpResponse {
    HttpResponse::Ok().json(path.into_inner())
}

async fn plain_json(body: web::Json<CreateThing>) -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "displayName": body.display_name }))
}

async fn call(req: test::TestRequest) -> (u16, String, serde_json::Value) {
    let app = test::init_service(
        App::new()
            .app_data(extract::json_config(64))
            .app_data(web::PayloadConfig::new(64))
            .app_data(extract::query_config())
            .app_data(extract::path_config())
            .wrap(problem_errors())
            .route("/things", web::post().to(create))
            .route("/things", web::get().to(list))
            .route("/things/{n}", web::get().to(by_number))
            .route("/plain", web::post().to(plain_json)),
    )
    .await;
    let response = test::call_service(&app, req.to_request()).await;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = test::read_body(response).await;
    (
        status,
        content_type,
        serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    )
}

fn json_post(path: &str, body: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri(path)
        .insert_header(("content-type", "application/json"))
        .set_payload(body.to_owned())
}

#[actix_web::test]
async fn valid_body_passes() {
    let (status, _, body) = call(json_post("/things", r#"{"displayName": "ok"}"#)).await;
    assert_eq!(
        (status, body),
        (201, serde_json::json!({"displayName": "ok"}))
    );
}

#[actix_web::test]
async fn malformed_json_is_a_422_problem() {
    let (status, content_type, body) = call(json_post("/things", r#"{"displayName": "#)).await;
    assert_eq!(
        (status, content_type.as_str()),
        (422, "application/problem+json")
    );
    assert_eq!(body["detail"][0]["type"], "json_invalid");
    assert_eq!(body["detail"][0]["loc"][0], "body");
}

#[actix_web::test]
async fn invalid_values_are_located() {
    let (status, _, body) = call(json_post("/things", r#"{"displayName": "much too long"}"#)).await;
    assert_eq!(status, 422);
    assert_eq!(
        body["detail"],
        serde_json::json!([{"loc": ["body", "displayName"], "msg": "length must be between 1 and 10", "type": "length"}])
    );
    let (_, _, body) = call(json_post("/things", r#"{"displayName": 1}"#)).await;
    assert_eq!(body["detail"][0]["type"], "type_error");
    let (_, _, body) = call(json_post("/things", r#"{}"#)).await;
    assert_eq!(
        body["detail"][0]["loc"],
        serde_json::json!(["body", "displayName"])
    );
}

#[actix_web::test]
async fn wrong_content_type_and_oversized_bodies_are_problems() {
    let req = test::TestRequest::post()
        .uri("/things")
        .insert_header(("content-type", "text/plain"))
        .set_payload("hi");
    let (status, content_type, body) = call(req).await;
    assert_eq!(
        (status, content_type.as_str(), body["code"].as_str()),
        (
            415,
            "application/problem+json",
            Some("unsupported_media_type")
        )
    );
    let big = format!(r#"{{"displayName": "{}"}}"#, "x".repeat(100));
    let (status, _, body) = call(json_post("/things", &big)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (413, Some("payload_too_large"))
    );
}

#[actix_web::test]
async fn query_and_path_problems_are_422() {
    let (status, _, body) = call(test::TestRequest::get().uri("/things?limit=abc")).await;
    assert_eq!(
        (status, body["detail"][0]["loc"].clone()),
        (422, serde_json::json!(["query", "limit"]))
    );
    let (status, _, body) = call(test::TestRequest::get().uri("/things?limit=0")).await;
    assert_eq!(
        (status, body["detail"][0]["type"].as_str()),
        (422, Some("range"))
    );
    let (status, _, body) = call(test::TestRequest::get().uri("/things/not-a-number")).await;
    assert_eq!(
        (status, body["detail"][0]["loc"][0].as_str()),
        (422, Some("path"))
    );
}

#[actix_web::test]
async fn actix_own_json_extractor_also_answers_problems() {
    let (status, content_type, body) = call(json_post("/plain", "{nope")).await;
    assert_eq!(
        (status, content_type.as_str(), body["code"].as_str()),
        (422, "application/problem+json", Some("validation_failed"))
    );
}
