//! Answers requests no route took. Route macros guard on the method, so a known path with
//! the wrong method would otherwise look like an unknown path; the route table (which lists
//! every documented operation) tells the two apart: 405 with `Allow`, or 404.

use actix_web::{HttpRequest, HttpResponse};

use crate::{
    access,
    problem::{ApiError, ProblemKind},
};

/// The methods documented for a concrete request path, if any. Where templates overlap
/// (`/v1/models/catalog` and `/v1/models/{model_id}`), the most literal one names the
/// resource, as it does for routing.
fn methods_for(path: &str) -> Option<Vec<&'static str>> {
    let parameters = |template: &str| template.matches('{').count();
    let matching: Vec<&super::Operation> = super::operations()
        .iter()
        .filter(|operation| access::path_matches(&operation.template, path))
        .collect();
    let fewest = matching
        .iter()
        .map(|operation| parameters(&operation.template))
        .min()?;
    let mut methods: Vec<&'static str> = matching
        .iter()
        .filter(|operation| parameters(&operation.template) == fewest)
        .map(|operation| operation.method)
        .collect();
    methods.sort_unstable();
    methods.dedup();
    (!methods.is_empty()).then_some(methods)
}

pub async fn unmatched(req: HttpRequest) -> HttpResponse {
    match methods_for(req.path()) {
        Some(methods) => {
            let allow = methods.join(", ");
            let detail = format!(
                "{} is not allowed on {}; use {allow}",
                req.method(),
                req.path()
            );
            let mut response = HttpResponse::from_error(ApiError::new(
                ProblemKind::MethodNotAllowed,
                ProblemKind::MethodNotAllowed.code(),
                detail,
            ));
            if let Ok(value) = allow.parse() {
                response
                    .headers_mut()
                    .insert(actix_web::http::header::ALLOW, value);
            }
            response
        }
        None => HttpResponse::from_error(ApiError::not_found(
            ProblemKind::NotFound.code(),
            format!("no resource at {}", req.path()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_paths_list_their_methods() {
        assert_eq!(methods_for("/v1/health"), Some(vec!["GET"]));
        assert_eq!(methods_for("/oauth/token"), Some(vec!["POST"]));
        assert_eq!(methods_for("/v1/nothing"), None);
        assert_eq!(methods_for("/v1/models/catalog"), Some(vec!["GET"]));
        assert_eq!(methods_for("/v1/files/bulk-delete"), Some(vec!["POST"]));
        assert_eq!(methods_for("/v1/files/file_0"), Some(vec!["DELETE", "GET"]));
    }
}
