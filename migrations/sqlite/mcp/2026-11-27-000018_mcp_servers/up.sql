-- MCP servers and their links to user models. Keep in step with migrations/postgres (same
-- tables, same columns); the comments there describe the columns.
CREATE TABLE mcp_servers (
    id                TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    name              TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    url               TEXT NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    header_names      TEXT NOT NULL,
    headers           BLOB NOT NULL,
    allowed_tools     TEXT NULL,
    timeout_ms        INTEGER NOT NULL CHECK (timeout_ms > 0),
    tools             TEXT NULL,
    tools_fetched_at  TIMESTAMP NULL,
    created_by        TEXT NOT NULL CHECK (length(created_by) BETWEEN 1 AND 255),
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    CHECK ((tools IS NULL) = (tools_fetched_at IS NULL))
);

CREATE INDEX mcp_servers_organization_id_id_idx ON mcp_servers (organization_id, id);

CREATE TABLE model_mcp_servers (
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    model_id          TEXT NOT NULL REFERENCES user_models (id) ON DELETE CASCADE,
    server_id         TEXT NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    created_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (organization_id, model_id, server_id)
);

CREATE INDEX model_mcp_servers_server_id_idx ON model_mcp_servers (server_id);
