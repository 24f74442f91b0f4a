-- Split from `2026-11-22-000007_usage_and_artifacts` when each domain got its own migrations
-- (docs/decisions/0035-storage-per-domain.md): a database that ran that migration has this
-- table already, hence IF NOT EXISTS.
-- Rich content found in assistant messages: `kind` markdown, code (with `language`), html,
-- svg or mermaid. `identifier` names the artifact within its chat; each later message
-- revising it adds a `version`. `owner` copies the chat's owner: an artifact is visible to
-- whoever sees its chat. Artifacts go with their chat.
CREATE TABLE IF NOT EXISTS artifacts (
    id                TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL,
    owner             TEXT NOT NULL CHECK (char_length(owner) BETWEEN 1 AND 255),
    chat_id           TEXT NOT NULL,
    message_id        TEXT NOT NULL REFERENCES chat_messages (id) ON DELETE CASCADE,
    kind              TEXT NOT NULL CHECK (kind IN ('markdown', 'code', 'html', 'svg', 'mermaid')),
    language          TEXT NULL,
    title             TEXT NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    identifier        TEXT NOT NULL CHECK (char_length(identifier) BETWEEN 1 AND 100),
    version           INTEGER NOT NULL CHECK (version >= 1),
    content           TEXT NOT NULL,
    created_at        TIMESTAMP NOT NULL,
    UNIQUE (chat_id, identifier, version),
    FOREIGN KEY (chat_id, organization_id)
        REFERENCES chats (id, organization_id) ON DELETE CASCADE
);

-- Newest-first keyset listings: a principal's, a chat's, the organization's.
CREATE INDEX IF NOT EXISTS artifacts_organization_id_owner_id_idx ON artifacts (organization_id, owner, id);
CREATE INDEX IF NOT EXISTS artifacts_organization_id_chat_id_id_idx ON artifacts (organization_id, chat_id, id);
CREATE INDEX IF NOT EXISTS artifacts_organization_id_id_idx ON artifacts (organization_id, id);
