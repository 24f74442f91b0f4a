//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use utoipa::{
    Modify, OpenApi,
    openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
};

use crate::problem::{PROBLEM_JSON, Problem, ValidationErrorItem, ValidationProblem};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tessera API",
        version = "1.0.0",
        description = "AI chat completions, knowledge bases with semantic search, and versioned prompt composition, for many tenants. Every error is `application/problem+json`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0")
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    components(schemas(Problem, ValidationProblem, ValidationErrorItem)),
    tags(
        (name = "Health", description = "Liveness and readiness, for orchestrators"),
        (name = "Authentication", description = "Access tokens for API clients (OAuth 2.0 client credentials) and discovery documents"),
        (name = "Organization", description = "The caller's organization"),
        (name = "Clients", description = "API clients (OAuth 2.0 client credentials) of the caller's organization; needs `org:admin`"),
        (name = "Chats", description = "Chat completions (JSON or Server-Sent Events, in Tessera's format or the Vercel AI SDK's), background generation, and chat records"),
        (name = "Models", description = "The catalog of base models, and the organization's models built on them"),
        (name = "Particles", description = "Reusable system-prompt components in five categories, with immutable numbered versions"),
        (name = "System prompts", description = "Ordered compositions of particles, pinned or following the latest versions, and their rendering; system profiles are read-only templates"),
        (name = "Usage", description = "Tokens and credits of the organization's completions, by period, model and user"),
        (name = "Files", description = "Uploads (documents up to 50 MB, images up to 20 MB), processed in the background into searchable chunks; needs `files:*`"),
        (name = "Datasets", description = "Sets of files searched together (hybrid dense + BM25), versioned, with snapshots; needs `datasets:*`"),
        (name = "Artifacts", description = "Rich content found in assistant answers (markdown, code, HTML, SVG, Mermaid), versioned per chat; needs `chats:read`"),
        (name = "Webhooks", description = "Signed HTTP callbacks for `file.ready`, `file.failed` and `dataset.updated`, retried until the receiver answers 2xx; needs `org:admin`")
    )
)]
pub struct ApiDoc;

/// Declares the bearer scheme: a JWT from the token endpoint or an identity provider.
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some("An access token from `POST /oauth/token` (client credentials) or a session JWT from a configured identity provider."))
                    .build(),
            ),
        );
    }
}

/// The answers every operation can give besides its own, as shared `components.responses`
/// referenced from each operation they apply to, so that the document states every status
/// the server can answer (generated clients and fuzzers trust it):
/// - with a token: 401 (missing, expired or revoked), 403 (scope), 429 (rate limit), 503
///   (the database cannot answer);
/// - with a body: 413 (too large), 415 (not JSON or form data), 422;
/// - with parameters: 422; with path parameters: 404 (no such record in the organization).
///
/// Path parameters are non-empty strings.
pub fn apply_shared_responses(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, Schema, path::ParameterIn};

    let components = document.components.get_or_insert_with(Default::default);
    for (name, response) in shared_responses() {
        components
            .responses
            .entry(name.to_owned())
            .or_insert(response.into());
    }
    for item in document.paths.paths.values_mut() {
        let operations = [
            item.get.as_mut(),
            item.put.as_mut(),
            item.post.as_mut(),
            item.delete.as_mut(),
            item.patch.as_mut(),
        ];
        for operation in operations.into_iter().flatten() {
            let authenticated = !operation
                .security
                .as_ref()
                .is_some_and(|requirements| requirements.is_empty());
            // An empty path segment names no record (and `//` would name another route).
            for parameter in operation.parameters.iter_mut().flatten() {
                if let (ParameterIn::Path, Some(RefOr::T(Schema::Object(schema)))) =
                    (&parameter.parameter_in, parameter.schema.as_mut())
                {
                    schema.min_length.get_or_insert(1);
                }
            }
            let parameters = operation.parameters.as_deref().unwrap_or_default();
            let has_path = parameters
                .iter()
                .any(|p| matches!(p.parameter_in, ParameterIn::Path));
            let has_parameters = !parameters.is_empty();
            let has_body = operation.request_body.is_some();
            let mut shared = Vec::new();
            if authenticated {
                shared.extend([
                    ("401", "Unauthorized"),
                    ("403", "Forbidden"),
                    ("429", "TooManyRequests"),
                    ("503", "ServiceUnavailable"),
                ]);
            }
            if has_body {
                shared.extend([
                    ("413", "PayloadTooLarge"),
                    ("415", "UnsupportedMediaType"),
                    ("422", "ValidationFailed"),
                ]);
            }
            if has_parameters {
                shared.push(("422", "ValidationFailed"));
            }
            if has_path {
                shared.push(("404", "NotFound"));
            }
            for (status, name) in shared {
                operation
                    .responses
                    .responses
                    .entry(status.to_owned())
                    .or_insert_with(|| utoipa::openapi::Ref::from_response_name(name).into());
            }
        }
    }
}

fn shared_responses() -> Vec<(&'static str, utoipa::openapi::Response)> {
    use utoipa::openapi::{
        ContentBuilder, Ref, ResponseBuilder, header::HeaderBuilder, schema::Type,
    };

    let problem = |description: &str, schema: &str| {
        ResponseBuilder::new().description(description).content(
            PROBLEM_JSON,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(schema)))
                .build(),
        )
    };
    let retry_after = || {
        HeaderBuilder::new()
            .schema(utoipa::openapi::ObjectBuilder::new().schema_type(Type::Integer))
            .description(Some("Seconds to wait before retrying"))
            .build()
    };
    vec![
        (
            "Unauthorized",
            problem(
                "No valid access token: missing, malformed, expired, revoked or from an unknown issuer",
                "Problem",
            )
            .header(
                "WWW-Authenticate",
                HeaderBuilder::new()
                    .schema(utoipa::openapi::ObjectBuilder::new().schema_type(Type::String))
                    .build(),
            )
            .build(),
        ),
        (
            "Forbidden",
            problem(
                "The token lacks the operation's scope, the plan does not include the model, or the request arrived over plain HTTP",
                "Problem",
            )
            .build(),
        ),
        (
            "NotFound",
            problem(
                "No such record in the caller's organization (another organization's records are not revealed)",
                "Problem",
            )
            .build(),
        ),
        (
            "PayloadTooLarge",
            problem("The request body is larger than the operation accepts", "Problem").build(),
        ),
        (
            "UnsupportedMediaType",
            problem("The request body's Content-Type is not one the operation accepts", "Problem")
                .build(),
        ),
        (
            "ValidationFailed",
            problem(
                "Invalid request: `detail` lists every invalid value with its location",
                "ValidationProblem",
            )
            .build(),
        ),
        (
            "TooManyRequests",
            problem("Over the organization's or the principal's rate limit", "Problem")
                .header("Retry-After", retry_after())
                .build(),
        ),
        (
            "ServiceUnavailable",
            problem(
                "A dependency (the database, the vector index, a provider) cannot answer now; retry after the given time",
                "Problem",
            )
            .header("Retry-After", retry_after())
            .build(),
        ),
    ]
}

/// OpenAPI `links` from each creating operation (a `POST` answering 201 with the new record's
/// `id`) to the operations that take that id in their path, so a client or a stateful fuzzer
/// can chain them: `POST /v1/particles` → `getParticle`, `updateParticle`, … with
/// `particle_id = $response.body#/id`. Path parameters the creating operation shares are
/// passed on from its own request.
pub fn apply_links(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, link::LinkBuilder};

    let operations: Vec<(String, String)> = document
        .paths
        .paths
        .iter()
        .flat_map(|(path, item)| {
            [
                item.get.as_ref(),
                item.put.as_ref(),
                item.post.as_ref(),
                item.delete.as_ref(),
                item.patch.as_ref(),
            ]
            .into_iter()
            .flatten()
            .filter_map(|operation| operation.operation_id.clone())
            .map(move |id| (path.clone(), id))
        })
        .collect();
    for (path, item) in document.paths.paths.iter_mut() {
        let Some(created) = item
            .post
            .as_mut()
            .and_then(|post| post.responses.responses.get_mut("201"))
        else {
            continue;
        };
        let RefOr::T(created) = created else { continue };
        let own: Vec<&str> = path_parameters(path).collect();
        for (target_path, operation_id) in &operations {
            let Some(rest) = target_path.strip_prefix(path.as_str()) else {
                continue;
            };
            // The new id is the first segment after the creating path: `/{id}` or `/{id}/…`.
            let Some(new_id) = rest
                .strip_prefix("/{")
                .and_then(|rest| rest.split_once('}'))
                .map(|(name, _)| name)
            else {
                continue;
            };
            let mut link = LinkBuilder::new()
                .operation_id(operation_id.clone())
                .parameter(new_id, "$response.body#/id");
            let deeper: Vec<&str> = path_parameters(target_path)
                .filter(|name| *name != new_id)
                .collect();
            if !deeper.iter().all(|name| own.contains(name)) {
                continue;
            }
            for name in deeper {
                link = link.parameter(name, format!("$request.path.{name}"));
            }
            created
                .links
                .insert(operation_id.clone(), link.build().into());
        }
    }
}

/// The names of a path template's parameters, in order.
fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}

/// utoipa 5 writes a link's fields in snake case (`operation_id`); OpenAPI spells them in
/// camel case (`operationId`), and clients ignore the others.
pub fn spell_links_in_camel_case(document: &mut serde_json::Value) {
    let Some(paths) = document
        .get_mut("paths")
        .and_then(serde_json::Value::as_object_mut)
    else {
        return;
    };
    let responses = paths
        .values_mut()
        .filter_map(serde_json::Value::as_object_mut)
        .flat_map(|item| item.values_mut())
        .filter_map(|operation| operation.get_mut("responses"))
        .filter_map(serde_json::Value::as_object_mut)
        .flat_map(|responses| responses.values_mut());
    for response in responses {
        let Some(links) = response
            .get_mut("links")
            .and_then(serde_json::Value::as_object_mut)
        else {
            continue;
        };
        for link in links
            .values_mut()
            .filter_map(serde_json::Value::as_object_mut)
        {
            for (snake, camel) in [
                ("operation_id", "operationId"),
                ("operation_ref", "operationRef"),
                ("request_body", "requestBody"),
            ] {
                if let Some(value) = link.remove(snake) {
                    link.insert(camel.to_owned(), value);
                }
            }
        }
    }
}
