CREATE TABLE usage_records_old (
    id                TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    principal         TEXT NOT NULL CHECK (length(principal) BETWEEN 1 AND 255),
    principal_kind    TEXT NOT NULL CHECK (principal_kind IN ('user', 'client')),
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
INSERT INTO usage_records_old SELECT * FROM usage_records WHERE principal_kind <> 'api_key';
DROP TABLE usage_records;
ALTER TABLE usage_records_old RENAME TO usage_records;
CREATE INDEX usage_records_organization_id_created_at_idx
    ON usage_records (organization_id, created_at);
CREATE INDEX usage_records_organization_id_chat_id_idx ON usage_records (organization_id, chat_id);
