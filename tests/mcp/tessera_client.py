"""Drives Tessera's own MCP endpoint with the official MCP Python client.

`ClientSession` over `streamable_http_client`, the bearer credential in the HTTP client's
headers, exactly as an MCP host would connect. The steps come as JSON in argv[1] (a list of
`{"op": "tools"}`, `{"op": "call", "tool": ..., "arguments": {...}}`, `{"op": "resources"}`,
`{"op": "templates"}`, `{"op": "read", "uri": ...}`); every step's result (or protocol error)
is printed as one JSON list, for the Rust test to check.

Environment: TESSERA_MCP_URL (…/mcp), TESSERA_TOKEN (an API key or access token), and
SSL_CERT_FILE (the dev certificate, which httpx2 trusts through it).
"""

import asyncio
import json
import os
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


def dump(result):
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def step(session, spec):
    op = spec["op"]
    if op == "tools":
        return dump(await session.list_tools())
    if op == "call":
        return dump(await session.call_tool(spec["tool"], spec.get("arguments", {})))
    if op == "resources":
        resources, cursor, pages = [], None, 0
        while True:
            params = {"cursor": cursor} if cursor else None
            page = await session.list_resources(params=params)
            resources.extend(dump(r) for r in page.resources)
            pages += 1
            cursor = page.next_cursor
            if not cursor:
                return {"resources": resources, "pages": pages}
    if op == "templates":
        return dump(await session.list_resource_templates())
    if op == "read":
        return dump(await session.read_resource(spec["uri"]))
    raise ValueError(f"unknown step {op}")


async def main():
    steps = json.loads(sys.argv[1])
    headers = {"Authorization": f"Bearer {os.environ['TESSERA_TOKEN']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        async with streamable_http_client(os.environ["TESSERA_MCP_URL"], http_client=http) as (
            read,
            write,
        ):
            async with ClientSession(read, write) as session:
                info = await session.initialize()
                results = [{"server": dump(info)}]
                for spec in steps:
                    try:
                        results.append(await step(session, spec))
                    except MCPError as error:
                        results.append(
                            {"error": {"code": error.code, "message": error.message, "data": error.data}}
                        )
    print(json.dumps(results))


asyncio.run(main())
