-- Guardrail policies: one per organization (`scope` 'organization', `model_id` '') and one
-- per model of it (`scope` 'model', `model_id` a catalog model's id or one of the
-- organization's own; no foreign key, as catalog models live in no table and a model's
-- policy may outlive its model until it is deleted). `spec` is the policy as written
-- (tessera_guardrails::PolicySpec as JSON text), checked before it was stored and compiled
-- again when read. `updated_by` is the actor that last wrote it.
CREATE TABLE guardrail_policies (
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    scope             TEXT NOT NULL CHECK (scope IN ('organization', 'model')),
    model_id          TEXT NOT NULL CHECK (char_length(model_id) <= 255),
    spec              TEXT NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    updated_by        TEXT NOT NULL CHECK (char_length(updated_by) BETWEEN 1 AND 255),
    PRIMARY KEY (organization_id, scope, model_id),
    CHECK ((scope = 'organization') = (model_id = ''))
);
