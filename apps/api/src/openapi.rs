//! The OpenAPI 3.1 document, generated from the handlers' annotations, then completed: the
//! answers every operation shares (`responses`) and the links between operations (`links`).

use utoipa::{
    Modify, OpenApi,
    openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
};

use crate::problem::{Problem, ValidationErrorItem, ValidationProblem};

mod links;
mod responses;

pub use links::{apply_links, spell_links_in_camel_case};
pub use responses::apply_shared_responses;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tessera API",
        version = "1.0.0",
        description = "AI chat completions, knowledge bases with semantic search, and versioned prompt composition, for many tenants. Every error is `application/problem+json`, except under `/openai/v1` and `/anthropic/v1`, which answer in OpenAI's and Anthropic's error shapes.",
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
        (name = "API keys", description = "Long-lived API keys (`tsk_…`) of the caller's organization, accepted as `Authorization: Bearer` wherever an access token is; scoped, expiring, revocable; needs `org:admin`"),
        (name = "Audit", description = "The organization's audit log: every change made through the API or the admin CLI, and refused credentials, with who, what, when, from where and the request id; needs `org:admin`"),
        (name = "Chats", description = "Chat completions (JSON or Server-Sent Events, in Tessera's format or the Vercel AI SDK's), background generation, and chat records"),
        (name = "Models", description = "The catalog of base models, and the organization's models built on them"),
        (name = "Particles", description = "Reusable system-prompt components in five categories, with immutable numbered versions"),
        (name = "System prompts", description = "Ordered compositions of particles, pinned or following the latest versions, and their rendering; system profiles are read-only templates"),
        (name = "Usage", description = "Tokens and credits of the organization's completions, by period, model and user"),
        (name = "Files", description = "Uploads (documents up to 50 MB, images up to 20 MB), processed in the background into searchable chunks; needs `files:*`"),
        (name = "Datasets", description = "Sets of files searched together (hybrid dense + BM25), versioned, with snapshots; needs `datasets:*`"),
        (name = "Artifacts", description = "Rich content found in assistant answers (markdown, code, HTML, SVG, Mermaid), versioned per chat; needs `chats:read`"),
        (name = "Webhooks", description = "Signed HTTP callbacks for `file.ready`, `file.failed` and `dataset.updated`, retried until the receiver answers 2xx; needs `org:admin`"),
        (name = "Guardrails", description = "Guardrail policies of the organization and of each model: PII detection (block, redact, pseudonymise), deny and allow lists, a maximum input size and an external hook, applied to every completion; `org:admin`"),
        (name = "Response cache", description = "Response cache policies of the organization's models: a model opted in has its completions answered from earlier answers to the same request, or with semantic matching to a question close in meaning, within a time to live and up to a highest temperature; `org:admin`"),
        (name = "MCP servers", description = "Model Context Protocol servers (Streamable HTTP) whose tools the organization's models call during completions, run by Tessera; `org:admin` to change, `models:read` to list"),
        (name = "MCP", description = "Tessera as a Model Context Protocol server (Streamable HTTP, stateless, JSON responses): tools to search datasets, list datasets and files, compose system prompts, ask the organization's models and read usage; resources for particles and system prompts. Same tokens and API keys; each tool checks its REST twin's scope"),
        (name = "OpenAI", description = "OpenAI's wire format at `/openai/v1` (models, chat completions, responses, embeddings) over the same models, prompts, knowledge, usage, budgets and limits; point an OpenAI client's base URL here with an API key. Errors are OpenAI's `{\"error\": {…}}`, not problems"),
        (name = "Anthropic", description = "Anthropic's Messages API at `/anthropic/v1` (messages, streamed or not, and models) over the same models, prompts, knowledge, usage, budgets and limits; point an Anthropic client's base URL at `/anthropic` with an API key (`x-api-key` or `Authorization: Bearer`). Errors are Anthropic's `{\"type\": \"error\", \"error\": {…}}`, not problems")
    )
)]
pub struct ApiDoc;

/// Declares the bearer scheme (a JWT from the token endpoint or an identity provider, or an
/// API key) and, for Anthropic's paths, the same credentials in `x-api-key`.
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
                    .description(Some("An access token from `POST /oauth/token` (client credentials), a session JWT from a configured identity provider, or an API key (`tsk_…`, from `POST /v1/api-keys`)."))
                    .build(),
            ),
        );
        components.add_security_scheme(
            ANTHROPIC_API_KEY,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                tessera_wire::anthropic::API_KEY_HEADER,
                "Under `/anthropic/v1` only: an API key (`tsk_…`) or an access token, as Anthropic's clients send their key.",
            ))),
        );
    }
}

/// The name of the `x-api-key` scheme in the document.
pub const ANTHROPIC_API_KEY: &str = "anthropic_api_key";
