-- Organizations' user models. Keep in step with migrations/postgres (same tables, same
-- columns); the comments there describe the columns.
CREATE TABLE user_models (
    id                TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    parent_model_id   TEXT NOT NULL CHECK (length(parent_model_id) >= 1),
    display_name      TEXT NOT NULL CHECK (length(display_name) BETWEEN 1 AND 255),
    description       TEXT NULL CHECK (length(description) <= 1000),
    system_prompt_id  TEXT NULL REFERENCES system_prompts (id) ON DELETE SET NULL,
    system_prompt     TEXT NULL CHECK (length(system_prompt) <= 32768),
    metadata          TEXT NOT NULL,
    enabled           BOOLEAN NOT NULL CHECK (enabled IN (0, 1)),
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL
);

-- Tenant-scoped keyset listing: WHERE organization_id = ? AND id > ? ORDER BY id.
CREATE INDEX user_models_organization_id_id_idx ON user_models (organization_id, id);
-- Deleting a system prompt finds the models that use it (ON DELETE SET NULL).
CREATE INDEX user_models_system_prompt_id_idx
    ON user_models (system_prompt_id) WHERE system_prompt_id IS NOT NULL;
