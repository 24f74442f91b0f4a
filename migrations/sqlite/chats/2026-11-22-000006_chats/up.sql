-- Chats and their messages. Keep in step with migrations/postgres (same tables, same
-- columns); the comments there describe the columns.
CREATE TABLE chats (
    id                TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    owner             TEXT NOT NULL CHECK (length(owner) BETWEEN 1 AND 255),
    model_id          TEXT NOT NULL CHECK (length(model_id) >= 1),
    base_model_id     TEXT NOT NULL CHECK (length(base_model_id) >= 1),
    system_prompt     TEXT NULL,
    system_prompt_id  TEXT NULL,
    title             TEXT NULL CHECK (length(title) <= 500),
    status            TEXT NULL CHECK (status IN ('generating', 'error')),
    error             TEXT NULL,
    deleted_at        TIMESTAMP NULL,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    -- Target of the messages' reference, which ties a message to its chat's organization.
    UNIQUE (id, organization_id)
);

-- Newest-first keyset listing of a principal's chats, and of the whole organization's.
CREATE INDEX chats_organization_id_owner_id_idx ON chats (organization_id, owner, id);
CREATE INDEX chats_organization_id_id_idx ON chats (organization_id, id);
-- Start-up recovery: WHERE status = 'generating'.
CREATE INDEX chats_generating_idx ON chats (id) WHERE status = 'generating';

-- Messages of a chat, numbered from 0 and unique per chat.
CREATE TABLE chat_messages (
    id                TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    chat_id           TEXT NOT NULL,
    organization_id   TEXT NOT NULL,
    sequence          INTEGER NOT NULL CHECK (sequence >= 0),
    role              TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content           TEXT NOT NULL,
    reasoning         TEXT NULL,
    tool_calls        TEXT NOT NULL,
    tool_call_id      TEXT NULL,
    sources           TEXT NOT NULL,
    input_tokens      BIGINT NULL CHECK (input_tokens >= 0),
    output_tokens     BIGINT NULL CHECK (output_tokens >= 0),
    reasoning_tokens  BIGINT NULL CHECK (reasoning_tokens >= 0),
    finish_reason     TEXT NULL,
    created_at        TIMESTAMP NOT NULL,
    UNIQUE (chat_id, sequence),
    CHECK ((input_tokens IS NULL) = (output_tokens IS NULL)
       AND (input_tokens IS NULL) = (reasoning_tokens IS NULL)
       AND (input_tokens IS NULL) = (finish_reason IS NULL)),
    FOREIGN KEY (chat_id, organization_id)
        REFERENCES chats (id, organization_id) ON DELETE CASCADE
);
