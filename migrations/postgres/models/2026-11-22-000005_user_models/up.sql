-- Organizations' user models: a base model of the catalog (`parent_model_id`, a catalog id;
-- the catalog is a file, so there is no foreign key) with its own name, description,
-- system prompt and metadata. `system_prompt_id` names a system prompt composed for chats
-- (deleting the prompt detaches it: ON DELETE SET NULL); `system_prompt` is a full prompt
-- that bypasses composition. `metadata` is a JSON object serialized as text. Timestamps are
-- UTC in `timestamp` columns (docs/decisions/0003-one-diesel-store-for-both-databases.md).
CREATE TABLE user_models (
    id                TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    parent_model_id   TEXT NOT NULL CHECK (char_length(parent_model_id) >= 1),
    display_name      TEXT NOT NULL CHECK (char_length(display_name) BETWEEN 1 AND 255),
    description       TEXT NULL CHECK (char_length(description) <= 1000),
    system_prompt_id  TEXT NULL REFERENCES system_prompts (id) ON DELETE SET NULL,
    system_prompt     TEXT NULL CHECK (char_length(system_prompt) <= 32768),
    metadata          TEXT NOT NULL,
    enabled           BOOLEAN NOT NULL,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL
);

-- Tenant-scoped keyset listing: WHERE organization_id = ? AND id > ? ORDER BY id.
CREATE INDEX user_models_organization_id_id_idx ON user_models (organization_id, id);
-- Deleting a system prompt finds the models that use it (ON DELETE SET NULL).
CREATE INDEX user_models_system_prompt_id_idx
    ON user_models (system_prompt_id) WHERE system_prompt_id IS NOT NULL;
