-- Idempotency keys of POST requests. Keep in step with migrations/postgres.
CREATE TABLE idempotency_keys (
    organization_id   TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    principal         TEXT NOT NULL CHECK (length(principal) BETWEEN 1 AND 255),
    idempotency_key   TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    fingerprint       TEXT NOT NULL,
    response_status   INTEGER NULL,
    response_headers  TEXT NULL,
    response_body     BLOB NULL,
    created_at        TIMESTAMP NOT NULL,
    expires_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (organization_id, principal, idempotency_key)
);

CREATE INDEX idempotency_keys_expires_at_idx ON idempotency_keys (expires_at);
