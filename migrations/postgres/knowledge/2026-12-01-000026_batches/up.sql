-- Batches (OpenAI's Batch API): an input file of JSON lines run against one endpoint as
-- its owner (`owner`, the principal as JSON, without its request origin), within a window.
-- Files are referred to by id without a foreign key: the input file may be deleted while
-- the batch is kept. `errors` is a JSON array of the input's refused lines ({code,
-- message, param, line}). Runners claim active batches whose lease (`leased_until`) is
-- free or has lapsed with FOR UPDATE SKIP LOCKED. `batch_results` keeps each line's answer
-- as it arrives (once per line), until the batch ends and its files hold them.
CREATE TABLE batches (
    id                TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    owner             TEXT NOT NULL,
    created_by        TEXT NOT NULL CHECK (char_length(created_by) BETWEEN 1 AND 255),
    endpoint          TEXT NOT NULL,
    input_file_id     TEXT NOT NULL,
    completion_window TEXT NOT NULL,
    metadata          TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('validating', 'failed', 'in_progress', 'finalizing', 'completed', 'expired', 'cancelling', 'cancelled')),
    errors            TEXT NOT NULL,
    output_file_id    TEXT NULL,
    error_file_id     TEXT NULL,
    total             INTEGER NOT NULL CHECK (total >= 0),
    completed         INTEGER NOT NULL CHECK (completed >= 0),
    failed            INTEGER NOT NULL CHECK (failed >= 0),
    created_at        TIMESTAMP NOT NULL,
    in_progress_at    TIMESTAMP NULL,
    expires_at        TIMESTAMP NOT NULL,
    finalizing_at     TIMESTAMP NULL,
    completed_at      TIMESTAMP NULL,
    failed_at         TIMESTAMP NULL,
    expired_at        TIMESTAMP NULL,
    cancelling_at     TIMESTAMP NULL,
    cancelled_at      TIMESTAMP NULL,
    leased_by         TEXT NULL,
    leased_until      TIMESTAMP NULL
);

CREATE INDEX batches_organization_id_id_idx ON batches (organization_id, id);
-- What runners claim: the few batches still active.
CREATE INDEX batches_active_id_idx ON batches (id)
    WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling');

CREATE TABLE batch_results (
    batch_id          TEXT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    line              INTEGER NOT NULL CHECK (line >= 0),
    custom_id         TEXT NOT NULL,
    request_id        TEXT NOT NULL,
    status_code       INTEGER NULL,
    body              TEXT NOT NULL,
    PRIMARY KEY (batch_id, line)
);
