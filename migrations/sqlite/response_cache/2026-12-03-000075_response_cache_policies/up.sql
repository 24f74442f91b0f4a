-- Response cache policies. Keep in step with migrations/postgres (same table, same columns);
-- the comments there describe the columns.
CREATE TABLE response_cache_policies (
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    model_id          TEXT NOT NULL CHECK (length(model_id) BETWEEN 1 AND 255),
    spec              TEXT NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    updated_by        TEXT NOT NULL CHECK (length(updated_by) BETWEEN 1 AND 255),
    PRIMARY KEY (organization_id, model_id)
);
