-- Webhooks and their delivery outbox. Keep in step with migrations/postgres (same tables,
-- same columns); the comments there describe them.
CREATE TABLE webhooks (
    id                TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    url               TEXT NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    events            TEXT NOT NULL CHECK (length(events) BETWEEN 1 AND 200),
    description       TEXT NULL,
    secret            TEXT NOT NULL,
    created_by        TEXT NOT NULL CHECK (length(created_by) BETWEEN 1 AND 255),
    created_at        TIMESTAMP NOT NULL
);

CREATE INDEX webhooks_organization_id_id_idx ON webhooks (organization_id, id);

CREATE TABLE webhook_deliveries (
    id                TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    webhook_id        TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    event_id          TEXT NOT NULL,
    event             TEXT NOT NULL,
    body              TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts          INTEGER NOT NULL CHECK (attempts >= 0),
    next_attempt_at   TIMESTAMP NULL,
    leased_by         TEXT NULL,
    leased_until      TIMESTAMP NULL,
    last_status_code  INTEGER NULL,
    last_error        TEXT NULL,
    created_at        TIMESTAMP NOT NULL,
    delivered_at      TIMESTAMP NULL
);

CREATE INDEX webhook_deliveries_webhook_id_id_idx ON webhook_deliveries (webhook_id, id);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
