-- API keys. Keep in step with migrations/postgres (same tables, same columns); the comments
-- there describe the columns.
CREATE TABLE api_keys (
    id                TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    name              TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    scopes            TEXT NOT NULL,
    secret_hash       TEXT NOT NULL CHECK (length(secret_hash) BETWEEN 1 AND 255),
    created_by        TEXT NOT NULL CHECK (length(created_by) BETWEEN 1 AND 255),
    expires_at        TIMESTAMP NULL,
    last_used_at      TIMESTAMP NULL,
    revoked_at        TIMESTAMP NULL,
    created_at        TIMESTAMP NOT NULL
);

CREATE UNIQUE INDEX api_keys_secret_hash_idx ON api_keys (secret_hash);
CREATE INDEX api_keys_organization_id_id_idx ON api_keys (organization_id, id)
    WHERE revoked_at IS NULL;
