-- Long-lived API keys (`tsk_…`) of organizations (docs/decisions/0024-api-keys.md). Only the
-- HMAC-SHA256 of a secret under the server's `api_key_secret` is kept (64 hex digits), and a
-- presented key is looked up by it: unique. `scopes` is the canonical space-separated scope
-- list; `created_by` the principal (or operator) that created the key. A revoked key keeps
-- its row (usage records name it as their principal) but is neither listed nor accepted.
-- `last_used_at` is written at most once a minute per key.
CREATE TABLE api_keys (
    id                TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    name              TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    scopes            TEXT NOT NULL,
    secret_hash       TEXT NOT NULL CHECK (char_length(secret_hash) BETWEEN 1 AND 255),
    created_by        TEXT NOT NULL CHECK (char_length(created_by) BETWEEN 1 AND 255),
    expires_at        TIMESTAMP NULL,
    last_used_at      TIMESTAMP NULL,
    revoked_at        TIMESTAMP NULL,
    created_at        TIMESTAMP NOT NULL
);

-- Authentication: WHERE secret_hash = ? (every request with a key).
CREATE UNIQUE INDEX api_keys_secret_hash_idx ON api_keys (secret_hash);
-- Tenant-scoped keyset listing of active keys: WHERE organization_id = ? AND revoked_at IS
-- NULL AND id > ? ORDER BY id.
CREATE INDEX api_keys_organization_id_id_idx ON api_keys (organization_id, id)
    WHERE revoked_at IS NULL;
