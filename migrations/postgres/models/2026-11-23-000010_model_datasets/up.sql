-- Datasets linked to user models (`rag`: searched per question; `context`: read whole).
-- A link goes with its model or its dataset; both belong to the link's organization.
CREATE TABLE model_datasets (
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    model_id          TEXT NOT NULL REFERENCES user_models (id) ON DELETE CASCADE,
    dataset_id        TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    usage_type        TEXT NOT NULL CHECK (usage_type IN ('rag', 'context')),
    created_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (model_id, dataset_id)
);

CREATE INDEX model_datasets_dataset_id_idx ON model_datasets (dataset_id);
