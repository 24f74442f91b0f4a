-- Batches and the answers of their lines. Keep in step with migrations/postgres (same
-- tables, same columns); the comments there describe them.
CREATE TABLE batches (
    id                TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    owner             TEXT NOT NULL,
    created_by        TEXT NOT NULL CHECK (length(created_by) BETWEEN 1 AND 255),
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
