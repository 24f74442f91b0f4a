-- MCP servers of organizations (Streamable HTTP endpoints whose tools user models may call)
-- and which user models link which servers.
-- `header_names` is a JSON array of the names of the headers sent, in the order given (shown
-- to callers); `headers` holds the names and values sealed together (encrypted and
-- authenticated with the service's key: header values are secrets and never stored in
-- clear). `allowed_tools` is a JSON array of tool names, NULL when every tool may be offered.
-- `tools` is the JSON array of tools the server last listed, at `tools_fetched_at`; both are
-- NULL until it is asked. `created_by` is the principal that registered the server.
CREATE TABLE mcp_servers (
    id                TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    name              TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    url               TEXT NOT NULL CHECK (char_length(url) BETWEEN 1 AND 2048),
    header_names      TEXT NOT NULL,
    headers           BYTEA NOT NULL,
    allowed_tools     TEXT NULL,
    timeout_ms        INTEGER NOT NULL CHECK (timeout_ms > 0),
    tools             TEXT NULL,
    tools_fetched_at  TIMESTAMP NULL,
    created_by        TEXT NOT NULL CHECK (char_length(created_by) BETWEEN 1 AND 255),
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    CHECK ((tools IS NULL) = (tools_fetched_at IS NULL))
);

-- Tenant-scoped keyset listing, newest first: WHERE organization_id = ? AND id < ? ORDER BY
-- id DESC (ids are UUIDv7: they sort by creation).
CREATE INDEX mcp_servers_organization_id_id_idx ON mcp_servers (organization_id, id);

-- A link goes with its model or its server (the foreign keys' cascades; deleting a server
-- also deletes its links explicitly); all three belong to the link's organization.
CREATE TABLE model_mcp_servers (
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    model_id          TEXT NOT NULL REFERENCES user_models (id) ON DELETE CASCADE,
    server_id         TEXT NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    created_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (organization_id, model_id, server_id)
);

-- Deleting a server finds its links.
CREATE INDEX model_mcp_servers_server_id_idx ON model_mcp_servers (server_id);
