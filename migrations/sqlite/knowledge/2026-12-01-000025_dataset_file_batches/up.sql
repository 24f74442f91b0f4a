-- Files added to a dataset together (OpenAI's vector store file batches, issue 64): the
-- files as a JSON array of ids, and when the batch was cancelled (its files still
-- processing then were taken out of the dataset).
CREATE TABLE dataset_file_batches (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    dataset_id TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    file_ids TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    cancelled_at TIMESTAMP
);
CREATE INDEX dataset_file_batches_dataset ON dataset_file_batches (dataset_id);
