//! Answers requests no route took. Route macros guard on the method, so a known path with
//! the wrong method would otherwise look like an unknown path; the OpenAPI document is the
//! route table that tells the two apart (405 with `Allow`, or 404).

use actix_web::{HttpRequest, HttpResponse, ResponseError, http::StatusCode, web};

use crate::problem::ApiError;

/// Documented paths and the methods each accepts.
#[derive(Debug, Clone, Default)]
pub struct RouteTable(Vec<(Vec<String>, Vec<String>)>);

impl RouteTable {
    pub fn from_openapi(document: &utoipa::openapi::OpenApi) -> Self {
        let routes = document
            .paths
            .paths
            .iter()
            .map(|(path, item)| {
                let value = serde_json::to_value(item).unwrap_or_default();
                let methods = [
                    "get", "put", "post", "delete", "options", "head", "patch", "trace",
                ]
                .iter()
                .filter(|m| value.get(**m).is_some())
                .map(|m| m.to_ascii_uppercase())
                .collect();
                (path.split('/').map(str::to_owned).collect(), methods)
            })
            .collect();
        Self(routes)
    }

    /// The methods documented for a concrete request path, if any template matches it.
    pub fn methods_for(&self, path: &str) -> Option<Vec<String>> {
        let segments: Vec<&str> = path.split('/').collect();
        let mut methods: Vec<String> = self
            .0
            .iter()
            .filter(|(template, _)| {
                template.len() == segments.len()
                    && template.iter().zip(&segments).all(|(t, s)| {
                        t == s || (t.starts_with('{') && t.ends_with('}') && !s.is_empty())
                    })
            })
            .flat_map(|(_, methods)| methods.iter().cloned())
            .collect();
        methods.sort();
        methods.dedup();
        (!methods.is_empty()).then_some(methods)
    }
}

pub async fn unmatched(req: HttpRequest, table: web::Data<RouteTable>) -> HttpResponse {
    match table.methods_for(req.path()) {
        Some(methods) => {
            let error = ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                format!(
                    "{} is not allowed on {}; use {}",
                    req.method(),
                    req.path(),
                    methods.join(", ")
                ),
            );
            let mut response = error.error_response();
            if let Ok(allow) = methods.join(", ").parse() {
                response
                    .headers_mut()
                    .insert(actix_web::http::header::ALLOW, allow);
            }
            response
        }
        None => ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no resource at {}", req.path()),
        )
        .error_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_concrete_paths() {
        let table = RouteTable(vec![
            (
                "/v1/things/{id}".split('/').map(str::to_owned).collect(),
                vec!["GET".into(), "DELETE".into()],
            ),
            (
                "/v1/things".split('/').map(str::to_owned).collect(),
                vec!["POST".into()],
            ),
        ]);
        assert_eq!(
            table.methods_for("/v1/things/abc"),
            Some(vec!["DELETE".into(), "GET".into()])
        );
        assert_eq!(table.methods_for("/v1/things"), Some(vec!["POST".into()]));
        assert_eq!(table.methods_for("/v1/things/"), None);
        assert_eq!(table.methods_for("/v1/other"), None);
    }
}
