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

-- Usage records may name an API key as their principal. SQLite cannot change a CHECK
-- constraint in place: the table is rebuilt with the same columns and indexes (nothing
-- references it).
CREATE TABLE usage_records_new (
    id                TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    principal         TEXT NOT NULL CHECK (length(principal) BETWEEN 1 AND 255),
    principal_kind    TEXT NOT NULL CHECK (principal_kind IN ('user', 'client', 'api_key')),
    chat_id           TEXT NOT NULL,
    message_id        TEXT NOT NULL UNIQUE,
    model_id          TEXT NOT NULL CHECK (length(model_id) >= 1),
    parent_model_id   TEXT NOT NULL CHECK (length(parent_model_id) >= 1),
    provider          TEXT NOT NULL,
    input_tokens      BIGINT NOT NULL CHECK (input_tokens >= 0),
    output_tokens     BIGINT NOT NULL CHECK (output_tokens >= 0),
    reasoning_tokens  BIGINT NOT NULL CHECK (reasoning_tokens >= 0),
    credits           BIGINT NOT NULL CHECK (credits >= 0),
    latency_ms        BIGINT NOT NULL CHECK (latency_ms >= 0),
    finish_reason     TEXT NOT NULL,
    created_at        TIMESTAMP NOT NULL
);
INSERT INTO usage_records_new SELECT * FROM usage_records;
DROP TABLE usage_records;
ALTER TABLE usage_records_new RENAME TO usage_records;
CREATE INDEX usage_records_organization_id_created_at_idx
    ON usage_records (organization_id, created_at);
CREATE INDEX usage_records_organization_id_chat_id_idx ON usage_records (organization_id, chat_id);
