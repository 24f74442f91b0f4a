-- Idempotency keys of POST requests, per principal of an organization. A row without
-- `response_status` is a request still running; `response_body` is NULL when the response
-- carried a secret and was deliberately not stored. `response_headers` holds the replayed
-- headers as `name: value` lines. Rows are deleted after `expires_at`.
CREATE TABLE idempotency_keys (
    organization_id   TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    principal         TEXT NOT NULL CHECK (char_length(principal) BETWEEN 1 AND 255),
    idempotency_key   TEXT NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    fingerprint       TEXT NOT NULL,
    response_status   INTEGER NULL,
    response_headers  TEXT NULL,
    response_body     BYTEA NULL,
    created_at        TIMESTAMP NOT NULL,
    expires_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (organization_id, principal, idempotency_key)
);

-- The purge: DELETE … WHERE expires_at < now.
CREATE INDEX idempotency_keys_expires_at_idx ON idempotency_keys (expires_at);
