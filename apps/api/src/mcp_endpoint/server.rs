//! The MCP server handler: who is calling (from the request rmcp hands over), then the
//! tools and resources that caller may use.

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};

use super::{invocation::Invocation, resources, tools};

/// Tessera's MCP server; stateless, one per request.
#[derive(Debug, Clone, Copy)]
pub struct TesseraServer;

/// The invocation of the request being handled (absent only if the route was bypassed).
fn invocation(context: &RequestContext<RoleServer>) -> Result<Invocation, ErrorData> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Invocation>())
        .cloned()
        .ok_or_else(|| ErrorData::internal_error("the request carries no caller", None))
}

impl ServerHandler for TesseraServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(
            Implementation::new("tessera", env!("CARGO_PKG_VERSION")).with_title("Tessera"),
        )
        .with_instructions(
            "Tessera's knowledge, prompts, models and usage for one organization. Tools list \
             and search datasets, list files, compose system prompts, ask the organization's \
             models and read usage; resources are its particles and system prompts. What a \
             token may use follows its scopes.",
        )
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::find(name).map(tools::ToolDef::describe)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let invocation = invocation(&context)?;
        Ok(ListToolsResult::with_all_items(
            tools::TOOLS
                .iter()
                .filter(|tool| tools::allowed(&invocation.caller, tool.scope))
                .map(tools::ToolDef::describe)
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let invocation = invocation(&context)?;
        let Some(tool) = tools::find(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        };
        let arguments = request.arguments.unwrap_or_default();
        // Refusals and failures are the tool's result (the caller's model reads them), in the
        // REST twin's problem shape: status, code, detail.
        let result = match tools::run(tool, &invocation, arguments).await {
            Ok(value) => CallToolResult::structured(value),
            Err(problem) => CallToolResult::structured_error(problem.body()),
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let invocation = invocation(&context)?;
        let cursor = request.and_then(|r| r.cursor);
        resources::list(&invocation, cursor.as_deref()).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let invocation = invocation(&context)?;
        Ok(resources::read(&invocation, &request.uri).await?.into())
    }
}
