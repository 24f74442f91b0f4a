-- Guardrail policies. Keep in step with migrations/postgres (same table, same columns); the
-- comments there describe the columns.
CREATE TABLE guardrail_policies (
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    scope             TEXT NOT NULL CHECK (scope IN ('organization', 'model')),
    model_id          TEXT NOT NULL CHECK (length(model_id) <= 255),
    spec              TEXT NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    updated_by        TEXT NOT NULL CHECK (length(updated_by) BETWEEN 1 AND 255),
    PRIMARY KEY (organization_id, scope, model_id),
    CHECK ((scope = 'organization') = (model_id = ''))
);
