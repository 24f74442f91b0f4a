//! The resources of Tessera's MCP server: the organization's particles
//! (`tessera://particles/{id}`) and system prompts (`tessera://system-prompts/{id}`), each
//! read as its REST twin's JSON and only with that twin's scope.

use rmcp::model::{
    ErrorData, ListResourcesResult, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate,
};
use serde::Serialize;
use tessera_kernel::DomainError;
use tessera_prompts::{ParticleId, SystemPromptId};
use tessera_wire::v1::{particles::ParticleOut, system_prompts::SystemPromptOut};

use super::{invocation::Invocation, tools::allowed};
use crate::problem::{ApiError, ProblemKind};
use tessera_wire::parse::{page_limit, path_id};

const PARTICLES: &str = "tessera://particles/";
const SYSTEM_PROMPTS: &str = "tessera://system-prompts/";
const JSON: &str = "application/json";
/// Resources per `resources/list` page.
const PAGE_SIZE: i64 = 100;

/// The two kinds of resource, listed one after the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Particles,
    SystemPrompts,
}

impl Kind {
    fn scope(self) -> &'static str {
        match self {
            Kind::Particles => "particles:read",
            Kind::SystemPrompts => "system-prompts:read",
        }
    }

    /// The cursor prefix of this kind's pages.
    fn label(self) -> &'static str {
        match self {
            Kind::Particles => "particles",
            Kind::SystemPrompts => "system-prompts",
        }
    }
}

pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{PARTICLES}{{particle_id}}"), "particle")
            .with_title("A particle")
            .with_description(
                "A particle (a reusable system-prompt component) with its latest version, as \
                 GET /v1/particles/{particle_id} returns it; needs `particles:read`.",
            )
            .with_mime_type(JSON),
        ResourceTemplate::new(
            format!("{SYSTEM_PROMPTS}{{system_prompt_id}}"),
            "system-prompt",
        )
        .with_title("A system prompt")
        .with_description(
            "A system prompt with its particles, as GET /v1/system-prompts/{id}?expand[]=\
                 particles returns it; needs `system-prompts:read`.",
        )
        .with_mime_type(JSON),
    ]
}

/// One page of the resources the caller may read: particles first, then system prompts.
pub async fn list(
    invocation: &Invocation,
    cursor: Option<&str>,
) -> Result<ListResourcesResult, ErrorData> {
    let caller = &invocation.caller;
    let readable = |kind: Kind| allowed(caller, kind.scope());
    let (kind, inner) = match cursor {
        None => match [Kind::Particles, Kind::SystemPrompts]
            .into_iter()
            .find(|kind| readable(*kind))
        {
            Some(kind) => (kind, None),
            None => return Ok(ListResourcesResult::default()),
        },
        Some(cursor) => parse_cursor(cursor)?,
    };
    if !readable(kind) {
        return Err(refused(kind));
    }
    let organization = caller.organization();
    let prompts = &invocation.state.prompts;
    let limit = page_limit(Some(PAGE_SIZE)).map_err(error_data)?;
    let (resources, next) = match kind {
        Kind::Particles => {
            let page = prompts
                .list_particles(organization, false, None, limit, inner)
                .await
                .map_err(|e| error_data(DomainError::from(e)))?;
            let next = page.next_cursor.as_ref().map(|c| c.as_str().to_owned());
            let resources = page
                .items
                .into_iter()
                .map(|particle| {
                    let out = ParticleOut::from(particle);
                    Resource::new(format!("{PARTICLES}{}", out.id), out.name)
                        .with_description(out.description)
                        .with_mime_type(JSON)
                })
                .collect();
            (resources, next)
        }
        Kind::SystemPrompts => {
            let page = prompts
                .list_system_prompts(organization, false, limit, inner)
                .await
                .map_err(|e| error_data(DomainError::from(e)))?;
            let next = page.next_cursor.as_ref().map(|c| c.as_str().to_owned());
            let resources = page
                .items
                .into_iter()
                .map(|view| {
                    let out = SystemPromptOut::from(view, false);
                    Resource::new(format!("{SYSTEM_PROMPTS}{}", out.id), out.name)
                        .with_description(out.description)
                        .with_mime_type(JSON)
                })
                .collect();
            (resources, next)
        }
    };
    let next_cursor = match (next, kind) {
        (Some(next), kind) => Some(format!("{}:{next}", kind.label())),
        (None, Kind::Particles) if readable(Kind::SystemPrompts) => {
            Some(format!("{}:", Kind::SystemPrompts.label()))
        }
        (None, _) => None,
    };
    let mut result = ListResourcesResult::with_all_items(resources);
    result.next_cursor = next_cursor;
    Ok(result)
}

/// A cursor of `resources/list`: the kind, then that kind's own cursor (empty: its start).
fn parse_cursor(cursor: &str) -> Result<(Kind, Option<&str>), ErrorData> {
    let (label, inner) = cursor
        .split_once(':')
        .ok_or_else(|| ErrorData::invalid_params("invalid cursor", None))?;
    let kind = [Kind::Particles, Kind::SystemPrompts]
        .into_iter()
        .find(|kind| kind.label() == label)
        .ok_or_else(|| ErrorData::invalid_params("invalid cursor", None))?;
    Ok((kind, Some(inner).filter(|inner| !inner.is_empty())))
}

/// Reads one particle or system prompt of the caller's organization.
pub async fn read(invocation: &Invocation, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let organization = &invocation.caller.organization();
    let prompts = &invocation.state.prompts;
    let (kind, id) = if let Some(id) = uri.strip_prefix(PARTICLES) {
        (Kind::Particles, id)
    } else if let Some(id) = uri.strip_prefix(SYSTEM_PROMPTS) {
        (Kind::SystemPrompts, id)
    } else {
        return Err(ErrorData::resource_not_found(
            format!("no resource `{uri}`"),
            None,
        ));
    };
    if !allowed(&invocation.caller, kind.scope()) {
        return Err(refused(kind));
    }
    let text = match kind {
        Kind::Particles => {
            let id: ParticleId = path_id(id, "particle").map_err(error_data)?;
            let particle = prompts
                .get_particle(organization, &id)
                .await
                .map_err(|e| error_data(DomainError::from(e)))?;
            json_text(&ParticleOut::from(particle))?
        }
        Kind::SystemPrompts => {
            let id: SystemPromptId = path_id(id, "system prompt").map_err(error_data)?;
            let view = prompts
                .get_system_prompt(organization, &id)
                .await
                .map_err(|e| error_data(DomainError::from(e)))?;
            json_text(&SystemPromptOut::from(view, true))?
        }
    };
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type(JSON),
    ]))
}

fn json_text(body: &impl Serialize) -> Result<String, ErrorData> {
    serde_json::to_string_pretty(body).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

fn refused(kind: Kind) -> ErrorData {
    error_data(ApiError::forbidden(
        "insufficient_scope",
        format!(
            "reading {} needs the `{}` scope",
            kind.label(),
            kind.scope()
        ),
    ))
}

/// A REST problem as a JSON-RPC error, the problem itself as its data: a missing record is
/// MCP's "resource not found", a refusal or bad parameter an invalid request.
fn error_data(problem: impl Into<ApiError>) -> ErrorData {
    let problem: ApiError = problem.into();
    let message = match &problem.detail {
        crate::problem::ProblemDetail::Text(text) => text.clone(),
        crate::problem::ProblemDetail::Fields(_) => "invalid parameters".to_owned(),
    };
    let data = Some(problem.body());
    match problem.kind {
        ProblemKind::NotFound => ErrorData::resource_not_found(message, data),
        ProblemKind::Forbidden => ErrorData::invalid_request(message, data),
        ProblemKind::ValidationFailed => ErrorData::invalid_params(message, data),
        _ => ErrorData::internal_error(message, data),
    }
}
