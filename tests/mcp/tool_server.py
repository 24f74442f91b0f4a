"""A real MCP server for Tessera's tests, written with the official Python SDK (PyPI `mcp`,
its FastMCP-style `MCPServer`), serving Streamable HTTP on 127.0.0.1.

    python tool_server.py --port N [--page-size K]

Serves http://127.0.0.1:N/mcp (the port may also come from the PORT environment variable)
until killed. It prints "tool_server listening on http://127.0.0.1:N/mcp" on standard
output as it starts, and is ready once the port accepts connections. With
`--page-size K`, tools/list answers K tools a page with a `nextCursor` (the default: all
in one page). Run it with the Python of the venv made by `just test`
(~/.cache/tessera-venvs/mcp, from requirements.txt beside this file), which the tests get
in TESSERA_MCP_PYTHON.

Tools:
- add(a: int, b: int) -> int: the sum.
- weather(city: str) -> str: "It is 21 degrees and sunny in {city}."
- slow(seconds: float) -> str: sleeps that long, then answers "slept {seconds} seconds".
- hang() -> str: waits 60 seconds, then answers "done waiting" (a tool past its timeout).
- fail() -> never returns: raises ToolError, so the result is a tool error (isError: true)
  whose text contains "the tool failed on purpose".
- protocol_error() -> never returns: raises MCPError, so the server answers the call with a
  JSON-RPC error (code -32000, "a JSON-RPC error on purpose") rather than a result.
- whoami() -> str: the value of the request's X-Tenant-Key header ("" without one).
- bearer() -> str: the value of the request's Authorization header ("" without one).
"""

import argparse
import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import ListToolsResult


class PagedServer(MCPServer):
    """MCPServer whose tools/list answers `page_size` tools a page (0: all at once)."""

    def __init__(self, *args, page_size: int = 0, **kwargs):
        self.page_size = page_size
        super().__init__(*args, **kwargs)

    async def _handle_list_tools(self, ctx, params):
        tools = await self.list_tools()
        if self.page_size <= 0:
            return ListToolsResult(tools=tools)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + self.page_size
        return ListToolsResult(
            tools=tools[start:end],
            next_cursor=str(end) if end < len(tools) else None,
        )


def build(page_size: int) -> MCPServer:
    server = PagedServer("tessera-test-tools", page_size=page_size)

    @server.tool(description="Adds two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Today's weather in a city.")
    def weather(city: str) -> str:
        return f"It is 21 degrees and sunny in {city}."

    @server.tool(description="Sleeps for the given number of seconds, then answers.")
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"slept {seconds} seconds"

    @server.tool(description="Waits a minute before answering (takes no arguments).")
    async def hang() -> str:
        await asyncio.sleep(60)
        return "done waiting"

    @server.tool(description="Always fails.")
    def fail() -> str:
        # ToolError: a failure the tool anticipated, whose message the client sees (any
        # other exception reaches the client as "Error executing tool fail" only).
        raise ToolError("the tool failed on purpose")

    @server.tool(description="Answers with a JSON-RPC error instead of a result.")
    def protocol_error() -> str:
        raise MCPError(code=-32000, message="a JSON-RPC error on purpose")

    @server.tool(description="The X-Tenant-Key header the request carried.")
    def whoami(ctx: Context) -> str:
        return (ctx.headers or {}).get("x-tenant-key", "")

    @server.tool(description="The Authorization header the request carried.")
    def bearer(ctx: Context) -> str:
        return (ctx.headers or {}).get("authorization", "")

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "0")))
    parser.add_argument("--page-size", type=int, default=0)
    args = parser.parse_args()
    if not 0 < args.port < 65536:
        parser.error("give the port to listen on: --port N (or PORT=N)")
    server = build(args.page_size)
    print(f"tool_server listening on http://127.0.0.1:{args.port}/mcp", flush=True)
    server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    sys.exit(main())
