//! The HTTP surface: one module of handlers per resource group, and [`operations!`]'s one
//! table of every documented operation with who may call it. A handler's method and path are
//! stated once, in its route attribute; the table registers the handlers (routing and the
//! OpenAPI document), and the access rules it pairs with them drive the `authorize`
//! middleware, the document's `security` sections, the 405 answers and span names. Handlers
//! are thin: parse, call a domain service, map the result.

use std::sync::LazyLock;

use utoipa::openapi::path::HttpMethod;
use utoipa_actix_web::UtoipaApp;

pub mod anthropic;
pub mod api_keys;
pub mod artifacts;
pub mod audit;
pub mod chats;
pub mod clients;
pub mod credential_limits;
pub mod datasets;
pub mod dialects;
pub mod fallback;
pub mod files;
pub mod guardrails;
pub mod health;
pub mod mcp_servers;
pub mod model_datasets;
pub mod models;
pub mod oauth;
pub mod openai;
pub mod organization;
pub mod particles;
pub mod response_cache;
pub mod system_prompts;
pub mod usage;
pub mod webhooks;

/// What a route requires of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token (health, token issuing, discovery).
    Public,
    /// Any valid token of the organization.
    Authenticated,
    /// A valid token holding this scope (or one that implies it).
    Scope(&'static str),
}

/// One documented operation: its method, its OpenAPI path template and its access rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    pub method: &'static str,
    pub template: String,
    pub access: Access,
    /// `{method} {template}`, the name of its requests' spans (made once, not per request).
    pub span_name: String,
}

/// The access rule an entry of the table names: `public`, `authenticated` or a scope.
macro_rules! access {
    (public) => {
        Access::Public
    };
    (authenticated) => {
        Access::Authenticated
    };
    ($scope:literal) => {
        Access::Scope($scope)
    };
}

/// Declares the table: `handler => access` in routing order (a literal path before the
/// template that would also match it, as actix routes in registration order).
macro_rules! operations {
    ($($handler:path => $access:tt,)*) => {
        /// Registers every documented operation's handler on a utoipa-aware app.
        pub fn register<T>(app: UtoipaApp<T>) -> UtoipaApp<T>
        where
            T: actix_web::dev::ServiceFactory<
                    actix_web::dev::ServiceRequest,
                    Config = (),
                    Error = actix_web::Error,
                    InitError = (),
                >,
        {
            app$(.service($handler))*
        }

        fn table() -> Vec<Operation> {
            let mut table = Vec::new();
            $(table.extend(operations_of::<$handler>(access!($access)));)*
            table
        }
    };
}

operations! {
    health::health => public,
    health::ready => public,
    oauth::token => public,
    oauth::token_oauth => public,
    oauth::jwks => public,
    oauth::openid_configuration => public,
    organization::get_organization => authenticated,
    organization::update_organization => "org:admin",
    clients::create_client => "org:admin",
    clients::list_clients => "org:admin",
    clients::get_client => "org:admin",
    clients::rotate_client => "org:admin",
    clients::revoke_client => "org:admin",
    credential_limits::get_client_limits => "org:admin",
    credential_limits::put_client_limits => "org:admin",
    credential_limits::delete_client_limits => "org:admin",
    api_keys::create_api_key => "org:admin",
    api_keys::list_api_keys => "org:admin",
    api_keys::get_api_key => "org:admin",
    api_keys::revoke_api_key => "org:admin",
    credential_limits::get_api_key_limits => "org:admin",
    credential_limits::put_api_key_limits => "org:admin",
    credential_limits::delete_api_key_limits => "org:admin",
    audit::list_audit_events => "org:admin",
    chats::create_completion => "chats:invoke",
    chats::list_chats => "chats:read",
    chats::get_chat => "chats:read",
    chats::update_chat => "chats:write",
    chats::delete_chat => "chats:delete",
    chats::restore_chat => "chats:write",
    chats::stream_chat => "chats:read",
    models::catalog => "models:read",
    models::deployments => "org:admin",
    models::create_model => "models:write",
    models::list_models => "models:read",
    models::get_model => "models:read",
    models::update_model => "models:write",
    models::delete_model => "models:delete",
    model_datasets::link_dataset => "models:write",
    model_datasets::list_dataset_links => "models:read",
    model_datasets::unlink_dataset => "models:write",
    mcp_servers::link_tools => "models:write",
    mcp_servers::list_tool_links => "models:read",
    mcp_servers::unlink_tools => "models:write",
    particles::create_particle => "particles:write",
    particles::list_particles => "particles:read",
    particles::get_particle => "particles:read",
    particles::replace_particle => "particles:write",
    particles::update_particle => "particles:write",
    particles::delete_particle => "particles:delete",
    particles::list_versions => "particles:read",
    particles::get_version => "particles:read",
    system_prompts::create_system_prompt => "system-prompts:write",
    system_prompts::list_system_prompts => "system-prompts:read",
    system_prompts::get_system_prompt => "system-prompts:read",
    system_prompts::update_system_prompt => "system-prompts:write",
    system_prompts::delete_system_prompt => "system-prompts:delete",
    system_prompts::add_particle => "system-prompts:write",
    system_prompts::update_particle_placement => "system-prompts:write",
    system_prompts::remove_particle => "system-prompts:write",
    system_prompts::compose => "system-prompts:read",
    usage::get_usage => "usage:read",
    artifacts::list_artifacts => "chats:read",
    artifacts::get_artifact => "chats:read",
    artifacts::get_artifact_content => "chats:read",
    files::upload_file => "files:write",
    files::bulk_delete_files => "files:delete",
    files::list_files => "files:read",
    files::get_file => "files:read",
    files::get_file_content => "files:read",
    files::delete_file => "files:delete",
    files::create_association => "files:write",
    files::delete_association => "files:write",
    datasets::create_dataset => "datasets:write",
    datasets::list_datasets => "datasets:read",
    datasets::get_dataset => "datasets:read",
    datasets::update_dataset => "datasets:write",
    datasets::delete_dataset => "datasets:delete",
    datasets::list_dataset_files => "datasets:read",
    datasets::create_snapshot => "datasets:write",
    datasets::list_snapshots => "datasets:read",
    datasets::search_dataset => "datasets:read",
    webhooks::create_webhook => "org:admin",
    webhooks::list_webhooks => "org:admin",
    webhooks::get_webhook => "org:admin",
    webhooks::delete_webhook => "org:admin",
    webhooks::list_deliveries => "org:admin",
    mcp_servers::create_mcp_server => "org:admin",
    mcp_servers::list_mcp_servers => "models:read",
    mcp_servers::get_mcp_server => "models:read",
    mcp_servers::update_mcp_server => "org:admin",
    mcp_servers::delete_mcp_server => "org:admin",
    mcp_servers::list_mcp_server_tools => "models:read",
    guardrails::get_policy => "org:admin",
    guardrails::put_policy => "org:admin",
    guardrails::delete_policy => "org:admin",
    guardrails::list_model_policies => "org:admin",
    guardrails::get_model_policy => "org:admin",
    guardrails::put_model_policy => "org:admin",
    guardrails::delete_model_policy => "org:admin",
    response_cache::list_policies => "org:admin",
    response_cache::get_policy => "org:admin",
    response_cache::put_policy => "org:admin",
    response_cache::delete_policy => "org:admin",
    openai::models::list_models => "models:read",
    openai::models::get_model => "models:read",
    openai::chat::create_chat_completion => "chats:invoke",
    openai::embeddings::create_embeddings => "chats:invoke",
    openai::responses::create_response => "chats:invoke",
    openai::responses::get_response => "chats:read",
    openai::responses::delete_response => "chats:delete",
    openai::responses::list_input_items => "chats:read",
    openai::responses::cancel_response => "chats:invoke",
    openai::files::create_file => "files:write",
    openai::files::list_files => "files:read",
    openai::files::retrieve_file => "files:read",
    openai::files::retrieve_file_content => "files:read",
    openai::files::delete_file => "files:delete",
    openai::vector_stores::create_vector_store => "datasets:write",
    openai::vector_stores::list_vector_stores => "datasets:read",
    openai::vector_stores::retrieve_vector_store => "datasets:read",
    openai::vector_stores::modify_vector_store => "datasets:write",
    openai::vector_stores::delete_vector_store => "datasets:delete",
    openai::vector_stores::search_vector_store => "datasets:read",
    openai::vector_stores::create_vector_store_file => "files:write",
    openai::vector_stores::list_vector_store_files => "datasets:read",
    openai::vector_stores::retrieve_vector_store_file => "datasets:read",
    openai::vector_stores::update_vector_store_file => "files:write",
    openai::vector_stores::retrieve_vector_store_file_content => "datasets:read",
    openai::vector_stores::delete_vector_store_file => "files:write",
    openai::file_batches::create_file_batch => "files:write",
    openai::file_batches::retrieve_file_batch => "datasets:read",
    openai::file_batches::cancel_file_batch => "files:write",
    openai::file_batches::list_file_batch_files => "datasets:read",
    openai::batches::create_batch => "chats:invoke",
    openai::batches::list_batches => "chats:read",
    openai::batches::retrieve_batch => "chats:read",
    openai::batches::cancel_batch => "chats:invoke",
    anthropic::models::list_models => "models:read",
    anthropic::models::get_model => "models:read",
    anthropic::messages::create_message => "chats:invoke",
    anthropic::messages::count_tokens => "chats:invoke",
    // Each MCP tool and resource checks the scope of its REST twin.
    crate::mcp_endpoint::mcp => authenticated,
}

/// The operations a handler serves (one per method of its route), read from its OpenAPI path.
fn operations_of<H: utoipa::Path>(access: Access) -> impl Iterator<Item = Operation> {
    let template = H::path();
    H::methods().into_iter().map(move |method| {
        let method = method_name(&method);
        Operation {
            method,
            span_name: format!("{method} {template}"),
            template: template.clone(),
            access,
        }
    })
}

fn method_name(method: &HttpMethod) -> &'static str {
    match method {
        HttpMethod::Get => "GET",
        HttpMethod::Post => "POST",
        HttpMethod::Put => "PUT",
        HttpMethod::Delete => "DELETE",
        HttpMethod::Options => "OPTIONS",
        HttpMethod::Head => "HEAD",
        HttpMethod::Patch => "PATCH",
        HttpMethod::Trace => "TRACE",
    }
}

/// Every documented operation, in routing order.
pub fn operations() -> &'static [Operation] {
    static OPERATIONS: LazyLock<Vec<Operation>> = LazyLock::new(table);
    &OPERATIONS
}
