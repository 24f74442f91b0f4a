//! MCP servers of the caller's organization: register Streamable HTTP endpoints whose tools
//! models may call during completions, list what each offers, and link them to models. Its
//! bodies are `tessera_wire::v1::mcp_servers`.

use std::collections::BTreeMap;

use actix_web::{HttpResponse, delete, get, http::header, patch, post, web};
use tessera_kernel::DomainError;
use tessera_mcp::{McpServerId, McpServerPatch, NewMcpServer};
use tessera_models::ModelId;
use tessera_wire::page::{PageOf, PageQuery};
use tessera_wire::v1::mcp_servers::{
    CreateMcpServer, CreateToolLink, McpServerOut, McpServerPage, McpToolList, McpToolOut,
    ToolLinkList, ToolLinkOut, ToolsQuery, UpdateMcpServer,
};

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};
use tessera_wire::parse::{page_limit, path_id};

fn server_id(text: &str) -> Result<McpServerId, DomainError> {
    path_id(text, "MCP server")
}

fn headers(map: BTreeMap<String, String>) -> Vec<(String, String)> {
    map.into_iter().collect()
}

/// Register an MCP server; its tools are listed when first asked for or used.
#[utoipa::path(
    tag = "MCP servers",
    operation_id = "createMcpServer",
    request_body = CreateMcpServer,
    responses(
        (status = 201, description = "Registered", body = McpServerOut),
        (status = 409, description = "The organization has the most MCP servers it may have", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid name, URL, header, tool name or timeout", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/mcp-servers")]
pub async fn create_mcp_server(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateMcpServer>,
) -> Result<HttpResponse, ApiError> {
    let server = state
        .mcp
        .create(
            caller.organization(),
            caller.actor(),
            NewMcpServer {
                name: body.name,
                url: body.url,
                headers: headers(body.headers),
                allowed_tools: body.allowed_tools,
                timeout_ms: body.timeout_ms,
            },
        )
        .await?;
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/v1/mcp-servers/{}", server.id)))
        .json(McpServerOut::from(server)))
}

/// List the organization's MCP servers, newest first.
#[utoipa::path(
    tag = "MCP servers",
    operation_id = "listMcpServers",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of MCP servers", body = McpServerPage),
        (status = 422, description = "Invalid limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/mcp-servers")]
pub async fn list_mcp_servers(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<PageQuery>,
) -> Result<web::Json<McpServerPage>, ApiError> {
    let page = state
        .mcp
        .list(
            caller.organization(),
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await?;
    Ok(web::Json(PageOf::of(page, McpServerOut::from)))
}

/// One MCP server of the organization.
#[utoipa::path(
    tag = "MCP servers",
    operation_id = "getMcpServer",
    params(("server_id" = String, Path, description = "The MCP server id")),
    responses(
        (status = 200, description = "The MCP server", body = McpServerOut),
        (status = 404, description = "No such MCP server in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/mcp-servers/{server_id}")]
pub async fn get_mcp_server(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<McpServerOut>, ApiError> {
    let server = state
        .mcp
        .get(caller.organization(), &server_id(&path)?)
        .await?;
    Ok(web::Json(McpServerOut::from(server)))
}

/// Change an MCP server.
#[utoipa::path(
    tag = "MCP servers",
    operation_id = "updateMcpServer",
    params(("server_id" = String, Path, description = "The MCP server id")),
    request_body = UpdateMcpServer,
    responses(
        (status = 200, description = "Changed", body = McpServerOut),
        (status = 404, description = "No such MCP server in this organization", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Other changes to the server kept coming first (`mcp_server_changed`); send the change again", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid name, URL, header, tool name or timeout", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[patch("/v1/mcp-servers/{server_id}")]
pub async fn update_mcp_server(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<UpdateMcpServer>,
) -> Result<web::Json<McpServerOut>, ApiError> {
    let server = state
        .mcp
        .update(
            caller.organization(),
            caller.actor(),
            &server_id(&path)?,
            McpServerPatch {
                name: body.name,
                url: body.url,
                headers: body.headers.map(headers),
                allowed_tools: body.allowed_tools,
                timeout_ms: body.timeout_ms,
            },
        )
        .await?;
    Ok(web::Json(McpServerOut::from(server)))
}

/// Delete an MCP server; models that linked it no longer offer its tools.
#[utoipa::path(
    tag = "MCP servers",
    operation_id = "deleteMcpServer",
    params(("server_id" = String, Path, description = "The MCP server id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such MCP server in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/mcp-servers/{server_id}")]
pub async fn delete_mcp_server(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .mcp
        .delete(caller.organization(), caller.actor(), &server_id(&path)?)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The tools the server offers models: from the last listing, or asked now with
/// `refresh=true` (or when never listed).
#[utoipa::path(
    tag = "MCP servers",
    operation_id = "listMcpServerTools",
    params(("server_id" = String, Path, description = "The MCP server id"), ToolsQuery),
    responses(
        (status = 200, description = "The tools, the allow-list applied", body = McpToolList),
        (status = 404, description = "No such MCP server in this organization", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The server could not be reached or did not answer as an MCP server", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/mcp-servers/{server_id}/tools")]
pub async fn list_mcp_server_tools(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidQuery(query): ValidQuery<ToolsQuery>,
) -> Result<web::Json<McpToolList>, ApiError> {
    let listed = state
        .mcp
        .tools(
            caller.organization(),
            &server_id(&path)?,
            query.refresh.unwrap_or(false),
        )
        .await?;
    Ok(web::Json(McpToolList {
        items: listed.tools.into_iter().map(McpToolOut::from).collect(),
        fetched_at: listed.fetched_at,
    }))
}

/// The user model the path names (the MCP domain finds it in the organization, or 404s).
fn model_id(text: &str) -> Result<ModelId, DomainError> {
    path_id(text, "model")
}

/// Link an MCP server to a model: its tools are offered in the model's completions.
#[utoipa::path(
    tag = "Models",
    operation_id = "createModelToolLink",
    params(("model_id" = String, Path, description = "The model id (an organization's model)")),
    request_body = CreateToolLink,
    responses(
        (status = 201, description = "Linked", body = ToolLinkOut),
        (status = 200, description = "Already linked", body = ToolLinkOut),
        (status = 404, description = "No such model or MCP server in this organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/models/{model_id}/tools")]
pub async fn link_tools(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<CreateToolLink>,
) -> Result<HttpResponse, ApiError> {
    let model = model_id(&path)?;
    let server = server_id(&body.mcp_server_id)?;
    let (link, created) = state
        .mcp
        .link(
            caller.organization(),
            caller.actor(),
            model.as_str(),
            &server,
        )
        .await?;
    let location = format!("/v1/models/{model}/tools/{server}");
    let out = ToolLinkOut::from(link);
    Ok(if created {
        HttpResponse::Created()
            .insert_header((header::LOCATION, location))
            .json(out)
    } else {
        HttpResponse::Ok().json(out)
    })
}

/// The MCP servers linked to a model.
#[utoipa::path(
    tag = "Models",
    operation_id = "listModelToolLinks",
    params(("model_id" = String, Path, description = "The model id")),
    responses(
        (status = 200, description = "The links, oldest first", body = ToolLinkList),
        (status = 404, description = "No such model in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/models/{model_id}/tools")]
pub async fn list_tool_links(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ToolLinkList>, ApiError> {
    let model = model_id(&path)?;
    let links = state
        .mcp
        .links(caller.organization(), model.as_str())
        .await?;
    Ok(web::Json(
        links.into_iter().map(ToolLinkOut::from).collect(),
    ))
}

/// Unlink an MCP server from a model (the server stays).
#[utoipa::path(
    tag = "Models",
    operation_id = "deleteModelToolLink",
    params(
        ("model_id" = String, Path, description = "The model id"),
        ("server_id" = String, Path, description = "The linked MCP server's id")
    ),
    responses(
        (status = 204, description = "Unlinked"),
        (status = 404, description = "No such model, or the server is not linked to it", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/models/{model_id}/tools/{server_id}")]
pub async fn unlink_tools(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (model, server) = path.into_inner();
    let model = model_id(&model)?;
    state
        .mcp
        .unlink(
            caller.organization(),
            caller.actor(),
            model.as_str(),
            &server_id(&server)?,
        )
        .await?;
    Ok(HttpResponse::NoContent().finish())
}
