//! Tessera as an MCP server: `POST /mcp` speaks the Model Context Protocol (Streamable HTTP,
//! stateless, JSON responses) through rmcp's server, with the same bearer tokens, API keys,
//! scopes and tenancy as the REST API. Its tools (`tools`) and resources (`resources`) are
//! the REST operations' twins: each calls the same operation and checks the same scope, so
//! an answer here is the answer there. `route` hands actix's request to rmcp's tower
//! service with the caller attached (decision 0030).

mod invocation;
mod resources;
mod route;
mod server;
mod tools;

pub use route::mcp;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_checks_the_scope_of_its_rest_twin() {
        for tool in tools::TOOLS {
            let (method, path) = tool.twin;
            assert_eq!(
                crate::access::access_for(method, path),
                Some(crate::routes::Access::Scope(tool.scope)),
                "{}: {method} {path}",
                tool.name
            );
        }
    }
}
