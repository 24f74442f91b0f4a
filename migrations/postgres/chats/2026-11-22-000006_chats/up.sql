-- Chats of an organization's principals (`owner`) and their messages. A chat keeps the
-- model snapshot it was created with: `model_id` (a user model id or a catalog base-model
-- id; neither has a foreign key, as the catalog is a file and a chat outlives its model),
-- `base_model_id`, the system prompt text and the id of the system prompt it was composed
-- from (a historical record: no foreign key, deleting the prompt changes no chat).
-- `status` is NULL while idle, 'generating' while a generation runs and 'error' when the
-- last one failed (`error` says why). Chats are deleted softly (`deleted_at`). Timestamps
-- are UTC in `timestamp` columns (docs/decisions/0003-one-diesel-store-for-both-databases.md).
CREATE TABLE chats (
    id                TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    owner             TEXT NOT NULL CHECK (char_length(owner) BETWEEN 1 AND 255),
    model_id          TEXT NOT NULL CHECK (char_length(model_id) >= 1),
    base_model_id     TEXT NOT NULL CHECK (char_length(base_model_id) >= 1),
    system_prompt     TEXT NULL,
    system_prompt_id  TEXT NULL,
    title             TEXT NULL CHECK (char_length(title) <= 500),
    status            TEXT NULL CHECK (status IN ('generating', 'error')),
    error             TEXT NULL,
    deleted_at        TIMESTAMP NULL,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    -- Target of the messages' reference, which ties a message to its chat's organization.
    UNIQUE (id, organization_id)
);

-- Newest-first keyset listing of a principal's chats:
-- WHERE organization_id = ? AND owner = ? AND id < ? ORDER BY id DESC.
CREATE INDEX chats_organization_id_owner_id_idx ON chats (organization_id, owner, id);
-- The same over the whole organization (the unique key leads with `id`, so it cannot serve).
CREATE INDEX chats_organization_id_id_idx ON chats (organization_id, id);
-- Start-up recovery: WHERE status = 'generating'.
CREATE INDEX chats_generating_idx ON chats (id) WHERE status = 'generating';

-- The messages of a chat, numbered from 0 (`sequence`, unique per chat: a second writer of
-- the same number fails). `tool_calls` is a JSON array of {id, name, arguments} and
-- `sources` a JSON array of retrieved passages, both serialized as text. The usage columns
-- (token counts and the finish reason: 'stop', 'length', 'tool_calls', 'content_filter' or
-- whatever else the provider reported) are set together, on assistant answers only.
-- Messages go with their chat.
CREATE TABLE chat_messages (
    id                TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
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
    -- Also serves reading a chat's messages in order: WHERE chat_id = ? ORDER BY sequence.
    UNIQUE (chat_id, sequence),
    CHECK ((input_tokens IS NULL) = (output_tokens IS NULL)
       AND (input_tokens IS NULL) = (reasoning_tokens IS NULL)
       AND (input_tokens IS NULL) = (finish_reason IS NULL)),
    FOREIGN KEY (chat_id, organization_id)
        REFERENCES chats (id, organization_id) ON DELETE CASCADE
);
