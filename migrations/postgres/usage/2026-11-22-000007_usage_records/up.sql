-- One record per completion (docs/decisions/0011-usage-and-artifacts.md), written in the
-- transaction that stores the answer; also for a failed completion that consumed tokens
-- (`finish_reason` 'error'). `message_id` is the answer's id: unique, so a completion is
-- never billed twice. Records outlive chats and models (billing history): no foreign key
-- but the organization's. `principal` is the subject (user) or client id; `model_id` the
-- chat's model (user or catalog model) and `parent_model_id` the catalog model that served.
-- `credits` = (input + output tokens) × the base model's credit multiplier.
CREATE TABLE usage_records (
    id                TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    principal         TEXT NOT NULL CHECK (char_length(principal) BETWEEN 1 AND 255),
    principal_kind    TEXT NOT NULL CHECK (principal_kind IN ('user', 'client')),
    chat_id           TEXT NOT NULL,
    message_id        TEXT NOT NULL UNIQUE,
    model_id          TEXT NOT NULL CHECK (char_length(model_id) >= 1),
    parent_model_id   TEXT NOT NULL CHECK (char_length(parent_model_id) >= 1),
    provider          TEXT NOT NULL,
    input_tokens      BIGINT NOT NULL CHECK (input_tokens >= 0),
    output_tokens     BIGINT NOT NULL CHECK (output_tokens >= 0),
    reasoning_tokens  BIGINT NOT NULL CHECK (reasoning_tokens >= 0),
    credits           BIGINT NOT NULL CHECK (credits >= 0),
    latency_ms        BIGINT NOT NULL CHECK (latency_ms >= 0),
    finish_reason     TEXT NOT NULL,
    created_at        TIMESTAMP NOT NULL
);

-- Reports scan one organization's range of time: WHERE organization_id = ? AND created_at
-- >= ? AND created_at < ?, grouped by period, model and principal. The included columns
-- let that scan read the index alone.
CREATE INDEX usage_records_organization_id_created_at_idx
    ON usage_records (organization_id, created_at)
    INCLUDE (model_id, principal, input_tokens, output_tokens, reasoning_tokens, credits);
-- A chat's usage.
CREATE INDEX usage_records_organization_id_chat_id_idx ON usage_records (organization_id, chat_id);
