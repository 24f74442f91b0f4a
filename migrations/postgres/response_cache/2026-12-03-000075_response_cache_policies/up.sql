-- Response cache policies: at most one per organization and model (`model_id` a catalog
-- model's id or one of the organization's own; no foreign key, as catalog models live in no
-- table and a policy may outlive its model until it is deleted). `spec` is the policy as
-- written (tessera_response_cache::CachePolicySpec as JSON text), checked before it was
-- stored. `updated_by` is the actor that last wrote it.
CREATE TABLE response_cache_policies (
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    model_id          TEXT NOT NULL CHECK (char_length(model_id) BETWEEN 1 AND 255),
    spec              TEXT NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    updated_by        TEXT NOT NULL CHECK (char_length(updated_by) BETWEEN 1 AND 255),
    PRIMARY KEY (organization_id, model_id)
);
